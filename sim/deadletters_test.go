package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// ExpectedDeadLetterMarks are the marks the dead-letters sweep must reach:
// dead letters settled, a batch whose write failed (under faults, or its
// source frozen by a move meanwhile), exhausted records waiting for the
// relay bound (one in the scenario: deadLetterRelaysInFlightMax), and a
// frontier moved by a dead letter while its log was closed, written when
// the log reopened for it.
var ExpectedDeadLetterMarks = []chaos.Mark{chaos.MarkNodeDeadLettered, chaos.MarkNodeDeadLetterFailed, chaos.MarkNodeDeadLettersWaitForRelays,
	chaos.MarkNodeDeadLetterFrontierSaved}

// ExpectedDeadLetterAimedMarks are the marks the worlds with doomed
// topics (Options.DeadLettersAimed) must reach: a batch of dead letters
// that ended after its source partition was dropped.
var ExpectedDeadLetterAimedMarks = []chaos.Mark{chaos.MarkNodeDeadLetterOrphaned}

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

// Seeds of TestSimDeadLettersAimed: three-node moves worlds with doomed
// topics; 20 of the 30 seeds from the first orphaned a batch.
const (
	deadLettersAimedFirstSeed = 3200000
	deadLettersAimedSeeds     = 4
)

func deadLettersAimedOptions(seed uint64) Options {
	opts := deadLettersOptions(3)(seed)
	opts.DeadLettersAimed = true
	return opts
}

// TestSimDeadLettersAimed sweeps three-node moves worlds with doomed
// topics (deadletters_doomed.go): every checker must pass, doomed topics
// must be deleted, and a batch of dead letters must end after its source
// partition went with its topic.
func TestSimDeadLettersAimed(t *testing.T) {
	rounds := 0
	stats := runSweep(t, deadLettersAimedFirstSeed, deadLettersAimedSeeds, deadLettersAimedOptions,
		func(_ uint64, report Report) { rounds += report.DoomedRounds })
	stats.print("sim-dead-letters-aimed")
	fmt.Printf("sim-dead-letters-aimed: doomed topics deleted=%d mark %s=%d\n", rounds, chaos.MarkNodeDeadLetterOrphaned,
		stats.marks[string(chaos.MarkNodeDeadLetterOrphaned)])
	require.Positive(t, rounds, "no doomed topic was deleted")
	require.Empty(t, MissingMarks(stats.marks, ExpectedDeadLetterAimedMarks), "marks the worlds with doomed topics must reach")
}

// deadLettersAimedSweepSeedsMin is the sweep size from which a sweep with
// -deadletters-aimed must reach ExpectedDeadLetterAimedMarks.
const deadLettersAimedSweepSeedsMin = 10

// TestSimDeadLettersSweep is the long sweep of three-node dead-letter
// worlds with moves (-seeds=N from -seed; -deadletters-aimed adds the
// doomed topics, -faults the profile): every seed must pass, and it
// prints how often each dead-letter path was reached. With
// -deadletters-aimed and at least deadLettersAimedSweepSeedsMin seeds it
// must reach ExpectedDeadLetterAimedMarks.
func TestSimDeadLettersSweep(t *testing.T) {
	if *seedsFlag == 0 {
		t.Skip("the long dead-letters sweep runs with -seeds=N")
	}
	options := func(seed uint64) Options {
		opts := deadLettersOptions(3)(seed)
		opts.DeadLettersAimed = *aimedFlag
		profile, err := ProfileByName(*faultsFlag)
		require.NoError(t, err)
		opts.Faults = profile
		return opts
	}
	var orphaning []uint64
	stats := runSweep(t, *seedFlag, *seedsFlag, options, func(seed uint64, report Report) {
		if reachedIn(report, chaos.MarkNodeDeadLetterOrphaned) {
			orphaning = append(orphaning, seed)
		}
	})
	stats.print("sim-dead-letters-sweep")
	fmt.Printf("sim-dead-letters-sweep: seeds that orphaned a batch: %v\n", orphaning)
	for _, mark := range []chaos.Mark{chaos.MarkNodeDeadLettered, chaos.MarkNodeDeadLetterFailed, chaos.MarkNodeDeadLetterOrphaned,
		chaos.MarkNodeDeadLettersWaitForRelays} {
		fmt.Printf("sim-dead-letters-sweep: mark %s=%d\n", mark, stats.marks[string(mark)])
	}
	if *aimedFlag && *seedsFlag >= deadLettersAimedSweepSeedsMin {
		require.Empty(t, MissingMarks(stats.marks, ExpectedDeadLetterAimedMarks), "marks a sweep with doomed topics must reach")
	}
}

// reachedIn reports whether a run reached mark.
func reachedIn(report Report, mark chaos.Mark) bool {
	return slices.ContainsFunc(report.Marks, func(c chaos.Count) bool { return c.Name == string(mark) && c.Count > 0 })
}
