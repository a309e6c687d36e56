package sim

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// reachedNotRequired is the reason given for a mark that the moves
// sweeps of `go test ./sim` reach today but that no sweep requires yet.
const reachedNotRequired = "reached by the moves sweeps, required by none yet"

// notYetRequired lists the core's marks that no sweep requires, with why.
// A mark leaves this set when a sweep starts requiring it; the set is
// meant to empty.
var notYetRequired = map[chaos.Mark]string{
	chaos.MarkNodeCancelAbortsMove:      reachedNotRequired,
	chaos.MarkNodeFreezeExpired:         reachedNotRequired,
	chaos.MarkNodeLeadershipHandedOver:  reachedNotRequired,
	chaos.MarkNodeMoveRestarted:         reachedNotRequired,
	chaos.MarkNodeMoveRolledBack:        reachedNotRequired,
	chaos.MarkNodeMoveStalled:           reachedNotRequired,
	chaos.MarkNodePartitionUnfrozen:     reachedNotRequired,
	chaos.MarkNodePlanAbort:             reachedNotRequired,
	chaos.MarkNodeProbeReleased:         reachedNotRequired,
	chaos.MarkNodeProduceForwardsJoined: reachedNotRequired,
	chaos.MarkNodeWriteFenced:           reachedNotRequired,
	chaos.MarkNodeKeyedProduceOwnerDown: "new with the rule that a keyed record is not re-placed; no sweep counts it yet",
	chaos.MarkMoveAbortPlanned:          "the planner's own path; no sweep counts it yet",
	chaos.MarkMovePlanBoundReached:      "the planner's own path; no sweep counts it yet",
	chaos.MarkNodeCorruptRecordSkipped:  "no fault of the simulator leaves a corrupt frame below a log's recovered end",
	chaos.MarkNodeInstallRepaired:       "no crash lands between the two renames of a move's install yet",
	chaos.MarkNodeMoveForcePromote:      "the moves faults do not yet kill a frozen source for longer than the force-promote delay",
	chaos.MarkNodeMoveJobOrphaned:       "needs a move to end while its finalize job is out (the node-move-job-late site makes that window longer); required by none yet",
	chaos.MarkNodeOpenLogsFull:          "no world has more partitions pinned open than the open-log bound",
	chaos.MarkNodeDeadLetterOrphaned: "needs a batch of dead letters in flight when its source partition's move flips (a source refuses new " +
		"batches once frozen) or its topic is deleted: 0 in 30 seeds of TestSimDeadLettersSweep; no fault aims at that window yet",
	chaos.MarkFanoutRecordsAgedOut: "needs a child stalled for longer than its parent's retention (at least an hour of simulated time) " +
		"and a fan-out checker that excuses the records retention took; no world does both yet",
}

// requiredMarks returns every mark some sweep definition requires.
func requiredMarks() []chaos.Mark {
	lists := [][]chaos.Mark{ExpectedMarks, ExpectedClusterMarks, ExpectedMoveMarks, ciMoveMarks, MoveFaultMarks(), ExpectedDeadLetterMarks,
		ExpectedFanoutMarks, FanoutFaultMarks()}
	return slices.Concat(lists...)
}

// TestEveryRegisteredMarkIsRequiredOrExcused: each mark of the core's
// registry is required by a sweep or listed in notYetRequired with a
// reason, never both; and notYetRequired names registered marks only.
func TestEveryRegisteredMarkIsRequiredOrExcused(t *testing.T) {
	required := requiredMarks()
	for _, mark := range chaos.Registered {
		reason, excused := notYetRequired[mark]
		isRequired := slices.Contains(required, mark)
		switch {
		case !isRequired && !excused:
			t.Errorf("%s is required by no sweep and not listed in notYetRequired", mark)
		case isRequired && excused:
			t.Errorf("%s is required by a sweep: remove it from notYetRequired", mark)
		case excused && reason == "":
			t.Errorf("%s is listed in notYetRequired without a reason", mark)
		}
	}
	for mark := range notYetRequired {
		require.Contains(t, chaos.Registered, mark, "notYetRequired names a mark the registry does not declare")
	}
}
