package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"narad/chaos"

	"github.com/stretchr/testify/require"
)

// Moves worlds run by `go test ./sim`, sized to keep the package within
// its time budget; `-run TestSimMovesSweep -seeds=N` runs the long sweep.
const (
	movesSafetyMs       = 30_000
	movesThreeNodeSeeds = 12
	movesFiveNodeSeeds  = 4
	// movesFirstSeed starts the CI sweeps.
	movesFirstSeed = 1
	// movesFiveNodeEvery: in the long sweep, every this many seeds is a
	// five-node world; the others have three nodes.
	movesFiveNodeEvery = 4
)

// ExpectedMoveMarks are the marks beyond the (fault × phase) matrix that
// a long sweep of moves worlds must reach: the scenario's events and the
// node's move paths.
var ExpectedMoveMarks = []chaos.Mark{
	chaos.MarkNodeMoveStarted, chaos.MarkNodeMoveHandoff, chaos.MarkNodeMoveInstalled, chaos.MarkNodeMoveCatchupGaveUp,
	chaos.MarkNodePartitionFrozen, chaos.MarkNodePartitionFlippedAway, chaos.MarkNodeMoveAborted, chaos.MarkNodeStaleCopyDeleted,
	chaos.MarkNodePlanMove, chaos.MarkNodeJoinProposed, chaos.MarkNodeVoterRemoved, chaos.MarkNodeRetiredMemberForgotten,
	// The leader rested a destination: 16 of seeds 1-60 of the
	// three-node moves world.
	chaos.MarkNodeDestinationRested,
	// A round's fan-out cursor files found the disk full and kept their
	// earlier offsets: 16 times in seeds 7480500-7480559 of the
	// three-node moves world with the fan-out scenario on.
	chaos.MarkFanoutCursorFilesRefused,
	// A round's committed offset found the disk full (a file of it to
	// create) and stayed unpersisted: 10 times in seeds 1-60 of the
	// moves sweep.
	chaos.MarkNodeCommittedOffsetRefused,
	markScaleUp, markDecommissionAccepted, markDecommissionCancelled, markStormDuringCatchup, markStormMoveCutOver,
	markLeaderChangeAfterScaleUp, markLeaderChangeAfterDecommission, markVoterRemoved,
	markJoinAfterCompaction, chaos.MarkNodeJoinRelayed, chaos.MarkNodeJoinAccepted, chaos.MarkNodeMoveCarriedLeases,
}

// ciMoveMarks are the marks the CI sweep must reach; the rest of the
// matrix is printed.
var ciMoveMarks = []chaos.Mark{
	chaos.MarkNodeMoveStarted, chaos.MarkNodeMoveInstalled, chaos.MarkNodePartitionFlippedAway, markScaleUp, markDecommissionAccepted,
	moveFaultMark("kill-source", "catchup"), moveFaultMark("kill-dest", "catchup"),
	// The rarer paths the CI seeds reach often (each at least five
	// times); the rarest are required by the nightly (nightlyMoveMarks).
	chaos.MarkNodeFreezeExpired, chaos.MarkNodeMoveStalled, chaos.MarkNodeMoveSourceLost,
	chaos.MarkNodePartitionUnfrozen, chaos.MarkNodePlanAbort, chaos.MarkMoveAbortPlanned, chaos.MarkMovePlanBoundReached,
	chaos.MarkNodeProbeReleased, chaos.MarkNodeWriteFenced, chaos.MarkNodeKeyedProduceOwnerDown, chaos.MarkNodeOpenLogsFull,
}

func movesOptions(nodes int) func(seed uint64) Options {
	return func(seed uint64) Options {
		opts := DefaultOptions(seed)
		opts.Nodes, opts.Moves, opts.SafetyMs = nodes, true, movesSafetyMs
		return opts
	}
}

// TestSimMoves sweeps three- and five-node worlds with scale-ups,
// decommissions, faults aimed at the phases of the moves they cause and
// write storms on moving partitions: every checker must pass, moves must
// complete, and the CI marks must be reached. It prints the (fault ×
// phase) matrix.
func TestSimMoves(t *testing.T) {
	three := runSweep(t, movesFirstSeed, movesThreeNodeSeeds, movesOptions(3))
	three.print("sim-moves-3-nodes")
	five := runSweep(t, movesFirstSeed, movesFiveNodeSeeds, movesOptions(5))
	five.print("sim-moves-5-nodes")
	marks := maps.Clone(three.marks)
	for mark, count := range five.marks { //determinism:ok sums
		marks[mark] += count
	}
	fmt.Print(moveMatrix(marks))
	fmt.Print(fanoutMatrix(marks))
	require.Positive(t, three.movesCompleted+five.movesCompleted, "no move completed")
	require.Empty(t, MissingMarks(marks, ciMoveMarks), "marks the CI sweep must reach")
	require.Empty(t, MissingMarks(marks, ciFanoutFaultMarks()), "(fault x cursor phase) pairs the CI sweep must reach")
}

// TestSimMovesSweep is the long sweep (-seeds=N from -seed): it fails if
// a seed fails, or if a (fault × phase) pair or an expected move mark was
// never reached, and says after how many seeds the matrix was complete.
func TestSimMovesSweep(t *testing.T) {
	if *seedsFlag == 0 {
		t.Skip("the long moves sweep runs with -seeds=N")
	}
	expected := slices.Concat(MoveFaultMarks(), ExpectedMoveMarks, FanoutFaultMarks())
	reached := map[string]int{}
	completeAfter := 0
	stats := runSweep(t, *seedFlag, *seedsFlag, func(seed uint64) Options {
		nodes := 3
		if seed%movesFiveNodeEvery == 0 {
			nodes = 5
		}
		return movesOptions(nodes)(seed)
	}, func(seed uint64, report Report) {
		for _, mark := range report.Marks {
			reached[mark.Name] += mark.Count
		}
		if completeAfter == 0 && len(MissingMarks(reached, expected)) == 0 {
			completeAfter = int(seed-*seedFlag) + 1
		}
	})
	stats.print("sim-moves-sweep")
	fmt.Print(moveMatrix(stats.marks))
	fmt.Print(fanoutMatrix(stats.marks))
	fmt.Printf("sim-moves-sweep: every expected mark reached after %d seeds (0: never)\n", completeAfter)
	if missing := MissingMarks(stats.marks, expected); len(missing) > 0 {
		t.Errorf("never reached in %d seeds: %v", *seedsFlag, missing)
	}
}

// TestMovesSameSeedSameTrace runs moves seeds A, B, A in one process: A's
// runs must leave the same trace hash and report.
func TestMovesSameSeedSameTrace(t *testing.T) {
	a := requireSameSeedSameTrace(t, movesOptions(3), 15_000, 5, 6)
	require.Nil(t, a.Failure, "seed 5 must pass to compare its runs")
	require.Positive(t, a.MovesStarted, "the run moved partitions")
}

// moveMatrix renders the (fault × phase) coverage as a table of counts.
func moveMatrix(marks map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", "move faults")
	for _, phase := range movePhases {
		fmt.Fprintf(&b, " %9s", phase)
	}
	b.WriteString("\n")
	for _, kind := range moveFaultKinds {
		fmt.Fprintf(&b, "%-22s", kind)
		for _, phase := range movePhases {
			fmt.Fprintf(&b, " %9d", marks[string(moveFaultMark(kind, phase))])
		}
		b.WriteString("\n")
	}
	missing := MissingMarks(marks, append(MoveFaultMarks(), ExpectedMoveMarks...))
	fmt.Fprintf(&b, "never reached: %v\n", missing)
	others := []string{}
	for _, mark := range slices.Sorted(maps.Keys(marks)) {
		planner := strings.HasPrefix(mark, "move-") && !strings.HasPrefix(mark, "move-fault:")
		if planner || strings.HasPrefix(mark, "node-") || strings.HasPrefix(mark, "sim-") {
			others = append(others, fmt.Sprintf("%s:%d", mark, marks[mark]))
		}
	}
	fmt.Fprintf(&b, "move marks: %s\n", strings.Join(others, " "))
	return b.String()
}
