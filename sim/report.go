package sim

import (
	"fmt"
	"sort"
	"strings"

	"narad/chaos"
)

// Report is what one run did and found.
type Report struct {
	Seed        uint64
	Profile     string
	TraceHash   uint64
	Events      int
	SimMs       int64
	WallSeconds float64
	accounting
	// Faults injected, by kind, sorted by kind.
	Faults []chaos.Count
	// Marks are the coverage marks the core reached, sorted by name.
	Marks []chaos.Count
	// LogOperations were checked by porcupine with result LogResult.
	LogOperations int
	LogResult     string
	// Failure is the first checker that failed, nil for a clean run.
	Failure *Failure
	// TraceTail holds the last trace lines, for a failure report.
	TraceTail []string
}

func (w *World) report() Report {
	faults := make([]chaos.Count, 0, len(w.faults))
	for kind, count := range w.faults { //determinism:ok sorted below
		faults = append(faults, chaos.Count{Name: kind, Count: count})
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].Name < faults[j].Name })
	return Report{
		Seed: w.opts.Seed, Profile: w.opts.Faults.Name, TraceHash: w.trace.sum(), Events: w.trace.events,
		SimMs: w.nowMs, accounting: w.history.account(), Faults: faults, Marks: chaos.Marks(),
		LogOperations: w.logOperations, LogResult: w.logResult, Failure: w.failure, TraceTail: w.trace.last(),
	}
}

// Summary is the one-line account of a run.
func (r Report) Summary() string {
	status := "ok"
	if r.Failure != nil {
		status = "FAIL " + r.Failure.Checker
	}
	return fmt.Sprintf("seed=%d profile=%s %s acked=%d delivered=%d lost=%d duplicated=%d unexpected=%d recovered=%d log_ops=%d log=%s faults=[%s] marks=%d sim_s=%.1f wall_s=%.2f trace-hash=%016x",
		r.Seed, r.Profile, status, r.Acked, r.Delivered, r.Lost, r.Duplicated, r.Unexpected, r.Recovered,
		r.LogOperations, r.LogResult, countsString(r.Faults), len(r.Marks), float64(r.SimMs)/1000, r.WallSeconds, r.TraceHash)
}

// FailureText is the full account of a failed run: the checker, the last
// events and the command that reproduces it.
func (r Report) FailureText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d failed: %v\n", r.Seed, r.Failure)
	fmt.Fprintf(&b, "last %d events:\n", len(r.TraceTail))
	for _, line := range r.TraceTail {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "reproduce: go test ./sim -run 'TestSim$' -seed=%d -faults=%s -v\n", r.Seed, r.Profile)
	return b.String()
}

func countsString(counts []chaos.Count) string {
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Count)
	}
	return strings.Join(parts, " ")
}

func formatHash(hash uint64) string { return fmt.Sprintf("%016x", hash) }
