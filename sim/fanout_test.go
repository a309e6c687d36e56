package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// Fan-out worlds run by `go test ./sim`: moves worlds of three nodes with
// a fan-out child and a delay child on the topic.
const (
	fanoutSeeds     = 6
	fanoutFirstSeed = 1
)

// ExpectedFanoutMarks are the cursor phases a fan-out sweep must reach.
var ExpectedFanoutMarks = []chaos.Mark{
	chaos.MarkFanoutCursorStarted, chaos.MarkFanoutCursorResumed, chaos.MarkFanoutBatchCopied, chaos.MarkFanoutBatchFailed,
	chaos.MarkFanoutDelayHeld, chaos.MarkFanoutCursorMoved,
}

func fanoutOptions(nodes int) func(seed uint64) Options {
	return func(seed uint64) Options {
		opts := movesOptions(nodes)(seed)
		opts.Fanout = true
		return opts
	}
}

// TestSimFanout sweeps moves worlds whose topic has a fan-out child and a
// delay child: every checker must pass, including that every record
// answered 202 reached both children by the end of the liveness phase and
// that none reached the delay child early, and the cursor phases must be
// reached.
func TestSimFanout(t *testing.T) {
	stats := runSweep(t, fanoutFirstSeed, fanoutSeeds, fanoutOptions(3))
	stats.print("sim-fanout-3-nodes")
	for _, mark := range []chaos.Mark{chaos.MarkFanoutCursorStarted, chaos.MarkFanoutCursorResumed, chaos.MarkFanoutBatchCopied,
		chaos.MarkFanoutBatchFailed, chaos.MarkFanoutDelayHeld, chaos.MarkFanoutCursorMoved, chaos.MarkFanoutRecordsAgedOut} {
		fmt.Printf("sim-fanout-3-nodes: mark %s=%d\n", mark, stats.marks[string(mark)])
	}
	require.Empty(t, MissingMarks(stats.marks, ExpectedFanoutMarks), "the cursor phases the fan-out sweep must reach")
}
