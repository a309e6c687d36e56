package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// ExpectedDeadLetterMarks are the marks the dead-letters sweep must reach.
var ExpectedDeadLetterMarks = []chaos.Mark{chaos.MarkNodeDeadLettered}

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
	require.Positive(t, settled, "no record became a dead letter")
	require.Empty(t, MissingMarks(marks, ExpectedDeadLetterMarks), "marks the dead-letters sweep must reach")
}
