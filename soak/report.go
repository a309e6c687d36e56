package soak

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"narad/proc"
)

// Report is the outcome of a run: what the load did, what the audit found,
// what each step did, what the nodes logged, and the failures.
type Report struct {
	Scenario string
	Seed     uint64
	// Nodes is the node count at the start; Dir the run directory.
	Nodes int
	Dir   string
	// Elapsed is the whole run; Faults the part spent in the steps;
	// Producing the time the producers ran; DrainTook the consumers'
	// final drain.
	Elapsed, Faults, Producing, DrainTook time.Duration
	// Attempted counts the distinct records sent; Load the request totals.
	Attempted int
	Load      LoadCounters
	// LoadProblems quotes unexpected answers the load saw; Refusals the
	// first refusals of each status.
	LoadProblems []string
	Refusals     map[int][]string
	Audit        AuditResult
	// Delivered counts the acknowledged records consumers saw at least
	// once; Deliveries every delivery; Redelivered the records delivered
	// more than once; UnknownDeliveries payloads with no soak id.
	Delivered, Deliveries, Redelivered, UnknownDeliveries int
	// Undelivered lists the acknowledged records no consumer saw.
	Undelivered []string
	Logs        LogSummary
	Steps       []StepResult
	Forced      []ForcedOutcome
	// Placement is the partitions per member before the audit.
	Placement map[string]int
	// Notes are remarks that are not failures; Failures make the run fail.
	Notes    []string
	Failures []string
	// forcedSkipNoted is set once the skipped forced recovery was noted.
	forcedSkipNoted bool
}

// Failed reports whether the run found a problem.
func (report *Report) Failed() bool { return len(report.Failures) > 0 }

// Lines renders the report for people, one finding per line.
func (report *Report) Lines() []string {
	lines := []string{fmt.Sprintf("soak: scenario %s, seed %d, %d nodes at the start; ran %s (faults %s)",
		report.Scenario, report.Seed, report.Nodes, report.Elapsed.Round(time.Second), report.Faults.Round(time.Second))}
	lines = append(lines, report.auditLines()...)
	lines = append(lines, report.topicAuditLines()...)
	lines = append(lines, report.loadLines()...)
	lines = append(lines, report.moveLines()...)
	for _, s := range report.Steps {
		status := "ok"
		if s.Err != nil {
			status = "FAILED: " + s.Err.Error()
		}
		lines = append(lines, fmt.Sprintf("step %s at %s took %s (produce refused %d, unanswered %d, %d of them at a node down): %s; %s",
			s.Name, s.At.Round(time.Second), s.Took.Round(time.Millisecond), s.Refused, s.Unanswered, s.NotConnected, s.Note, status))
	}
	for _, note := range report.Notes {
		lines = append(lines, "note: "+note)
	}
	for _, failure := range report.Failures {
		lines = append(lines, "FAILURE: "+failure)
	}
	return lines
}

func (report *Report) auditLines() []string {
	a := report.Audit
	lines := []string{fmt.Sprintf("audit: %d of %d records durable (replayed %d records of %d partitions in %s)",
		a.Durable, a.Acknowledged, a.RecordsRead, a.Partitions, a.Took.Round(time.Second))}
	for i, m := range a.Missing {
		if i == missingShownMax {
			lines = append(lines, fmt.Sprintf("  ... and %d more missing", len(a.Missing)-missingShownMax))
			break
		}
		lines = append(lines, "  missing "+m.String())
	}
	lines = append(lines, fmt.Sprintf("duplicates: %d records stored more than once (%d extra copies; %d of them sent in a single request); "+
		"%d stored without a 202; %d misplaced", a.DuplicatedIDs, a.DuplicateCopies, a.DuplicatedSentOnce, a.StoredUnacknowledged, a.Misplaced))
	for _, shown := range a.DuplicatedSentOnceShown {
		lines = append(lines, "  duplicate "+shown)
	}
	for _, shown := range append(slices.Clone(a.ForeignShown), a.Unreadable...) {
		lines = append(lines, "  anomaly "+shown)
	}
	return lines
}

func (report *Report) loadLines() []string {
	l := report.Load
	lines := []string{
		fmt.Sprintf("records: %d answered 202 of %d sent (%d abandoned when the load stopped or was refused for good); "+
			"%s: %d answered 202 in %s of producing, %.0f records/s", report.Audit.Acknowledged, report.Attempted, l.Abandoned,
			hotTopic, report.Audit.AcknowledgedIn[hotTopic], report.Producing.Round(time.Second), report.hotRate()),
		fmt.Sprintf("produce requests: %d sent; %d refused %s; %d without an answer (%d of them refused at connect: the node was down)",
			l.ProduceRequests, l.refusedTotal(), formatCounts(l.Refused), l.Unanswered, l.NotConnected),
		fmt.Sprintf("delivery: %d of %d acknowledged records consumed at least once (drain %s); %d deliveries, %d records redelivered; "+
			"consume errors %d, ack errors %d, stale acks %d", report.Delivered, report.Audit.Acknowledged, report.DrainTook.Round(time.Second),
			report.Deliveries, report.Redelivered, l.ConsumeErrors, l.AckErrors, l.AcksStale),
	}
	for _, status := range slices.Sorted(maps.Keys(report.Refusals)) {
		for _, text := range report.Refusals[status] {
			lines = append(lines, fmt.Sprintf("  refused %d: %s", status, text))
		}
	}
	for _, problem := range report.LoadProblems {
		lines = append(lines, "  unexpected "+problem)
	}
	return lines
}

func (report *Report) moveLines() []string {
	logs := report.Logs
	var durations []time.Duration
	for _, ms := range logs.MoveDurationsMs {
		durations = append(durations, time.Duration(ms)*time.Millisecond)
	}
	lines := []string{
		fmt.Sprintf("moves: %s (duration p50 %s, max %s)", formatCounts(logs.MovesByOutcome),
			proc.Percentile(durations, 0.50), proc.Percentile(durations, 1)),
		fmt.Sprintf("freezes: %d ended (p50 %s, p99 %s, max %s), %d cut short by a process end",
			len(logs.Freezes), proc.Percentile(logs.Freezes, 0.50), proc.Percentile(logs.Freezes, 0.99), proc.Percentile(logs.Freezes, 1), logs.FreezesCut),
		fmt.Sprintf("node events: %s; %d ERROR lines", formatCounts(logs.Events), logs.Errors),
		fmt.Sprintf("placement at the end: %s", formatCounts(report.Placement)),
	}
	for _, f := range report.Forced {
		lines = append(lines, "forced recovery: "+f.String())
	}
	for _, panicLine := range logs.Panics {
		lines = append(lines, "  panic "+panicLine)
	}
	return lines
}

func (f ForcedOutcome) String() string {
	if !f.Caught {
		return fmt.Sprintf("not reached (decommission of %s: %s)", f.Source, f.Reason)
	}
	return fmt.Sprintf("%s/p%d from %s to %s, copy complete (%d bytes, phase %s) when the source was killed; declared dead after %s; promoted after %s",
		f.Topic, f.Partition, f.Source, f.Destination, f.CopiedBytes, f.Phase, f.DeclaredDead.Round(time.Second), f.Promoted.Round(time.Second))
}

// formatCounts renders counts sorted by key, as "a 1, b 2" in braces.
func formatCounts[K int | string](counts map[K]int) string {
	parts := make([]string, 0, len(counts))
	for _, key := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%v %d", key, counts[key]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// hotRate is the hot topic's records answered 202 per second of
// producing (the cold fill excluded).
func (report *Report) hotRate() float64 {
	if report.Producing <= 0 {
		return 0
	}
	return float64(report.Audit.AcknowledgedIn[hotTopic]) / report.Producing.Seconds()
}
