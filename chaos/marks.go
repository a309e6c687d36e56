package chaos

// Mark names a rare path of the core. The core passes one of the
// constants below to Reached; the simulator's sweeps list the marks they
// must see reached. Every mark of the core is declared here, with what
// reaching it means, and listed in Registered.
type Mark string

// The marks of package node.
const (
	// MarkNodeAppendDuringSyncRound: a record was appended while the log's
	// sync round was in flight; it waits for the next round.
	MarkNodeAppendDuringSyncRound Mark = "node-append-during-sync-round"
	// MarkNodeAppendFailed: an append to a partition log failed; the
	// produce is refused.
	MarkNodeAppendFailed Mark = "node-append-failed"
	// MarkNodeBatchAck: a batch ack settled several receipts at once.
	MarkNodeBatchAck Mark = "node-batch-ack"
	// MarkNodeBatchSpansPartitions: one produce batch landed in more than
	// one partition.
	MarkNodeBatchSpansPartitions Mark = "node-batch-spans-partitions"
	// MarkNodeCancelAbortsMove: cancelling a decommission aborted a move
	// off the member that had not copied anything yet.
	MarkNodeCancelAbortsMove Mark = "node-cancel-aborts-move"
	// MarkNodeConsumeProbeHit: a consume probe forwarded to another owner
	// came back with messages for a poll still waiting.
	MarkNodeConsumeProbeHit Mark = "node-consume-probe-hit"
	// MarkNodeCorruptRecordSkipped: a consume skipped a record whose frame
	// failed its checksum.
	MarkNodeCorruptRecordSkipped Mark = "node-corrupt-record-skipped"
	// MarkNodeFreezeExpired: a source held a freeze past its TTL and asked
	// for the move's abort.
	MarkNodeFreezeExpired Mark = "node-freeze-expired"
	// MarkNodeInstallRepaired: the sweep finished an install that a crash
	// cut between its renames.
	MarkNodeInstallRepaired Mark = "node-install-repaired"
	// MarkNodeJoinAccepted: a joining node learned the voters it was added
	// to.
	MarkNodeJoinAccepted Mark = "node-join-accepted"
	// MarkNodeJoinProposed: the metadata leader proposed adding a joiner
	// as a voter.
	MarkNodeJoinProposed Mark = "node-join-proposed"
	// MarkNodeJoinRelayed: a member that does not lead relayed a join
	// request to the leader.
	MarkNodeJoinRelayed Mark = "node-join-relayed"
	// MarkNodeKeyedProduceOwnerDown: a keyed record was refused because the
	// owner of its key's partition is down or unreachable.
	MarkNodeKeyedProduceOwnerDown Mark = "node-keyed-produce-owner-down"
	// MarkNodeKeylessAvoidsLowDisk: a keyless record went past a partition
	// whose owner's disk the metastore says is under its reserve.
	MarkNodeKeylessAvoidsLowDisk Mark = "node-keyless-avoids-low-disk"
	// MarkNodeLeaseExpired: reservations lapsed and their records became
	// deliverable again.
	MarkNodeLeaseExpired Mark = "node-lease-expired"
	// MarkNodeLeadershipHandedOver: a draining metadata leader handed its
	// leadership to another member.
	MarkNodeLeadershipHandedOver Mark = "node-leadership-handed-over"
	// MarkNodeHeldServed: a request held for a topic or partition this
	// replica had not applied yet was served once it had it (or, on a
	// replica that does not lead, once the topic was gone).
	MarkNodeHeldServed Mark = "node-held-served"
	// MarkNodeHeldAnsweredByLeader: the metastore leader answered a held
	// request from its state past a read barrier: its own client's 404
	// or 400, or another node's question.
	MarkNodeHeldAnsweredByLeader Mark = "node-held-answered-by-leader"
	// MarkNodeHeldTimedOut: a held request's wait ran out before anyone
	// settled it; it was answered 503.
	MarkNodeHeldTimedOut Mark = "node-held-timed-out"
	// MarkNodeLogEvicted: an idle partition log was closed to stay within
	// the open-log bound.
	MarkNodeLogEvicted Mark = "node-log-evicted"
	// MarkNodeClosedLogLeftClosed: a consume left a log closed intact,
	// its lease table having none of its records to deliver.
	MarkNodeClosedLogLeftClosed Mark = "node-closed-log-left-closed"
	// MarkNodeLogFailed: a partition log hit a storage error and was
	// dropped, to reopen from disk.
	MarkNodeLogFailed Mark = "node-log-failed"
	// MarkNodeLongPollTimedOut: a long poll's wait ran out empty.
	MarkNodeLongPollTimedOut Mark = "node-long-poll-timed-out"
	// MarkNodeLongPollWoken: a parked long poll was answered by a new
	// record.
	MarkNodeLongPollWoken Mark = "node-long-poll-woken"
	// MarkNodeMemberMarkedDead: the leader proposed marking a silent
	// member dead.
	MarkNodeMemberMarkedDead Mark = "node-member-marked-dead"
	// MarkNodeMoveAborted: a destination dropped its session because the
	// assignment it served changed.
	MarkNodeMoveAborted Mark = "node-move-aborted"
	// MarkNodeMoveJobOrphaned: a destination's session ended while its
	// finalize job was out; the job's return cleaned up after it.
	MarkNodeMoveJobOrphaned Mark = "node-move-job-orphaned"
	// MarkNodeMoveCatchupGaveUp: catch-up stopped converging and asked
	// for the handoff anyway.
	MarkNodeMoveCatchupGaveUp Mark = "node-move-catchup-gave-up"
	// MarkNodeMoveForcePromote: a destination promoted its complete copy
	// of a dead source's frozen partition.
	MarkNodeMoveForcePromote Mark = "node-move-force-promote"
	// MarkNodeMoveHandoff: the source answered the freeze; the destination
	// entered the handoff.
	MarkNodeMoveHandoff Mark = "node-move-handoff"
	// MarkNodeMoveInstalled: a destination installed its copy of a moved
	// partition.
	MarkNodeMoveInstalled Mark = "node-move-installed"
	// MarkNodeMoveRestarted: a destination threw its copy away to start
	// the session again.
	MarkNodeMoveRestarted Mark = "node-move-restarted"
	// MarkNodeMoveRolledBack: an ended session removed the copy it had
	// installed, since the flip did not happen.
	MarkNodeMoveRolledBack Mark = "node-move-rolled-back"
	// MarkNodeMoveStalled: a session made no progress within the stall
	// timeout and asked for the move's abort.
	MarkNodeMoveStalled Mark = "node-move-stalled"
	// MarkNodeMoveSourceLost: a session whose source stayed dead past the
	// promotion delay, with a copy it may not promote, asked for the
	// move's abort.
	MarkNodeMoveSourceLost Mark = "node-move-source-lost"
	// MarkNodeMoveStarted: a destination staged a partition and began a
	// move session.
	MarkNodeMoveStarted Mark = "node-move-started"
	// MarkNodeOpenLogsFull: every open log was pinned, so none could close
	// to open another.
	MarkNodeOpenLogsFull Mark = "node-open-logs-full"
	// MarkNodePartitionFlippedAway: a source stopped serving a partition
	// that moved to its new owner.
	MarkNodePartitionFlippedAway Mark = "node-partition-flipped-away"
	// MarkNodePartitionFrozen: a source froze a partition for a move.
	MarkNodePartitionFrozen Mark = "node-partition-frozen"
	// MarkNodePartitionUnfrozen: a source lifted a freeze whose move ended
	// or changed.
	MarkNodePartitionUnfrozen Mark = "node-partition-unfrozen"
	// MarkNodeDestinationRested: the leader rested a destination whose
	// moves kept ending without their flip (node/move_rest.go).
	MarkNodeDestinationRested Mark = "node-destination-rested"
	// MarkNodePlanAbort: the planner asked for a move's abort.
	MarkNodePlanAbort Mark = "node-plan-abort"
	// MarkNodePlanMove: the planner proposed a move.
	MarkNodePlanMove Mark = "node-plan-move"
	// MarkNodeProbeReleased: records a probe reserved for a poll already
	// answered were released for redelivery.
	MarkNodeProbeReleased Mark = "node-probe-released"
	// MarkNodeProduceForwarded: a produce was sent on to the partitions'
	// owners.
	MarkNodeProduceForwarded Mark = "node-produce-forwarded"
	// MarkNodeProduceForwardsJoined: a produce joined a forward already
	// open to the same owner.
	MarkNodeProduceForwardsJoined Mark = "node-produce-forwards-joined"
	// MarkNodeProduceRerouted: a record was placed in another partition
	// than the one preferred.
	MarkNodeProduceRerouted Mark = "node-produce-rerouted"
	// MarkNodeRecoveredTornTail: recovery cut a torn tail off a partition
	// log.
	MarkNodeRecoveredTornTail Mark = "node-recovered-torn-tail"
	// MarkNodeRecoveredZeroTail: recovery found a partition log ending in
	// the zero tail of its active segment (its clean end, not damage), on
	// a log the node had not closed cleanly itself (whose close keeps a
	// short tail): one a crash left.
	MarkNodeRecoveredZeroTail Mark = "node-recovered-zero-tail"
	// MarkNodeDeadLettered: a record that ran out of deliveries was
	// acknowledged in its source once its copy was durable in the
	// dead-letter topic.
	MarkNodeDeadLettered Mark = "node-dead-lettered"
	// MarkNodeDeadLetterFrontierSaved: a dead letter settled while its
	// source's log was closed, and the commit-persist tick opened the log
	// to write the frontier it moved.
	MarkNodeDeadLetterFrontierSaved Mark = "node-dead-letter-frontier-saved"
	// MarkNodeDeadLetterFailed: a dead letter's write failed (or its
	// source partition froze for a move meanwhile); the record is
	// reservable again.
	MarkNodeDeadLetterFailed Mark = "node-dead-letter-failed"
	// MarkNodeDeadLetterOrphaned: a dead letter's write ended after its
	// source partition was dropped or moved away here.
	MarkNodeDeadLetterOrphaned Mark = "node-dead-letter-orphaned"
	// MarkNodeDeadLettersWaitForRelays: exhausted records waited because
	// the node's relays were at RelaysInFlightMax.
	MarkNodeDeadLettersWaitForRelays Mark = "node-dead-letters-wait-for-relays"
	// MarkNodeMoveCarriedLeases: a partition moved here started its lease
	// table from the source's queue state as of the freeze (delivery
	// counts and acks ahead carried).
	MarkNodeMoveCarriedLeases Mark = "node-move-carried-leases"
	// MarkNodeRedelivery: a record was delivered more than once.
	MarkNodeRedelivery Mark = "node-redelivery"
	// MarkNodeStaleCopyDeleted: the sweep deleted a partition copy this
	// node no longer owns.
	MarkNodeStaleCopyDeleted Mark = "node-stale-copy-deleted"
	// MarkNodeVoterRemoved: the leader proposed removing a drained member
	// from the voters.
	MarkNodeVoterRemoved Mark = "node-voter-removed"
	// MarkNodeRetiredMemberForgotten: the leader proposed forgetting a
	// member whose decommission is complete, once dead.
	MarkNodeRetiredMemberForgotten Mark = "node-retired-member-forgotten"
	// MarkNodeWriteFenced: a member refused a write because its own
	// heartbeat is close to making it dead.
	MarkNodeWriteFenced Mark = "node-write-fenced"
)

// The marks of the rebalance planner (package rebalance).
const (
	// MarkMoveAbortPlanned: the planner found a move whose target can no
	// longer take it and planned its abort.
	MarkMoveAbortPlanned Mark = "move-abort-planned"
	// MarkMovePlanBoundReached: the planner stopped at its bound of moves
	// while partitions still wanted one.
	MarkMovePlanBoundReached Mark = "move-plan-bound-reached"
)

// The marks of fan-out (node/fanout*.go): the phases of a cursor.
const (
	// MarkFanoutCursorStarted: a cursor started its attach's epoch at the
	// parent partition's tail (no file, or one of an earlier epoch).
	MarkFanoutCursorStarted Mark = "fanout-cursor-started"
	// MarkFanoutCursorResumed: a cursor carried on from its file (after a
	// restart, a log reopen, or a move that carried it).
	MarkFanoutCursorResumed Mark = "fanout-cursor-resumed"
	// MarkFanoutBatchCopied: a batch became durable at the child's owners
	// and the cursor advanced past it.
	MarkFanoutBatchCopied Mark = "fanout-batch-copied"
	// MarkFanoutBatchFailed: a batch was refused or failed at the child;
	// only this cursor waits to retry.
	MarkFanoutBatchFailed Mark = "fanout-batch-failed"
	// MarkFanoutWaitedForRelay: a cursor with a batch ready found every
	// relay slot taken (RelaysInFlightMax) and waited for one.
	MarkFanoutWaitedForRelay Mark = "fanout-waited-for-relay"
	// MarkFanoutDelayHeld: a delay child's next record was not due yet and
	// its cursor waited.
	MarkFanoutDelayHeld Mark = "fanout-delay-held"
	// MarkFanoutCursorMoved: a move's destination installed the cursors
	// its source reported with the copy.
	MarkFanoutCursorMoved Mark = "fanout-cursor-moved"
	// MarkNodeCommittedOffsetRefused: a sync round's committed offset
	// found no room on the disk for its file and stayed unpersisted.
	MarkNodeCommittedOffsetRefused Mark = "node-committed-offset-refused"
	// MarkFanoutCursorFilesRefused: a sync round's cursor files found no
	// room on the disk and kept their earlier offsets.
	MarkFanoutCursorFilesRefused Mark = "fanout-cursor-files-refused"
	// MarkFanoutRecordsAgedOut: parent records expired before their copy;
	// the cursor skipped to the oldest retained record.
	MarkFanoutRecordsAgedOut Mark = "fanout-records-aged-out"
	// MarkStorageSegmentReopened: a read reopened the file of a sealed
	// segment that its log had closed (past the bound of open sealed
	// files).
	MarkStorageSegmentReopened Mark = "storage-segment-reopened"
	// MarkStorageRecoveredPastHWM: recovery found valid frames past the
	// persisted high watermark (the lazy hwm file lagged at a crash) and
	// made them durable before serving them.
	MarkStorageRecoveredPastHWM Mark = "storage-recovered-past-hwm"
	// MarkStorageReopenedWarm: a log closed cleanly was opened again from
	// the state its close kept, without recovering its directory.
	MarkStorageReopenedWarm Mark = "storage-reopened-warm"
	// MarkStorageSegmentIndexWritten: a sealed segment that the persisted
	// HWM covers got its index file.
	MarkStorageSegmentIndexWritten Mark = "storage-segment-index-written"
	// MarkStorageSegmentIndexLoaded: recovery took a sealed segment's
	// state from its index file instead of scanning it.
	MarkStorageSegmentIndexLoaded Mark = "storage-segment-index-loaded"
	// MarkStorageVerifyFoundDamage: VerifySegments found media damage in
	// a segment recovery had taken from its index file.
	MarkStorageVerifyFoundDamage Mark = "storage-verify-found-damage"
	// MarkStorageSegmentPagedIn: a read took a paged-out sealed segment's
	// positions back from its index file.
	MarkStorageSegmentPagedIn Mark = "storage-segment-paged-in"
)

// Registered lists every mark of the core, in the order declared.
var Registered = []Mark{
	MarkNodeAppendDuringSyncRound, MarkNodeAppendFailed, MarkNodeBatchAck, MarkNodeBatchSpansPartitions, MarkNodeCancelAbortsMove,
	MarkNodeConsumeProbeHit, MarkNodeCorruptRecordSkipped, MarkNodeDestinationRested, MarkNodeFreezeExpired, MarkNodeInstallRepaired,
	MarkNodeJoinAccepted, MarkNodeJoinProposed, MarkNodeJoinRelayed, MarkNodeKeyedProduceOwnerDown, MarkNodeKeylessAvoidsLowDisk, MarkNodeLeaseExpired,
	MarkNodeHeldServed, MarkNodeHeldAnsweredByLeader, MarkNodeHeldTimedOut,
	MarkNodeLeadershipHandedOver, MarkNodeLogEvicted, MarkNodeClosedLogLeftClosed, MarkNodeLogFailed, MarkNodeLongPollTimedOut,
	MarkNodeLongPollWoken, MarkNodeMemberMarkedDead, MarkNodeMoveAborted, MarkNodeMoveJobOrphaned, MarkNodeMoveCatchupGaveUp,
	MarkNodeMoveForcePromote, MarkNodeMoveHandoff, MarkNodeMoveInstalled, MarkNodeMoveRestarted,
	MarkNodeMoveRolledBack, MarkNodeMoveStalled, MarkNodeMoveSourceLost, MarkNodeMoveStarted, MarkNodeOpenLogsFull,
	MarkNodePartitionFlippedAway, MarkNodePartitionFrozen, MarkNodePartitionUnfrozen, MarkNodePlanAbort,
	MarkNodePlanMove, MarkNodeProbeReleased, MarkNodeProduceForwarded, MarkNodeProduceForwardsJoined,
	MarkNodeProduceRerouted, MarkNodeRecoveredTornTail, MarkNodeRecoveredZeroTail, MarkNodeRedelivery, MarkNodeStaleCopyDeleted,
	MarkNodeVoterRemoved, MarkNodeRetiredMemberForgotten, MarkNodeWriteFenced,
	MarkMoveAbortPlanned, MarkMovePlanBoundReached,
	MarkNodeDeadLettered, MarkNodeDeadLetterFailed, MarkNodeDeadLetterOrphaned, MarkNodeDeadLettersWaitForRelays,
	MarkNodeDeadLetterFrontierSaved, MarkNodeMoveCarriedLeases,
	MarkFanoutCursorStarted, MarkFanoutCursorResumed, MarkFanoutBatchCopied, MarkFanoutBatchFailed,
	MarkFanoutDelayHeld, MarkFanoutCursorMoved, MarkFanoutRecordsAgedOut, MarkFanoutWaitedForRelay,
	MarkFanoutCursorFilesRefused, MarkNodeCommittedOffsetRefused,
	MarkStorageSegmentReopened, MarkStorageRecoveredPastHWM, MarkStorageReopenedWarm,
	MarkStorageSegmentIndexWritten, MarkStorageSegmentIndexLoaded, MarkStorageVerifyFoundDamage, MarkStorageSegmentPagedIn,
}
