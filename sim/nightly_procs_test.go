package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// The nightly in several processes. A run is single-threaded and the
// core's coverage marks and fault sites are process-wide (package chaos),
// so runs cannot share a process; the nightly starts its own test binary
// once per worker instead. Worker w of N makes the runs i of the rotation
// with i modulo N equal to w (each run is still world i modulo the
// rotation with seed first+i, as in one process), writes its tally as
// JSON and exits; the nightly merges the tallies and reports as if one
// process had made every run.

var (
	nightlyProcsFlag  = flag.Int("nightly-procs", 0, "TestNightly: processes that share the runs (0: one per CPU)")
	nightlyWorkerFlag = flag.Int("nightly-worker", -1, "TestNightly, set by the nightly for its workers: this process's index among -nightly-procs")
	nightlyTallyFlag  = flag.String("nightly-tally", "", "TestNightly, set by the nightly for its workers: where the worker writes its tally (JSON)")
)

// nightlyProcsMax bounds -nightly-procs: more workers than CPUs only
// share them.
const nightlyProcsMax = 64

// nightlyProcs is -nightly-procs, or the CPUs of this machine.
func nightlyProcs() int {
	procs := *nightlyProcsFlag
	if procs <= 0 {
		procs = runtime.NumCPU()
	}
	return min(procs, nightlyProcsMax)
}

// runNightlyWorker is a worker's whole part: its runs, then its tally.
func runNightlyWorker(t *testing.T, first uint64, procs int) {
	worker := *nightlyWorkerFlag
	if worker >= procs || *nightlyTallyFlag == "" {
		t.Fatalf("nightly worker %d of %d with tally %q: the nightly starts its workers itself", worker, procs, *nightlyTallyFlag)
	}
	stats := nightlyRuns(first, worker, procs)
	encoded, err := json.Marshal(stats)
	if err != nil {
		t.Fatalf("nightly worker %d: encode its tally: %v", worker, err)
	}
	if err := os.WriteFile(*nightlyTallyFlag, encoded, 0o644); err != nil {
		t.Fatalf("nightly worker %d: write its tally: %v", worker, err)
	}
}

// nightlyInWorkers starts procs workers, each printing its failures as
// they happen (every line prefixed with the worker), waits for all, and
// merges their tallies. A worker that exits with an error fails the
// nightly: its output says why.
func nightlyInWorkers(t *testing.T, first uint64, procs int) *nightlyStats {
	dir := t.TempDir()
	var output sync.Mutex
	commands := make([]*exec.Cmd, procs)
	for worker := range procs {
		commands[worker] = exec.Command(os.Args[0], "-test.run=^TestNightly$", "-test.count=1", "-test.timeout=0",
			"-nightly="+nightlyFlag.String(), fmt.Sprintf("-nightly-seed=%d", first), fmt.Sprintf("-nightly-procs=%d", procs),
			fmt.Sprintf("-nightly-worker=%d", worker), "-nightly-tally="+filepath.Join(dir, fmt.Sprintf("worker%d.json", worker)))
		lines := &linePrefixer{prefix: fmt.Sprintf("[worker %d] ", worker), to: os.Stdout, lock: &output}
		commands[worker].Stdout, commands[worker].Stderr = lines, lines
		if err := commands[worker].Start(); err != nil {
			t.Fatalf("nightly worker %d: start %s: %v", worker, os.Args[0], err)
		}
	}
	stats := newNightlyStats()
	for worker, command := range commands {
		if err := command.Wait(); err != nil {
			t.Fatalf("nightly worker %d failed (its output is above): %v", worker, err)
		}
		tally, err := readNightlyTally(filepath.Join(dir, fmt.Sprintf("worker%d.json", worker)))
		if err != nil {
			t.Fatalf("nightly worker %d: %v", worker, err)
		}
		stats.merge(tally)
	}
	return stats
}

func readNightlyTally(path string) (*nightlyStats, error) {
	encoded, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read its tally: %w", err)
	}
	tally := newNightlyStats()
	if err := json.Unmarshal(encoded, tally); err != nil {
		return nil, fmt.Errorf("decode its tally: %w", err)
	}
	return tally, nil
}

// merge adds another process's tally to s.
func (s *nightlyStats) merge(other *nightlyStats) {
	s.Runs += other.Runs
	s.SimMs += other.SimMs
	s.WallS += other.WallS
	s.Failed = append(s.Failed, other.Failed...)
	s.MovesRuns += other.MovesRuns
	addCounts(s.Marks, other.Marks)
	addCounts(s.Fired, other.Fired)
	addCounts(s.MovesMarks, other.MovesMarks)
	addCounts(s.SimMsByNodes, other.SimMsByNodes)
	addCounts(s.WallSByNodes, other.WallSByNodes)
	addCounts(s.RunsByNodes, other.RunsByNodes)
}

func addCounts[K comparable, V int | int64 | float64](to, from map[K]V) {
	for key, value := range from { //determinism:ok sums, whatever the order
		to[key] += value
	}
}

// printNightlyThroughput prints what the processes made together: the
// simulated seconds per second of the nightly's own wall time (the
// per-world lines above give one process's speed).
func printNightlyThroughput(stats *nightlyStats, procs int, elapsed time.Duration) {
	fmt.Printf("nightly: %d processes, %.1f s of wall time: sim_s=%.0f sim_per_wall_all=%.0f\n",
		procs, elapsed.Seconds(), float64(stats.SimMs)/1000, float64(stats.SimMs)/1000/max(elapsed.Seconds(), 0.001))
}

// linePrefixer writes whole lines, each prefixed, under a lock shared
// by the workers, so that their outputs interleave by line.
type linePrefixer struct {
	prefix string
	to     io.Writer
	lock   *sync.Mutex
	// partial holds the end of the last write, until its newline.
	partial []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.partial = append(p.partial, b...)
	for {
		end := bytes.IndexByte(p.partial, '\n')
		if end < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.to, "%s%s", p.prefix, p.partial[:end+1]); err != nil {
			return len(b), err
		}
		p.partial = p.partial[end+1:]
	}
}

// TestNightlyTalliesMergeAsOneProcess: reports split between two workers,
// each tally through JSON and merged, sum to what one process adding
// every report holds, failures (and their reproduce lines) included.
func TestNightlyTalliesMergeAsOneProcess(t *testing.T) {
	reports := []Report{
		{Seed: 1, Nodes: 1, Profile: ProfileAll.Name, SimMs: 30_000, WallSeconds: 0.2,
			Marks: []chaos.Count{{Name: "a", Count: 2}}, SitesFired: []chaos.Count{{Name: "s", Count: 1}}},
		{Seed: 2, Nodes: 3, Moves: true, Profile: ProfileAll.Name, SimMs: 60_000, WallSeconds: 0.5,
			Marks: []chaos.Count{{Name: "a", Count: 1}, {Name: "b", Count: 4}}},
		{Seed: 3, Nodes: 5, Moves: true, Profile: ProfileNetwork.Name, SimMs: 45_000, WallSeconds: 0.7, SafetyMs: 30_000,
			Failure: &Failure{Checker: "no-loss", Detail: "record 7 lost"}},
		{Seed: 4, Nodes: 3, Moves: true, Profile: ProfileAll.Name, SimMs: 50_000, WallSeconds: 0.4,
			SitesFired: []chaos.Count{{Name: "s", Count: 3}, {Name: "u", Count: 1}}},
	}
	whole := newNightlyStats()
	workers := []*nightlyStats{newNightlyStats(), newNightlyStats()}
	for i, report := range reports {
		whole.add(report)
		workers[i%2].add(report)
	}
	merged := newNightlyStats()
	for _, worker := range workers {
		encoded, err := json.Marshal(worker)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "tally.json")
		require.NoError(t, os.WriteFile(path, encoded, 0o644))
		tally, err := readNightlyTally(path)
		require.NoError(t, err)
		merged.merge(tally)
	}
	require.Equal(t, whole.Runs, merged.Runs)
	require.Equal(t, whole.SimMs, merged.SimMs)
	require.InDelta(t, whole.WallS, merged.WallS, 1e-9)
	require.Equal(t, whole.Marks, merged.Marks)
	require.Equal(t, whole.Fired, merged.Fired)
	require.Equal(t, whole.MovesRuns, merged.MovesRuns)
	require.Equal(t, whole.MovesMarks, merged.MovesMarks)
	require.Equal(t, whole.SimMsByNodes, merged.SimMsByNodes)
	require.Equal(t, whole.RunsByNodes, merged.RunsByNodes)
	require.Len(t, merged.Failed, 1)
	require.Equal(t, reproduceLine(reports[2]), reproduceLine(merged.Failed[0]))
}

// TestLinePrefixerWritesWholeLines: two writers sharing an output each
// see their lines prefixed and whole, however the writes were cut.
func TestLinePrefixerWritesWholeLines(t *testing.T) {
	var out bytes.Buffer
	var lock sync.Mutex
	first := &linePrefixer{prefix: "[worker 0] ", to: &out, lock: &lock}
	second := &linePrefixer{prefix: "[worker 1] ", to: &out, lock: &lock}
	for _, write := range []struct {
		to   *linePrefixer
		text string
	}{{first, "nightly: run 4 "}, {second, "PASS\n"}, {first, "failed:\nseed 4"}, {first, " failed\n"}} {
		n, err := write.to.Write([]byte(write.text))
		require.NoError(t, err)
		require.Equal(t, len(write.text), n)
	}
	require.Equal(t, "[worker 1] PASS\n[worker 0] nightly: run 4 failed:\n[worker 0] seed 4 failed\n", out.String())
}
