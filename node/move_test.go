package node

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// startMove proposes a move through the leader and settles.
func (c *clusterHarness) startMove(leader, topicName string, index int, to string) {
	owner := c.owners(leader, topicName)[index]
	_, err := c.nodes[leader].meta.Propose(meta.SetTarget{Topic: topicName, Partition: index, ExpectedOwner: owner, Target: to, NowMs: c.nowMs})
	require.NoError(c.t, err)
	c.settle()
}

// pinnedForAMove makes a three-node cluster with a topic "t" of three
// partitions and one record, payload, pinned to partition 0 at its owner
// (source); target is another node, for a move of that partition.
func pinnedForAMove(t *testing.T, payload string) (c *clusterHarness, leader, source, target string) {
	t.Helper()
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	source = c.owners(leader, "t")[0]
	target = c.otherThan(source)
	require.NoError(t, c.do(source, producePinned("t", 0, payload)).Err)
	return c, leader, source, target
}

// partitionAwayFromLeader picks a partition of t whose owner is not the
// metastore leader and a target that is neither, and pins one record,
// payload, to the partition.
func (c *clusterHarness) partitionAwayFromLeader(leader, payload string) (index int, source, target string) {
	index = slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner != leader })
	source = c.owners(leader, "t")[index]
	target = c.otherThan(source, leader)
	require.NoError(c.t, c.do(source, producePinned("t", index, payload)).Err)
	return index, source, target
}

// tickUntil ticks in steps until done holds.
func (c *clusterHarness) tickUntil(stepMs int64, steps int, done func() bool) {
	for range steps {
		if done() {
			return
		}
		c.tick(stepMs)
	}
	require.True(c.t, done(), "condition not reached after %d ticks of %d ms", steps, stepMs)
}

// TestAMoveCopiesTheLogAndFlipsOwnership: a partition with records, some
// acked, moves to another node under a live copy; after the flip the new
// owner serves every record at the same offsets with the same committed
// offset, unacked records are redelivered there, the old owner writes no
// more, and its stale copy is swept.
func TestAMoveCopiesTheLogAndFlipsOwnership(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	source := c.owners(leader, "t")[0]
	target := c.otherThan(source)
	for i := range 50 {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("r%d", i))).Err)
	}
	got := c.do(source, msg.Consume{Topic: "t", Partition: 0, Max: 10})
	handles := []string{}
	for _, m := range got.Result.(msg.ConsumeResult).Messages {
		handles = append(handles, m.ReceiptHandle)
	}
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: handles[:5], Action: msg.AckCommit, Batch: true}).Err)

	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target })
	c.tick(100)
	require.Equal(t, target, c.owners(source, "t")[0], "the source applied the flip")
	_, served := c.nodes[source].partitions[partitionKey{"t", 0}]
	require.False(t, served, "the source let the partition go")

	for i := range 50 {
		replayed := c.do(source, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
		require.NoError(t, replayed.Err)
		require.Equal(t, fmt.Sprintf("r%d", i), string(replayed.Result.(msg.ReplayResult).Message.Payload))
	}
	next := c.do(target, msg.Consume{Topic: "t", Partition: 0})
	require.Equal(t, uint64(5), next.Result.(msg.ConsumeResult).Messages[0].Offset,
		"the committed offset moved with the log; reserved but unacked records are redelivered")
	produced := c.do(source, producePinned("t", 0, "after"))
	require.NoError(t, produced.Err)
	require.Equal(t, uint64(50), produced.Result.(msg.ProduceResult).Records[0].Offset, "the new owner appends after the copy")

	c.tickUntil(1_000, 30, func() bool {
		_, err := c.nodes[source].fs.Stat(PartitionDir("t", 0))
		return err != nil
	})
}

// TestAFrozenPartitionReroutesProduce: while the source is frozen for a
// move, keyless produces go to other partitions and never wait, commits
// are refused (retryable) and nothing is delivered.
func TestAFrozenPartitionReroutesProduce(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	source := owners[0]
	require.NoError(t, c.do(source, producePinned("t", 0, "x")).Err)
	target := c.otherThan(source)
	if target == leader {
		target = c.otherThan(source, leader)
	}
	c.cut[target] = true // the destination never hears of the move: it never copies
	c.startMove(leader, "t", 0, target)
	frozen := c.nodes[source].partitions[partitionKey{"t", 0}]
	started, _ := c.nodes[source].meta.State().Assignment("t", 0)
	c.nodes[source].moveFreeze(asForwarded(c.nodes[source], target), freezeOf(c.nodes[source], "t", 0, target, started.MoveStartedAtMs))
	c.settle()
	require.Equal(t, target, frozen.freeze.Target())

	for i := range 6 {
		id := c.send(source, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: fmt.Appendf(nil, "k%d", i)}}})
		reply := c.await(id, 100, 30) // a record headed for the cut node waits out one forward timeout
		require.NoError(t, reply.Err)
		require.NotEqual(t, 0, reply.Result.(msg.ProduceResult).Records[0].Partition, "the frozen partition takes no record")
		c.tick(10)
	}
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.do(source, producePinned("t", 0, "pinned")).Err))
	held := c.do(source, msg.Consume{Topic: "t", Partition: 0})
	require.NoError(t, held.Err)
	require.Empty(t, held.Result.(msg.ConsumeResult).Messages, "a frozen partition delivers nothing: its acks would be refused")

	c.tickUntil(1_000, 40, func() bool { return !frozen.freeze.Frozen() })
	resumed := c.do(source, msg.Consume{Topic: "t", Partition: 0})
	require.Len(t, resumed.Result.(msg.ConsumeResult).Messages, 1, "deliveries resume with the abort")
	a, _ := c.nodes[leader].meta.State().Assignment("t", 0)
	require.Equal(t, meta.Assignment{Owner: source, LastMoveStartedAtMs: a.LastMoveStartedAtMs}, a, "the freeze TTL aborted the move")
	require.NoError(t, c.do(source, producePinned("t", 0, "resumed")).Err, "writes resume once the abort applied")
}

// holding counts the partitions a node owns, as node at sees it.
func (c *clusterHarness) holding(at, topicName, id string) int {
	return countOf(c.owners(at, topicName), id)
}

// TestAJoinedNodeReceivesItsShare: the planner on the leader moves
// partitions to a node that joins, until every node holds its share.
func TestAJoinedNodeReceivesItsShare(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 8)
	for i := range 8 {
		require.NoError(t, c.do(leader, producePinned("t", i, fmt.Sprintf("r%d", i))).Err)
	}
	c.join("n4")
	c.tickUntil(100, 300, func() bool {
		return c.holding(leader, "t", "n4") == 2 && len(c.nodes[leader].meta.State().Moves()) == 0
	})
	for _, id := range c.ids {
		require.Equal(t, 2, c.holding(leader, "t", id), "eight partitions over four nodes")
	}
	for i := range 8 {
		replayed := c.do("n4", msg.Replay{Topic: "t", Partition: i, Offset: 0})
		require.NoError(t, replayed.Err)
		require.Equal(t, fmt.Sprintf("r%d", i), string(replayed.Result.(msg.ReplayResult).Message.Payload), "every record moved with its partition")
	}
}

// TestDecommissionDrainsANodeAndRetiresItsVote: a draining node sheds
// every partition to the others and leaves the voter set (four voters
// become three), while the topic keeps every record.
func TestDecommissionDrainsANodeAndRetiresItsVote(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 8)
	for i := range 8 {
		require.NoError(t, c.do(leader, producePinned("t", i, fmt.Sprintf("r%d", i))).Err)
	}
	leaving := c.otherThan(leader)
	require.NoError(t, c.do(c.otherThan(leader, leaving), msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool {
		_, voter := c.nodes[leader].meta.State().PeerByNodeID(leaving)
		return !voter
	})
	require.Zero(t, c.holding(leader, "t", leaving))
	require.Len(t, c.nodes[leader].meta.State().Peers(), 3)
	member, _ := c.nodes[leader].meta.State().Member(leaving)
	require.True(t, member.Draining, "the drain flag stays: the node receives nothing again")
	for _, listed := range c.do(leader, msg.ListMembers{}).Result.(msg.MembersResult).Members {
		require.Equal(t, listed.ID != leaving, listed.Voter, "members list who votes: %+v", listed)
	}
	for i := range 8 {
		replayed := c.do(leader, msg.Replay{Topic: "t", Partition: i, Offset: 0})
		require.Equal(t, fmt.Sprintf("r%d", i), string(replayed.Result.(msg.ReplayResult).Message.Payload))
	}
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.do(leader, msg.Decommission{ID: "nobody"}).Err))
}

// TestADecommissionNobodyCanTakeIsRefused: with every other member
// draining, a drain could never end (and topic creation would answer 503
// for good), so it is refused at once (409), changing nothing; a
// single node cannot be decommissioned either.
func TestADecommissionNobodyCanTakeIsRefused(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	first, second := c.otherThan(leader), ""
	for id := range c.nodes {
		if id != leader && id != first {
			second = id
		}
	}
	require.NoError(t, c.do(leader, msg.Decommission{ID: first}).Err)
	require.NoError(t, c.do(leader, msg.Decommission{ID: second}).Err, "the leader still takes partitions")
	c.tick(100)
	refused := c.do(leader, msg.Decommission{ID: leader}).Err
	require.Equal(t, msg.CodeConflict, msg.CodeOf(refused))
	require.Contains(t, refused.Error(), "no other member can take")
	member, _ := c.nodes[leader].meta.State().Member(leader)
	require.False(t, member.Draining, "nothing changed")
	require.NoError(t, c.do(leader, msg.Decommission{ID: second, Cancel: true}).Err)
	c.tick(100)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leader}).Err, "with a receiver back, it drains")

	h := newHarness(t)
	single := h.do(msg.Decommission{ID: h.cfg.NodeID}).Err
	require.Equal(t, msg.CodeConflict, msg.CodeOf(single), "a single node")
	require.Contains(t, single.Error(), "no other member can take")
}

// TestASourceRestartedMidMoveStaysFrozen: a source that answered a freeze
// and then crashed comes back frozen (the destination may hold its final
// state), and resumes writes only when the move's abort applies.
func TestASourceRestartedMidMoveStaysFrozen(t *testing.T) {
	c, leader, source := restartedFrozenSource(t)
	refused := c.do(source, producePinned("t", 0, "after restart")).Err
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused), "still frozen after the restart: %v", refused)
	c.tickUntil(1_000, 60, func() bool {
		a, _ := c.nodes[leader].meta.State().Assignment("t", 0)
		return a.Target == ""
	})
	c.tick(100)
	require.NoError(t, c.do(source, producePinned("t", 0, "resumed")).Err)
}

// TestASourceRestartedMidMoveAbortsTheMoveUntouched: the freeze a source
// holds since its restart expires after the TTL and asks for the move's
// abort even when no request ever builds the partition's state (a child
// partition the fan-out has nothing to copy into, say). The destination
// is alive but never hears the source (a one-pair cut), so it would wait
// StallTimeoutMs (60 s) before giving the move up, and the leader has no
// reason to: only the source's TTL ends the move sooner. Seed 10 of the
// three-node moves world with -weather=on failed the freeze-ttl check
// without it.
func TestASourceRestartedMidMoveAbortsTheMoveUntouched(t *testing.T) {
	c, leader, index, source, target := restartedFrozenSourceCutFromTarget(t, "x")
	require.Equal(t, []FrozenPartition{{Topic: "t", Partition: index, Target: target}}, c.nodes[source].FrozenPartitions(),
		"frozen since the start, before any request")
	c.tickUntil(500, 6, func() bool {
		a, _ := c.nodes[leader].meta.State().Assignment("t", index)
		return a.Target == ""
	})
	require.NoError(t, c.do(source, producePinned("t", index, "resumed")).Err)
}

// restartedFrozenSourceCutFromTarget moves a partition of t holding one
// record, payload, whose owner (source) is not the metastore leader, to a
// target the source cannot talk to (a one-pair cut), and restarts the
// source with a freeze TTL of 500 ms: it never answered a freeze, but it
// restarts frozen all the same (freezeMovesFromHere), and its TTL asks for
// the move's abort.
func restartedFrozenSourceCutFromTarget(t *testing.T, payload string) (c *clusterHarness, leader string, index int, source, target string) {
	t.Helper()
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	index, source, target = c.partitionAwayFromLeader(leader, payload)
	c.drop = func(env msg.Envelope) bool {
		return env.From == source && env.To == target || env.From == target && env.To == source
	}
	c.startMove(leader, "t", index, target)
	cfg := c.configs[source]
	cfg.Moves.FreezeTTLMs = 500
	c.configs[source] = cfg
	c.crash(source)
	c.tick(100)
	return c, leader, index, source, target
}

// A move's end without a flip unfreezes the source's partition, whose
// records are then served again: a poll parked on another node, which
// asked the source while it was frozen and got nothing, is told at once
// (Notify), as it is of new records. It was woken only on the source, so
// the poll elsewhere waited out its wait with the record there.
func TestAnUnfrozenPartitionWakesPollsParkedOnOtherNodes(t *testing.T) {
	c, leader, _, source, _ := restartedFrozenSourceCutFromTarget(t, "held")
	require.NotEmpty(t, c.nodes[source].FrozenPartitions())

	poll := c.send(leader, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 30_000})
	c.settle()
	_, answered := c.replies[poll]
	require.False(t, answered, "the only record is frozen at the source: the poll parks")

	c.tickUntil(100, 60, func() bool { return len(c.nodes[source].FrozenPartitions()) == 0 })
	reply, answered := c.replies[poll]
	require.True(t, answered, "the source's unfreeze notified the poll parked on %s", leader)
	require.NoError(t, reply.Err)
	require.Equal(t, "held", string(reply.Result.(msg.ConsumeResult).Messages[0].Payload))
}

// restartedFrozenSource moves partition 0 of t to a node that is cut off,
// freezes the source for it and restarts the source.
func restartedFrozenSource(t *testing.T) (c *clusterHarness, leader, source string) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	source = c.owners(leader, "t")[0]
	require.NoError(t, c.do(source, producePinned("t", 0, "x")).Err)
	target := c.otherThan(source, leader)
	if source == leader {
		target = c.otherThan(source)
	}
	c.cut[target] = true
	c.startMove(leader, "t", 0, target)
	freezeID := asForwarded(c.nodes[source], target)
	started, _ := c.nodes[source].meta.State().Assignment("t", 0)
	c.nodes[source].moveFreeze(freezeID, freezeOf(c.nodes[source], "t", 0, target, started.MoveStartedAtMs))
	c.settle()
	c.crash(source)
	c.tick(100)
	return c, leader, source
}

// TestASourceRestartedMidMoveIsFrozenOnceARequestOpensThePartition pins
// the freeze at start (freezeMovesFromHere): the first request that uses
// the partition after the restart (here a replay) must not thaw it
// (docs/necessity.md).
func TestASourceRestartedMidMoveIsFrozenOnceARequestOpensThePartition(t *testing.T) {
	c, _, source := restartedFrozenSource(t)
	require.NoError(t, c.do(source, msg.Replay{Topic: "t", Partition: 0, Offset: 0}).Err)
	_, built := c.nodes[source].partitions[partitionKey{"t", 0}]
	require.True(t, built, "the replay built the partition's state")
	refused := c.do(source, producePinned("t", 0, "after the replay")).Err
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused), "still frozen: %v", refused)
}

// TestADestinationCrashAfterInstallStillFlips: a destination that crashes
// between installing its copy and the flip (its CompleteMove never reached
// the leader) starts the move over, installs over its old install and
// completes; every record is there.
func TestADestinationCrashAfterInstallStillFlips(t *testing.T) {
	c, leader, source, target := installedUnflipped(t, 20)
	c.crash(target)
	c.drop = nil
	c.tickUntil(100, 200, func() bool { return c.owners(leader, "t")[0] == target })
	c.tick(100)
	requireRecordsAt(t, c, source, 20)
}

// TestCancelledDecommissionAbortsMovesNotYetCopying: cancelling a drain
// clears the targets of the moves whose destination has not copied
// anything yet; the member keeps those partitions.
func TestCancelledDecommissionAbortsMovesNotYetCopying(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 8)
	leaving := c.otherThan(leader)
	before := c.holding(leader, "t", leaving)
	require.Positive(t, before)
	c.drop = func(env msg.Envelope) bool { // no destination gets to copy
		forward, ok := env.Message.(msg.ForwardRequest)
		if !ok {
			return false
		}
		_, status := forward.Request.(msg.MoveStatus)
		return status
	}
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tick(1_100) // a planning round
	require.NotEmpty(t, c.nodes[leader].meta.State().Moves(), "the drain started moves")
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving, Cancel: true}).Err)
	c.tick(100)
	require.Empty(t, c.nodes[leader].meta.State().Moves(), "moves that had not started copying were aborted")
	require.Equal(t, before, c.holding(leader, "t", leaving))
	member, _ := c.nodes[leader].meta.State().Member(leaving)
	require.False(t, member.Draining)
}

// TestADecommissionedNodeIsNotReady: once out of the voter set, a drained
// node says it is not serving (its readiness probe fails).
func TestADecommissionedNodeIsNotReady(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.elect()
	leaving := c.otherThan(leader)
	require.NoError(t, c.nodes[leaving].Serving())
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool { return c.nodes[leaving].Serving() != nil })
	_, voter := c.nodes[leader].meta.State().PeerByNodeID(leaving)
	require.False(t, voter)
}

// TestADestinationNeverPromotesAStateThatWasNotFrozen: a destination that
// copied everything its source reported, but whose source died before it
// answered the freeze, never force-promotes its copy, however long it
// waits: the source may have acknowledged records after the state the
// copy holds, and promoting it would lose them (the bug of seeds 186, 163
// and 112). The move waits for the source instead, here past the promotion
// delay; after the stall timeout too (60 s by default, longer than this
// test) it is aborted (TestAMoveWhoseSourceDiedFreesItsSlotForADrain).
func TestADestinationNeverPromotesAStateThatWasNotFrozen(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	partition := slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner != leader })
	source := c.owners(leader, "t")[partition]
	target := c.otherThan(source, leader)
	for i := range 20 {
		require.NoError(t, c.do(source, producePinned("t", partition, fmt.Sprintf("r%d", i))).Err)
	}
	c.drop = func(env msg.Envelope) bool { // the freeze never reaches the source
		forward, ok := env.Message.(msg.ForwardRequest)
		_, freeze := forward.Request.(msg.MoveFreeze)
		return ok && freeze
	}
	const forcePromoteAfterMs = 5_000
	c.nodes[target].cfg.Moves.ForcePromoteAfterMs = forcePromoteAfterMs
	c.nodes[target].cfg.Moves.LagBytes = 0 // CatchUp copies all before it asks for the freeze
	c.startMove(leader, "t", partition, target)
	c.tick(100)
	sessions := c.nodes[target].MoveSessions()
	require.Len(t, sessions, 1)
	require.Equal(t, sessions[0].BytesTotal, sessions[0].BytesCopied, "the copy holds all the source reported: %+v", sessions[0])

	c.cut[source] = true
	for range 4 * (c.configs[leader].MemberDeadAfterMs + forcePromoteAfterMs) / 1_000 {
		c.tick(1_000)
	}
	member, _ := c.nodes[leader].meta.State().Member(source)
	require.False(t, member.Alive, "the source is dead in the metastore")
	assignment, _ := c.nodes[leader].meta.State().Assignment("t", partition)
	require.Equal(t, meta.Assignment{Owner: source, Target: target, MoveStartedAtMs: assignment.MoveStartedAtMs, LastMoveStartedAtMs: assignment.MoveStartedAtMs}, assignment,
		"the copy was not promoted; the move waits for the source")
	require.Len(t, c.nodes[target].MoveSessions(), 1, "the destination still waits")
}

// TestAStaleFlipOfAReplacedMoveFails: a destination's flip proposal that
// arrives after its move was aborted and a new move with the same source
// and target began fails its guard, because the flip names the start of
// the move it belongs to (the ABA bug of seed 301). The source took
// writes between the two moves; a stale flip that passed would have
// handed the partition to a copy that lacks them.
func TestAStaleFlipOfAReplacedMoveFails(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	partition, source, target := c.partitionAwayFromLeader(leader, "before")
	var held []msg.Envelope // the target's proposals, held back
	c.drop = func(env msg.Envelope) bool {
		raft, ok := env.Message.(msg.RaftMessage)
		if ok && env.From == target && raft.Message.GetType() == raftpb.MsgProp {
			held = append(held, env)
			return true
		}
		return false
	}
	c.startMove(leader, "t", partition, target)
	require.Equal(t, "flip", c.nodes[target].MoveSessions()[0].Phase, "installed; its flip is held back")
	staleFlips := len(held)
	require.Positive(t, staleFlips)

	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: "t", Partition: partition, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, "t")})
	require.NoError(t, err)
	c.tick(100)
	require.NoError(t, c.do(source, producePinned("t", partition, "between the moves")).Err)
	c.tick(100)
	c.startMove(leader, "t", partition, target)
	for _, env := range held[:staleFlips] {
		_ = c.nodes[leader].Step(env)
	}
	c.settle()
	assignment, _ := c.nodes[leader].meta.State().Assignment("t", partition)
	require.Equal(t, source, assignment.Owner, "the stale flip failed its guard")
	require.Equal(t, target, assignment.Target, "the new move goes on")
}

// TestAStatusAnswerSaysFrozenOnlyForTheAskingMove: a source frozen for
// one move answers the status requests of any other move (another
// target, or the same target under a newer move) with no state at all:
// its replica does not show that move. A source restarted frozen for a
// move its replica had not yet seen aborted used to answer the next
// move's status requests with Frozen set; that destination took it for
// its final state and, when the source died after unfreezing and
// acknowledging more records, promoted a copy without them (seed 2698
// lost eleven).
func TestAStatusAnswerSaysFrozenOnlyForTheAskingMove(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	source := c.owners(leader, "t")[0]
	require.NoError(t, c.do(source, producePinned("t", 0, "x")).Err)
	target := c.otherThan(source, leader)
	if source == leader {
		target = c.otherThan(source)
	}
	c.cut[target] = true // the destination never acts; the test asks in its place
	c.startMove(leader, "t", 0, target)
	started, _ := c.nodes[source].meta.State().Assignment("t", 0)
	c.nodes[source].moveFreeze(asForwarded(c.nodes[source], target), freezeOf(c.nodes[source], "t", 0, target, started.MoveStartedAtMs))
	c.settle()

	status := func(asker string, startedAtMs int64) (msg.Result, error) {
		return c.nodes[source].moveStatus(statusOf(c.nodes[source], "t", 0, asker, startedAtMs))
	}
	result, err := status(target, started.MoveStartedAtMs)
	require.NoError(t, err)
	require.True(t, result.(msg.MoveSourceState).Frozen, "frozen for the move that asks: a final state")
	require.Equal(t, uint64(1), result.(msg.MoveSourceState).HWM)
	for _, other := range []struct {
		target    string
		startedMs int64
	}{{target, started.MoveStartedAtMs + 1}, {c.otherThan(source, target), started.MoveStartedAtMs}} {
		result, err := status(other.target, other.startedMs)
		require.Equal(t, msg.CodeConflict, msg.CodeOf(err), "a move the replica does not show: %+v", other)
		require.Nil(t, result)
	}
}

// TestAFreezeDuringASyncRoundWaitsForTheRecordsAcceptedBeforeIt: with
// pipelined group commit, a freeze that arrives while a round is in flight
// and after a later record was accepted is answered only once that record
// is durable too, with a state that includes it (the copy must hold every
// record the source will acknowledge).
func TestAFreezeDuringASyncRoundWaitsForTheRecordsAcceptedBeforeIt(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	source := c.owners(leader, "t")[0]
	require.NoError(t, c.do(source, producePinned("t", 0, "x")).Err)
	target := c.otherThan(source)
	if target == leader {
		target = c.otherThan(source, leader)
	}
	c.cut[target] = true
	c.startMove(leader, "t", 0, target)
	n := c.nodes[source]
	c.send(source, producePinned("t", 0, "in-the-round"))
	inFlight := n.Ready()
	c.send(source, producePinned("t", 0, "accepted-meanwhile"))
	started, _ := n.meta.State().Assignment("t", 0)
	n.moveFreeze(asForwarded(n, target), freezeOf(n, "t", 0, target, started.MoveStartedAtMs))
	for _, s := range inFlight.Syncs {
		require.NoError(t, s.Run())
	}
	n.Advance(inFlight)
	next := n.Ready()
	require.Nil(t, freezeAnswer(next), "the record accepted before the freeze is not durable yet")
	for _, s := range next.Syncs {
		require.NoError(t, s.Run())
	}
	n.Advance(next)
	answer := freezeAnswer(n.Ready())
	require.NotNil(t, answer, "answered once every record accepted before the freeze is durable")
	require.Equal(t, uint64(3), answer.Reply.Result.(msg.MoveSourceState).HWM)
}

// freezeAnswer finds the msg.ForwardReply to forward 1 among a Ready's
// messages.
func freezeAnswer(rd Ready) *msg.ForwardReply {
	for _, env := range rd.Messages {
		if reply, ok := env.Message.(msg.ForwardReply); ok && reply.ID == 1 {
			return &reply
		}
	}
	return nil
}

// asForwarded registers a request as one the peer from forwarded (as
// stepForwardRequest does, so that its reply goes back to from) and
// returns its request id: a test asks in a destination's place.
func asForwarded(n *Node, from string) msg.RequestID {
	return forwardedRequestBit | n.servedID(n.routing.served.Forwarded(incoming{from: from, id: 1}))
}

// deadLetterTopicToMove makes topic "t" with maxDeliveries and the
// dead-letter topic "dead" on three nodes, and names the source of
// partition 0 and another node to move it to.
func deadLetterTopicToMove(t *testing.T, maxDeliveries int) (c *clusterHarness, leader, source, target string) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("dead", 3)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3, MaxDeliveries: maxDeliveries, DeadLetterTopic: "dead"}).Err)
	c.tick(100)
	source = c.owners(leader, "t")[0]
	return c, leader, source, c.otherThan(source)
}

// TestDeliveryCountsTravelWithAMove: the new owner of a moved partition
// goes on from the source's delivery counts and acks as of the freeze: a
// record delivered twice there is delivered a third time here, one acked
// ahead of the committed offset is not delivered again, and a record that
// ran out of deliveries goes to the dead-letter topic from here.
func TestDeliveryCountsTravelWithAMove(t *testing.T) {
	c, leader, source, target := deadLetterTopicToMove(t, 3)
	for i := range 3 {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("r%d", i))).Err)
	}
	consume := func(at string) msg.Message {
		reply := c.do(at, msg.Consume{Topic: "t", Partition: 0})
		require.NoError(t, reply.Err)
		messages := reply.Result.(msg.ConsumeResult).Messages
		require.Len(t, messages, 1, "a message at %s", at)
		return messages[0]
	}
	first := consume(source)
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: []string{first.ReceiptHandle}, Action: msg.AckNack}).Err)
	again := consume(source)
	require.Equal(t, uint32(2), again.DeliveryCount, "offset 0 delivered twice at the source")
	acked := consume(source)
	require.Equal(t, uint64(1), acked.Offset)
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: []string{acked.ReceiptHandle}, Action: msg.AckCommit}).Err)

	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target && c.owners(target, "t")[0] == target })
	c.tick(100)

	third := consume(target)
	require.Equal(t, uint64(0), third.Offset)
	require.Equal(t, uint32(3), third.DeliveryCount, "the count carried on from the source")
	next := consume(target)
	require.Equal(t, uint64(2), next.Offset, "offset 1, acked ahead at the source, is not delivered again")
	require.Equal(t, uint32(1), next.DeliveryCount)
	require.NoError(t, c.do(target, msg.Ack{Topic: "t", Handles: []string{third.ReceiptHandle}, Action: msg.AckNack}).Err)
	c.tick(100)
	c.tickUntil(100, 30, func() bool {
		p := c.nodes[target].partitions[partitionKey{"t", 0}]
		return p != nil && p.leases.Committed() == 2
	})
}

// TestARecordReturnedUnseenTravelsUnseen: a record whose one reservation
// was handed back before any consumer saw it (a probe's AckReturn) is
// delivered by the new owner of its partition, even with max_deliveries
// 1, instead of going to the dead-letter topic unseen.
func TestARecordReturnedUnseenTravelsUnseen(t *testing.T) {
	c, leader, source, target := deadLetterTopicToMove(t, 1)
	require.NoError(t, c.do(source, producePinned("t", 0, "r0")).Err)
	reply := c.do(source, msg.Consume{Topic: "t", Partition: 0})
	require.NoError(t, reply.Err)
	reserved := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, reserved, 1)
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: []string{reserved[0].ReceiptHandle}, Action: msg.AckReturn, Batch: true}).Err)

	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target && c.owners(target, "t")[0] == target })
	c.tick(100)

	reply = c.do(target, msg.Consume{Topic: "t", Partition: 0})
	require.NoError(t, reply.Err)
	delivered := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, delivered, 1, "the record no consumer saw is delivered, not dead-lettered")
	require.Equal(t, "r0", string(delivered[0].Payload))
	require.Equal(t, uint32(1), delivered[0].DeliveryCount, "its first delivery a consumer sees")
}

// TestAMovedInLogNobodyReadClosesWithItsTopic: the destination adopts the
// verified copy into its store at the flip, before any request made it
// open the partition; deleting the topic must close that log too, or a
// re-created topic's partition moved to the same node can never install
// ("a log is open there already") and the move cycles forever (five-node
// moves seed 2, once the restarted-voter fix changed its trace).
func TestAMovedInLogNobodyReadClosesWithItsTopic(t *testing.T) {
	c, leader, _, target := pinnedForAMove(t, "before")
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })
	dir := PartitionDir("t", 0)
	require.True(t, c.nodes[target].store.IsOpen(dir), "the flip leaves the adopted copy open")

	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	c.tick(100)
	require.False(t, c.nodes[target].store.IsOpen(dir), "the deleted topic's moved-in log is closed")

	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	c.tick(100)
	owner := c.owners(leader, "t")[0]
	require.NotEqual(t, target, owner, "the re-created partition starts away from the old destination")
	require.NoError(t, c.do(owner, producePinned("t", 0, "after")).Err)
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })
	replayed := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: 0})
	require.NoError(t, replayed.Err)
	require.Equal(t, "after", string(replayed.Result.(msg.ReplayResult).Message.Payload))
}

// installedAwaitingFlip moves partition 0 of "t" (one record) to another
// node whose flip never reaches the leader: the copy is installed and
// open at the target, in phase flip. It returns the harness, the leader,
// the target and the partition's directory.
func installedAwaitingFlip(t *testing.T) (*clusterHarness, string, string, string) {
	t.Helper()
	c, leader, _, target := pinnedForAMove(t, "r")
	c.drop = func(env msg.Envelope) bool { // the target's flip never reaches the leader
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.From == target && raft.Message.GetType() == raftpb.MsgProp
	}
	c.startMove(leader, "t", 0, target)
	require.Equal(t, "flip", c.nodes[target].MoveSessions()[0].Phase)
	dir := PartitionDir("t", 0)
	require.True(t, c.nodes[target].store.IsOpen(dir), "the installed copy is open")
	return c, leader, target, dir
}

// TestAnAbortAfterTheInstallRollsTheCopyBack pins the destination's roll
// back (endSession with RollsBack): a move aborted after its copy was
// installed, before its flip applied, closes and deletes that copy, or the
// node would hold an open log and a directory of a partition it does not
// own, and a later move of it back here could not install
// (docs/necessity.md).
func TestAnAbortAfterTheInstallRollsTheCopyBack(t *testing.T) {
	c, leader, target, dir := installedAwaitingFlip(t)

	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, "t")})
	require.NoError(t, err)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions())
	require.False(t, c.nodes[target].store.IsOpen(dir), "the rolled back copy is closed")
	_, err = c.disks[target].Stat(dir)
	require.Error(t, err, "the rolled back copy is deleted")
}

// TestAFreezeForAMoveTheSourceHasNotAppliedIsRefused pins moveFreeze's
// check of the applied move: a source asked to freeze for a move its
// replica does not show yet refuses and stays writable. Were it to
// freeze, the next reconcile would thaw it (the applied placement has no
// such move) after it had answered a final state, and records it then
// accepted would be missing from the copy (docs/necessity.md).
func TestAFreezeForAMoveTheSourceHasNotAppliedIsRefused(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	source := c.owners(leader, "t")[0]
	target := c.otherThan(source)
	n := c.nodes[source]
	require.NoError(t, c.do(source, producePinned("t", 0, "x")).Err)
	n.moveFreeze(asForwarded(n, target), freezeOf(n, "t", 0, target, c.nowMs))
	answer := freezeAnswer(n.Ready())
	require.NotNil(t, answer)
	require.Equal(t, msg.CodeConflict, msg.CodeOf(answer.Reply.Err))
	require.True(t, n.AcceptsWrites("t", 0), "the source did not freeze")
}

// finalizeJobHeld moves partition 0 of "t" (one record) to another node
// with the drivers holding jobs back, until the target's finalize job is
// held. It returns the harness, the leader, the source, the target and
// the held job.
func finalizeJobHeld(t *testing.T) (*clusterHarness, string, string, string, heldJob) {
	t.Helper()
	c, leader, source, target := pinnedForAMove(t, "r")
	c.holdJobs = true
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return len(c.held) > 0 })
	out := c.held[0]
	require.Same(t, c.nodes[target], out.node)
	return c, leader, source, target, out
}

// TestASessionEndedWhileItsJobIsOutLeavesTheFilesToTheJob: a driver runs
// the finalize job on a goroutine of its own, so a move aborted meanwhile
// must not close or delete the staged copy under it, nor start another
// session into the same directories; the job's return cleans up (the
// copy it installed goes only once no move targets this node: see
// TestAnAbortedJobsCopyGoesOnceNoMoveTargetsTheNode).
func TestASessionEndedWhileItsJobIsOutLeavesTheFilesToTheJob(t *testing.T) {
	c, leader, _, target, out := finalizeJobHeld(t)
	staged := out.job.pending.job.stagedDir

	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, "t")})
	require.NoError(t, err)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions(), "the aborted session ended")
	_, err = c.disks[target].Stat(staged)
	require.NoError(t, err, "the staged copy the job works on is left to it")
	c.startMove(leader, "t", 0, target)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions(), "no session starts into directories a job still owns")

	out.job.Run()
	require.NoError(t, out.job.pending.job.err, "the job ran on files nobody closed under it")
	out.node.JobDone(out.job)
	c.held = nil
	_, err = c.disks[target].Stat(staged)
	require.Error(t, err, "the job's return removed the staged copy")
	_, err = c.disks[target].Stat(PartitionDir("t", 0))
	require.NoError(t, err, "the copy it installed stays for the next move into this node, whose install sets it aside")
	c.holdJobs = false
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })
}

// TestAnAbortedJobsCopyGoesOnceNoMoveTargetsTheNode: the job of an
// aborted move returns to a node that neither owns nor targets the
// partition: what it installed goes with its staged copy, and the
// partition stays its source's.
func TestAnAbortedJobsCopyGoesOnceNoMoveTargetsTheNode(t *testing.T) {
	c, leader, source, target, out := finalizeJobHeld(t)
	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, "t")})
	require.NoError(t, err)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions(), "the aborted session ended")

	out.job.Run()
	require.NoError(t, out.job.pending.job.err)
	out.node.JobDone(out.job)
	c.held, c.holdJobs = nil, false
	_, err = c.disks[target].Stat(PartitionDir("t", 0))
	require.ErrorIs(t, err, storage.ErrNotExist, "the copy of a move that ended without a flip goes")
	require.Equal(t, source, c.owners(target, "t")[0])
}

// proposeFlip has the leader propose the flip of partition 0 of t from
// source to target, guarded by the move it applies to.
func (c *clusterHarness) proposeFlip(leader, source, target string) {
	a, ok := c.nodes[leader].meta.State().Assignment("t", 0)
	require.True(c.t, ok)
	_, err := c.nodes[leader].meta.Propose(meta.CompleteMove{Topic: "t", Partition: 0, ExpectedOwner: source,
		ExpectedTarget: target, ExpectedStartedAtMs: a.MoveStartedAtMs, ExpectedCreation: c.creation(leader, "t")})
	require.NoError(c.t, err)
}

// returnHeldJob runs the held finalize job, hands its end back to its
// node, stops holding jobs and ticks.
func (c *clusterHarness) returnHeldJob(out heldJob) {
	out.job.Run()
	require.NoError(c.t, out.job.pending.job.err)
	out.node.JobDone(out.job)
	c.held, c.holdJobs = nil, false
	c.tick(100)
}

// A partition the new owner could not serve at its flip, because the
// move's install job was still out, becomes servable when the job comes
// back: a poll parked on a third node, which the flip's Notify and its own
// probes found nothing for, is told then. It was told nothing, and waited
// out its wait with the record servable at the new owner.
func TestAKeptInstallJobNotifiesPollsParkedElsewhere(t *testing.T) {
	c, leader, source, target, out := finalizeJobHeld(t)
	c.proposeFlip(leader, source, target)
	third := c.otherThan(source, target)
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target && c.owners(third, "t")[0] == target })

	poll := c.send(third, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 30_000})
	c.tick(100)
	_, answered := c.replies[poll]
	require.False(t, answered, "the only record is behind the install: the poll parks")

	c.returnHeldJob(out)
	reply, answered := c.replies[poll]
	require.True(t, answered, "the record servable at %s was offered to the poll parked on %s", target, third)
	require.NoError(t, reply.Err)
	require.Equal(t, "r", string(reply.Result.(msg.ConsumeResult).Messages[0].Payload))
}

// Property: when the flip of a move applies while the destination's
// session for that same move has its finalize job out (an earlier
// incarnation proposed the flip before it crashed, and the session
// started again), the partition is not opened until the job is back, and
// the copy the job installed stays as the partition's log instead of
// being discarded as an aborted move's (necessity seed 2500067, with the
// N10 check removed: the job's return deleted the new owner's directory
// under its open log, and 106 acknowledged records were lost).
func TestAFlipAppliedWhileTheInstallRunsKeepsTheInstalledCopy(t *testing.T) {
	c, leader, source, target, out := finalizeJobHeld(t)

	c.proposeFlip(leader, source, target)
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })
	require.Empty(t, c.nodes[target].MoveSessions(), "the flipped session ended with its job out")
	refused := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: 0})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "nothing opens the directory the job installs into")

	c.returnHeldJob(out)
	_, err := c.disks[target].Stat(out.job.pending.job.stagedDir)
	require.Error(t, err, "the staged copy went")
	replayed := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: 0})
	require.NoError(t, replayed.Err, "the installed copy is the partition's log")
	require.Equal(t, "r", string(replayed.Result.(msg.ReplayResult).Message.Payload))
}

// TestADeletedTopicClosesAnInstalledCopyBeforeItsDirectoryGoes: a topic
// deleted while a move's copy of one of its partitions is installed at
// the target, its flip not applied, closes that open log as it drops the
// topic's directory; the session that would roll it back ends only later
// (seed 2700155).
func TestADeletedTopicClosesAnInstalledCopyBeforeItsDirectoryGoes(t *testing.T) {
	c, _, target, dir := installedAwaitingFlip(t)

	c.nodes[target].dropTopicState("t")
	require.False(t, c.nodes[target].store.IsOpen(dir), "the copy is closed with its topic's directory")
	_, err := c.disks[target].Stat(dir)
	require.Error(t, err, "and its files are gone")
}

// lateFinalizeJob starts the move of partition 0 of "t" to target with
// the late-job fault site forced, and ticks until its finalize job is out
// (held back by the site).
func lateFinalizeJob(t *testing.T) (c *clusterHarness, leader, source, target string, key partitionKey) {
	t.Helper()
	c, leader, source, target = pinnedForAMove(t, "r")
	chaos.Force(chaos.SiteNodeMoveJobLate)
	t.Cleanup(chaos.Reset)
	c.holdJobs = true
	c.startMove(leader, "t", 0, target)
	key = partitionKey{"t", 0}
	c.tickUntil(100, 100, func() bool { s := c.nodes[target].moves[key]; return s != nil && s.jobOut })
	return c, leader, source, target, key
}

// TestALateFinalizeJobOfAnEndedSessionIsDiscardedUnrun: a finalize job
// the late-job fault site holds back is not handed out once its session
// has ended (here the move is aborted): its staged copy goes and nothing
// is installed into the partition's directory, which by then may be
// another incarnation's (seed 4110016: the topic deleted and created
// again with the destination an owner, where the late install removed the
// new partition's directory).
func TestALateFinalizeJobOfAnEndedSessionIsDiscardedUnrun(t *testing.T) {
	c, leader, _, target, key := lateFinalizeJob(t)
	staged := c.nodes[target].moves[key].stagedDir

	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, "t")})
	require.NoError(t, err)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions(), "the aborted session ended")
	_, orphaned := c.nodes[target].OrphanedJob("t", 0)
	require.True(t, orphaned, "its job is still held back")
	c.tick(c.configs[target].Moves.FreezeTTLMs)
	require.Empty(t, c.held, "the job was never handed out")
	_, orphaned = c.nodes[target].OrphanedJob("t", 0)
	require.False(t, orphaned, "the job's return settled the directory")
	_, err = c.disks[target].Stat(staged)
	require.Error(t, err, "the staged copy went")
	_, err = c.disks[target].Stat(PartitionDir("t", 0))
	require.Error(t, err, "nothing was installed")
}

// TestARecreatedTopicIsNotFrozenForAMoveBeforeTheRestart: the freeze a
// source keeps across its restart is for the moves under way then; the
// same partition of a topic deleted and created again, with a move of
// its own under way that never asked this node to freeze, takes writes.
func TestARecreatedTopicIsNotFrozenForAMoveBeforeTheRestart(t *testing.T) {
	c, _, source := restartedFrozenSource(t)
	require.Len(t, c.nodes[source].FrozenPartitions(), 1, "frozen since its restart")
	c.tickUntil(100, 100, func() bool { _, ok := c.leader(); return ok })
	leader, _ := c.leader()
	target := c.nodes[source].FrozenPartitions()[0].Target
	owners := c.owners(leader, "t")
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	c.tick(100)
	_, err := c.nodes[leader].meta.Propose(meta.CreateTopic{Name: "t", Owners: owners, RetentionMs: 3_600_000,
		VisibilityTimeoutMs: 30_000, MaxInFlightPerPartition: 1_000, MaxAckedAheadPerPartition: 1_000, CreatedAtMs: c.nowMs})
	require.NoError(t, err)
	c.tick(100)
	c.startMove(leader, "t", 0, target) // the target is still cut off: no freeze is asked
	c.tick(100)
	require.Empty(t, c.nodes[source].FrozenPartitions())
	require.NoError(t, c.do(source, producePinned("t", 0, "new topic")).Err, "the new partition is not frozen")
}

// TestADrainedLeaderHandsOverOnlyToAVoterItHears: a drained metadata
// leader hands its leadership to a voter raft has heard from lately, not
// to one the metastore still lists alive that is cut off: raft drops
// every proposal while a transfer is pending, so handing over to the cut
// voter again and again would keep it from ever being marked dead (seed
// 4300073 of the three-node moves world).
func TestADrainedLeaderHandsOverOnlyToAVoterItHears(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	var others []string
	for _, peer := range c.nodes[leader].meta.State().Peers() {
		if peer.ID != leader {
			others = append(others, peer.ID)
		}
	}
	silent, heard := others[0], others[1] // the leader would try silent first
	c.cut[silent] = true
	require.NoError(t, c.do(leader, msg.Decommission{ID: leader}).Err)
	c.tickUntil(100, 100, func() bool {
		now, ok := c.leader()
		return ok && now == heard
	})
	c.tickUntil(100, 100, func() bool {
		m, _ := c.nodes[heard].meta.State().Member(silent)
		return !m.Alive
	})
}

// TestAHandleFromBeforeAMoveAwayAndBackIsStale: a partition that moved
// away and back within one start of its owner gets a new lease table,
// whose receipt nonces must not start over: the handle of a delivery from
// before the moves would otherwise name the first reservation made after
// them, and its holder's ack would take the record from the new holder
// (nightly seed 4400727, checker lease-model).
func TestAHandleFromBeforeAMoveAwayAndBackIsStale(t *testing.T) {
	c, leader, source, target := pinnedForAMove(t, "r")
	consume := func() msg.Message {
		reply := c.do(source, msg.Consume{Topic: "t", Partition: 0})
		require.NoError(t, reply.Err)
		messages := reply.Result.(msg.ConsumeResult).Messages
		require.Len(t, messages, 1)
		return messages[0]
	}
	before := consume()
	for _, to := range []string{target, source} {
		c.startMove(leader, "t", 0, to)
		c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == to && c.owners(to, "t")[0] == to })
	}
	c.tick(100)
	after := consume()
	require.Equal(t, before.Offset, after.Offset, "delivered again: the reservation did not survive the moves")
	require.NotEqual(t, before.ReceiptHandle, after.ReceiptHandle, "a new reservation has a new handle")
	stale := c.do(source, msg.Ack{Topic: "t", Handles: []string{before.ReceiptHandle}, Action: msg.AckCommit})
	require.Equal(t, msg.CodeGone, msg.CodeOf(stale.Err), "the handle from before the moves is stale: %v", stale.Err)
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: []string{after.ReceiptHandle}, Action: msg.AckCommit}).Err)
}

// TestStagingMovesWhileACopyIsBuilt: a node reports a move staging from
// its session's start until the finalize job of the ended session is gone,
// so that a driver never runs a file-system sync that would wait for the
// copy's unsynced bytes.
func TestStagingMovesWhileACopyIsBuilt(t *testing.T) {
	c, leader, _, target := pinnedForAMove(t, "r")
	chaos.Force(chaos.SiteNodeMoveJobLate)
	defer chaos.Reset()
	c.holdJobs = true
	require.False(t, c.nodes[target].StagingMoves(), "no move yet")
	c.startMove(leader, "t", 0, target)
	key := partitionKey{"t", 0}
	c.tickUntil(100, 100, func() bool { return c.nodes[target].moves[key] != nil })
	require.True(t, c.nodes[target].StagingMoves(), "a session builds its copy")
	c.tickUntil(100, 100, func() bool { s := c.nodes[target].moves[key]; return s != nil && s.jobOut })

	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, "t")})
	require.NoError(t, err)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions())
	require.True(t, c.nodes[target].StagingMoves(), "the ended session's job is still held back")
	c.tick(c.configs[target].Moves.FreezeTTLMs)
	require.False(t, c.nodes[target].StagingMoves(), "the job was discarded")
}

// TestARecreatedTopicNeverOpensTheFilesAnOrphanedJobCouldNotRemove: a
// finalize job held back while its topic is deleted and created again,
// with the partition on the job's node, comes back after its session
// ended; its return must remove the partition directory, which holds
// the old topic's files. While that removal fails (an I/O error) the
// partition stays withheld, so the new topic never opens the old files;
// a later tick removes them and the partition serves.
func TestARecreatedTopicNeverOpensTheFilesAnOrphanedJobCouldNotRemove(t *testing.T) {
	c, leader, source, target, _ := lateFinalizeJob(t)
	dir := PartitionDir("t", 0)
	c.disks[target].FailNextMatching(storage.FaultRename, errors.New("injected I/O error"), 1_000, func(name string) bool { return name == dir })

	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	c.tick(100)
	require.Empty(t, c.nodes[target].MoveSessions(), "the session ended with its topic")
	_, err := c.nodes[leader].meta.Propose(meta.CreateTopic{Name: "t", Owners: []string{target, source, target}, RetentionMs: 3_600_000,
		VisibilityTimeoutMs: 30_000, MaxInFlightPerPartition: 1_000, MaxAckedAheadPerPartition: 1_000, CreatedAtMs: c.nowMs, Numbered: true})
	require.NoError(t, err)
	c.tick(100)
	require.Equal(t, target, c.owners(target, "t")[0], "the new topic's partition 0 is on the job's node")
	require.NoError(t, c.disks[target].MkdirAll(dir)) // the old topic's files, as a failed install puts them back
	old, err := c.disks[target].Create(dir + "/old")
	require.NoError(t, err)
	require.NoError(t, old.Close())

	c.tick(c.configs[target].Moves.FreezeTTLMs) // the late job is discarded; its directory's removal fails
	require.Empty(t, c.held, "the job was never handed out")
	_, withheld := c.nodes[target].OrphanedJob("t", 0)
	require.True(t, withheld, "the old topic's directory is still there, and withheld")
	reply := c.do(target, producePinned("t", 0, "new"))
	require.Error(t, reply.Err, "the new partition does not open the old files")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))

	c.disks[target].ClearFaults()
	c.tick(100)
	_, withheld = c.nodes[target].OrphanedJob("t", 0)
	require.False(t, withheld, "a tick removed the old files")
	_, err = c.disks[target].Stat(dir + "/old")
	require.Error(t, err, "the old files are gone")
	require.NoError(t, c.do(target, producePinned("t", 0, "new")).Err)
}
