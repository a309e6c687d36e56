package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// ExpectedDeadLetterMarks are the marks the dead-letters sweep must reach:
// dead letters settled, a batch whose write failed (under faults, or its
// source frozen by a move meanwhile), and exhausted records waiting for
// the relay bound (one in the scenario: deadLetterRelaysInFlightMax).
var ExpectedDeadLetterMarks = []chaos.Mark{chaos.MarkNodeDeadLettered, chaos.MarkNodeDeadLetterFailed, chaos.MarkNodeDeadLettersWaitForRelays}

// Seeds of TestSimDeadLetters: single-node worlds, and three-node worlds
// with moves (a dead letter's source or dead-letter partition may move
// while its copy is written).
const (
	deadLettersFirstSeed      = 1
	deadLettersSingleSeeds    = 3
	deadLettersThreeNodeSeeds = 2
)

func deadLettersOptions(nodes int) func(seed uint64) Options {
	return func(seed uint64) Options {
		opts := DefaultOptions(seed)
		opts.Nodes, opts.DeadLetters = nodes, true
		if nodes > 1 {
			opts.Moves, opts.SafetyMs = true, movesSafetyMs
		}
		return opts
	}
}

// TestSimDeadLetters sweeps worlds whose topic has dead letters: every
// checker must pass (a dead letter acknowledged in its topic only once its
// copy is durable; every acknowledged record consumed from its topic or
// from the dead-letter topic), records must actually become dead letters,
// and the expected marks must be reached.
func TestSimDeadLetters(t *testing.T) {
	settled := 0
	count := func(_ uint64, report Report) { settled += report.DeadLettersSettled }
	single := runSweep(t, deadLettersFirstSeed, deadLettersSingleSeeds, deadLettersOptions(1), count)
	single.print("sim-dead-letters-1-node")
	three := runSweep(t, deadLettersFirstSeed, deadLettersThreeNodeSeeds, deadLettersOptions(3), count)
	three.print("sim-dead-letters-3-nodes")
	marks := single.marks
	for mark, n := range three.marks { //determinism:ok sums
		marks[mark] += n
	}
	for _, mark := range []chaos.Mark{chaos.MarkNodeDeadLettered, chaos.MarkNodeDeadLetterFailed, chaos.MarkNodeDeadLetterOrphaned,
		chaos.MarkNodeDeadLettersWaitForRelays} {
		fmt.Printf("sim-dead-letters: mark %s=%d\n", mark, marks[string(mark)])
	}
	require.Positive(t, settled, "no record became a dead letter")
	require.Empty(t, MissingMarks(marks, ExpectedDeadLetterMarks), "marks the dead-letters sweep must reach")
}

// TestSimDeadLettersSweep is the long sweep of three-node dead-letter
// worlds with moves (-seeds=N from -seed): every seed must pass, and it
// prints how often each dead-letter path was reached.
func TestSimDeadLettersSweep(t *testing.T) {
	if *seedsFlag == 0 {
		t.Skip("the long dead-letters sweep runs with -seeds=N")
	}
	stats := runSweep(t, *seedFlag, *seedsFlag, deadLettersOptions(3))
	stats.print("sim-dead-letters-sweep")
	for _, mark := range []chaos.Mark{chaos.MarkNodeDeadLettered, chaos.MarkNodeDeadLetterFailed, chaos.MarkNodeDeadLetterOrphaned,
		chaos.MarkNodeDeadLettersWaitForRelays} {
		fmt.Printf("sim-dead-letters-sweep: mark %s=%d\n", mark, stats.marks[string(mark)])
	}
}
