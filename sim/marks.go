package sim

import (
	"slices"

	"narad/chaos"
)

// The simulator's own coverage marks: which fault or scenario event
// happened. The core's marks are declared in package chaos.
const (
	// markLeaderKilled and markFollowerKilled: a crash fault hit the
	// metastore's leader, or a follower.
	markLeaderKilled   chaos.Mark = "sim-leader-killed"
	markFollowerKilled chaos.Mark = "sim-follower-killed"
	// markLeaderIsolated: a partition fault cut the leader off.
	markLeaderIsolated chaos.Mark = "sim-leader-isolated"
	// markPartitionFull and markPartitionOneWay: the shapes of network
	// partition that happened.
	markPartitionFull   chaos.Mark = "sim-partition-full"
	markPartitionOneWay chaos.Mark = "sim-partition-one-way"
	// markScaleUp: a node joined the running cluster.
	markScaleUp chaos.Mark = "sim-scale-up"
	// markDecommissionAccepted and markDecommissionCancelled: a
	// decommission was accepted, or cancelled while it drained.
	markDecommissionAccepted  chaos.Mark = "sim-decommission-accepted"
	markDecommissionCancelled chaos.Mark = "sim-decommission-cancelled"
	// markStormDuringCatchup and markStormMoveCutOver: a write storm hit a
	// partition in catch-up, and its move still flipped.
	markStormDuringCatchup chaos.Mark = "sim-storm-during-catchup"
	markStormMoveCutOver   chaos.Mark = "sim-storm-move-cut-over"
	// markLeaderChangeAfterScaleUp and markLeaderChangeAfterDecommission:
	// the leader was killed or cut off just after either committed.
	markLeaderChangeAfterScaleUp      chaos.Mark = "sim-leader-change-after-scale-up"
	markLeaderChangeAfterDecommission chaos.Mark = "sim-leader-change-after-decommission"
	// markVoterRemoved: a drained node left the voter set.
	markVoterRemoved chaos.Mark = "sim-voter-removed"
	// markJoinAfterCompaction: a node joined after the metadata log was
	// compacted, so it had to install a snapshot.
	markJoinAfterCompaction chaos.Mark = "sim-join-after-compaction"
	// markKillDuringSyncRound: a crash landed while the node's sync round
	// was in flight.
	markKillDuringSyncRound chaos.Mark = "sim-kill-during-sync-round"
	// markFrozenSourceKilled: the source of a move, frozen for it, was
	// killed for longer than the force-promote delay once a destination
	// that started its session again had copied the frozen state.
	markFrozenSourceKilled chaos.Mark = "sim-frozen-source-killed"
	// markCaughtUpSourceKilled: the source of a move, not frozen, was
	// killed for longer than the force-promote delay after it
	// acknowledged a record its destination's caught-up copy lacks.
	markCaughtUpSourceKilled chaos.Mark = "sim-caught-up-source-killed"
	// markGroupSyncRound: a node ran the partition rounds of a Ready, two
	// or more of them with records, together (node.RunTogether).
	markGroupSyncRound chaos.Mark = "sim-group-sync-round"
	// markSyncsRanAfterInput: a node ran the partition rounds of a Ready
	// late (Options.LateSyncs), after it took an input since the Ready.
	markSyncsRanAfterInput chaos.Mark = "sim-syncs-ran-after-input"
	// markInstallCrashed: a destination was killed between the two
	// renames of a move's install.
	markInstallCrashed chaos.Mark = "sim-install-crashed"
)

// movePhaseMark is the mark of a move session entering phase.
func movePhaseMark(phase string) chaos.Mark { return chaos.Mark("sim-move-phase-" + phase) }

// ExpectedSingleNodeMarks are the marks a long sweep with every fault
// must reach besides ExpectedMarks when its runs may draw the media
// corruption of media_faults.go (mediaFaultsApply: single-node worlds
// without the fan-out scenario).
var ExpectedSingleNodeMarks = []chaos.Mark{chaos.MarkNodeCorruptRecordSkipped}

// ExpectedMarks are the coverage marks a long sweep with every fault must
// reach; each names a rare path of the core.
var ExpectedMarks = []chaos.Mark{
	chaos.MarkNodeAppendDuringSyncRound,
	chaos.MarkNodeAppendFailed,
	chaos.MarkNodeBatchAck,
	chaos.MarkNodeBatchSpansPartitions,
	chaos.MarkNodeLeaseExpired,
	chaos.MarkNodeLogEvicted,
	chaos.MarkNodeClosedLogLeftClosed,
	chaos.MarkNodeHeldAnsweredByLeader,
	chaos.MarkNodeLogFailed,
	chaos.MarkNodeLongPollTimedOut,
	chaos.MarkNodeLongPollWoken,
	chaos.MarkNodeRecoveredTornTail,
	chaos.MarkNodeRecoveredZeroTail,
	chaos.MarkNodeRedelivery,
	chaos.MarkStorageSegmentReopened,
	chaos.MarkStorageRecoveredPastHWM,
	chaos.MarkStorageReopenedWarm,
	chaos.MarkStorageSegmentIndexWritten,
	chaos.MarkStorageSegmentIndexLoaded,
	chaos.MarkStorageSegmentPagedIn,
	markKillDuringSyncRound,
	markGroupSyncRound,
}

// ExpectedClusterMarks are the further marks a sweep of multi-node worlds
// with every fault must reach: the simulator's own (which fault hit the
// metastore's leader or a follower, which partition shapes happened) and
// the node's paths across nodes.
var ExpectedClusterMarks = []chaos.Mark{
	chaos.MarkNodeConsumeProbeHit,
	chaos.MarkNodeHeldTimedOut,
	chaos.MarkNodeMemberMarkedDead,
	chaos.MarkNodeProduceForwarded,
	chaos.MarkNodeProduceRerouted,
	markFollowerKilled,
	markLeaderIsolated,
	markLeaderKilled,
	markPartitionFull,
	markPartitionOneWay,
}

// ExpectedDiskPressureMarks are the further marks a sweep of multi-node
// worlds with every fault and the disk pressure on (Options.DiskPressure)
// must reach. A keyless record went past an owner short of disk: about
// one run in four (the pressure comes to 30 % of them).
var ExpectedDiskPressureMarks = []chaos.Mark{chaos.MarkNodeKeylessAvoidsLowDisk}

// ExpectedLateSyncMarks are the further marks a sweep with every fault
// and late syncs on (Options.LateSyncs) must reach.
var ExpectedLateSyncMarks = []chaos.Mark{markSyncsRanAfterInput}

// MissingMarks lists the marks of expected absent from reached, sorted.
func MissingMarks(reached map[string]int, expected []chaos.Mark) []chaos.Mark {
	var missing []chaos.Mark
	for _, mark := range expected {
		if reached[string(mark)] == 0 {
			missing = append(missing, mark)
		}
	}
	slices.Sort(missing)
	return missing
}
