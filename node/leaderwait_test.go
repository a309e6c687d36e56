package node

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/msg"
)

// raftOf returns the raft message an envelope carries, if it carries one.
func raftOf(env msg.Envelope) (*raftpb.Message, bool) {
	raft, ok := env.Message.(msg.RaftMessage)
	return raft.Message, ok
}

// TestTheLeaderHoldsAPinBetweenTheCommitAndTheApplyOfAGrowth: a produce
// pinned to a partition of a growth the leader has committed but not
// applied yet (its next Ready applies it) is held by the leader and
// served once the growth is applied, not refused 400 from the count it
// applied; with the growth applied and nothing pending, a pin past the
// new count is a 400 once the leader's read barrier confirmed it still
// leads (readbarrier.go).
func TestTheLeaderHoldsAPinBetweenTheCommitAndTheApplyOfAGrowth(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	var acknowledgements []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		message, ok := raftOf(env)
		if ok && env.To == leader && message.GetType() == raftpb.MsgAppResp {
			acknowledgements = append(acknowledgements, env)
			return true
		}
		return false
	}
	grow := 6
	alter := c.send(c.otherThan(leader), msg.AlterTopic{Name: "t", Partitions: &grow})
	c.settle()
	require.NotEmpty(t, acknowledgements, "sanity: the followers appended the growth")
	c.drop = nil
	for _, env := range acknowledgements {
		require.NoError(t, c.nodes[env.To].Step(env))
	}
	status := c.nodes[leader].meta.Status()
	require.Greater(t, status.Commit, status.Applied, "sanity: the leader committed the growth and has not applied it")

	pinned := c.send(leader, producePinned("t", 5, "grown"))
	c.settle()
	require.NoError(t, c.replies[alter].Err, "sanity: the growth applied")
	reply, answered := c.replies[pinned]
	require.True(t, answered, "the held produce is served once the leader applied the growth")
	require.NoError(t, reply.Err, "a partition the leader committed is not refused as out of range")
	require.Equal(t, 5, reply.Result.(msg.ProduceResult).Records[0].Partition, "written where it was pinned")

	past := c.send(leader, producePinned("t", 6, "past"))
	require.Equal(t, 1, c.nodes[leader].Stats().HeldRequests, "with nothing pending the leader's count is final, past its read barrier")
	c.settle()
	require.Equal(t, msg.CodeInvalid, msg.CodeOf(c.replies[past].Err), "past the leader's applied count with nothing pending: %v", c.replies[past].Err)
}

// TestANewLeaderHoldsAForwardedPinUntilItAppliesItsPredecessorsGrowth: a
// growth committed and applied by the old leader and a follower reaches
// the new leader's log, but not its applied state until the new leader
// commits an entry of its own term. A consume pinned to a new partition,
// taken by the follower and forwarded to its owner, the new leader,
// waits there for the growth instead of coming back 400.
func TestANewLeaderHoldsAForwardedPinUntilItAppliesItsPredecessorsGrowth(t *testing.T) {
	c := newClusterHarness(t, 3)
	old, uninformed, growth := growWithCommitWithheld(t, c)
	owners := c.owners(old, "t")
	partition := 5
	for partition >= 3 && owners[partition] == old {
		partition--
	}
	require.GreaterOrEqual(t, partition, 3, "sanity: a new partition is owned by a follower: %v", owners)
	next, follower := owners[partition], c.otherThan(old, owners[partition])
	delete(uninformed, follower)
	for range 3 {
		c.tick(100) // the follower learns the commit; next does not
	}
	record, _ := c.nodes[follower].meta.State().Topic("t")
	require.Equal(t, 6, record.Partitions, "sanity: the follower applied the growth")

	transferUnacknowledged(t, c, old, next, uninformed, growth)
	require.True(t, c.nodes[next].meta.IsLeader(), "sanity: the leadership moved to the owner of the new partition")
	record, _ = c.nodes[next].meta.State().Topic("t")
	require.Equal(t, 3, record.Partitions, "sanity: the new leader has not applied the growth")

	consume := c.send(follower, msg.Consume{Topic: "t", Partition: partition})
	c.settle()
	reply, answered := c.replies[consume]
	require.False(t, answered, "a consume pinned to a partition in the new leader's log waits there; answered %v", reply.Err)
	require.Equal(t, 1, c.nodes[next].Stats().HeldRequests, "held by the new leader")
	c.drop = nil
	reply = c.await(consume, 100, 20)
	require.NoError(t, reply.Err, "served once the new leader applied the growth")
	require.IsType(t, msg.ConsumeResult{}, reply.Result)
}

// growWithCommitWithheld elects a leader with topic "t" of 3 partitions
// and grows it to 6 there, while the other nodes (uninformed, which the
// caller may shrink) append the growth, entry growth, but never learn it
// committed (withholdCommit).
func growWithCommitWithheld(t *testing.T, c *clusterHarness) (old string, uninformed map[string]bool, growth uint64) {
	old = c.electWithTopic("t", 3)
	growth = c.nodes[old].meta.Status().Commit + 1
	uninformed = map[string]bool{}
	for _, id := range c.except(old) {
		uninformed[id] = true
	}
	c.drop = func(env msg.Envelope) bool { return withholdCommit(c, env, uninformed, growth) }
	grow := 6
	require.NoError(t, c.do(old, msg.AlterTopic{Name: "t", Partitions: &grow}).Err)
	return old, uninformed, growth
}

// transferUnacknowledged moves the leadership from old to next, which
// then commits nothing of its own term (the acknowledgements of its
// appends are dropped) and so never applies the growth, while the
// uninformed still never learn that it committed.
func transferUnacknowledged(t *testing.T, c *clusterHarness, old, next string, uninformed map[string]bool, growth uint64) {
	require.NoError(t, c.nodes[old].meta.TransferLeadership(next))
	c.drop = func(env msg.Envelope) bool {
		message, ok := raftOf(env)
		return withholdCommit(c, env, uninformed, growth) || (ok && env.To == next && message.GetType() == raftpb.MsgAppResp)
	}
	c.settle()
}

// withholdCommit delivers a raft message to a node in uninformed with its
// commit index lowered below growth (and so drops it, having stepped the
// copy): the node appends the entry but never learns it committed.
func withholdCommit(c *clusterHarness, env msg.Envelope, uninformed map[string]bool, growth uint64) bool {
	message, ok := raftOf(env)
	if !ok || !uninformed[env.To] || message.GetCommit() < growth {
		return false
	}
	lowered := proto.Clone(message).(*raftpb.Message)
	lowered.Commit = new(growth - 1)
	require.NoError(c.t, c.nodes[env.To].Step(msg.Envelope{From: env.From, To: env.To, Message: msg.RaftMessage{Message: lowered}}))
	return true
}

// leaderBehind is a cluster whose topic "t" grew from 3 to 6 partitions
// through the old leader, and whose growth reached the logs of the two
// others, but not their applied states. One of them, leader, leads now,
// and will not apply the growth until it commits an entry of its own
// term: the acknowledgements of its appends are dropped until drop is
// lifted. The other is follower.
type leaderBehind struct {
	c        *clusterHarness
	leader   string
	follower string
}

func newLeaderBehind(t *testing.T) leaderBehind {
	c := newClusterHarness(t, 3)
	old, uninformed, growth := growWithCommitWithheld(t, c)
	next := c.otherThan(old)
	transferUnacknowledged(t, c, old, next, uninformed, growth)
	g := leaderBehind{c: c, leader: next, follower: c.otherThan(old, next)}
	require.True(t, c.nodes[g.leader].meta.IsLeader(), "sanity: the leadership moved")
	for _, id := range []string{g.leader, g.follower} {
		record, _ := c.nodes[id].meta.State().Topic("t")
		require.Equal(t, 3, record.Partitions, "sanity: %s has not applied the growth", id)
	}
	require.True(t, c.nodes[g.leader].meta.TopicCountPending("t"), "sanity: the new leader's log holds the growth")
	return g
}

// TestANewLeaderAnswersAFollowersQuestionOnlyOnceItAppliedItsPredecessorsGrowth:
// a produce pinned to a new partition, taken by a follower that has not
// applied the growth, is held there, and the question it asks the new
// leader is answered once the new leader applied the growth, with its
// count, not at once with the count it applied (the held produce then
// came back 400). The description's fan-out, which forwards the same
// request kind, is answered at once.
func TestANewLeaderAnswersAFollowersQuestionOnlyOnceItAppliedItsPredecessorsGrowth(t *testing.T) {
	g := newLeaderBehind(t)
	c := g.c
	pinned := c.send(g.follower, producePinned("t", 5, "grown"))
	c.settle()
	reply, answered := c.replies[pinned]
	require.False(t, answered, "a produce pinned to a partition in the leader's log is not refused; answered %v", reply.Err)
	require.Equal(t, 1, c.nodes[g.leader].Stats().HeldRequests, "the new leader holds the follower's question")

	require.Contains(t, c.owners(g.follower, "t"), g.leader, "sanity: the new leader owns a partition the follower describes")
	described := c.send(g.follower, msg.GetTopic{Name: "t", Partition: msg.PartitionNone})
	c.settle()
	reply, answered = c.replies[described]
	require.True(t, answered, "the description's fan-out is answered while the growth is pending")
	require.NoError(t, reply.Err)
	for _, stats := range reply.Result.(msg.TopicDetail).PartitionStats {
		require.True(t, stats.Available, "partition %d of %s is described", stats.Index, stats.OwnerNode)
	}

	c.drop = nil
	reply = c.await(pinned, 100, 20)
	require.NoError(t, reply.Err, "served once the growth is applied")
	require.Equal(t, 5, reply.Result.(msg.ProduceResult).Records[0].Partition, "written where it was pinned")
}

// TestAQuestionTheLeaderCouldNotAnswerInTimeLeavesA503: while the new
// leader's log still holds the growth it has not applied, it answers the
// follower's question 503 when the question's wait runs out; the
// follower's held produce, pinned to a partition of the growth, is then
// answered 503 at its deadline (retry), not 400 from the count the
// follower applied.
func TestAQuestionTheLeaderCouldNotAnswerInTimeLeavesA503(t *testing.T) {
	g := newLeaderBehind(t)
	c := g.c
	pinned := c.send(g.follower, producePinned("t", 5, "grown"))
	c.settle()
	require.Equal(t, 1, c.nodes[g.leader].Stats().HeldRequests, "sanity: the new leader holds the follower's question")
	reply := c.await(pinned, 100, 20)
	require.True(t, c.nodes[g.leader].meta.TopicCountPending("t"), "sanity: the growth is still pending at the leader")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "a pin the leader could not deny is a 503, not a 400: %v", reply.Err)
}

// TestTheLeadersAnswerToAQuestionCarriesNoPartitionStats: the asker of a
// question about a topic reads only its info, so the answer describes
// no partition: for a topic of 4,096 partitions the stats were about
// 330 KB on the wire, and the leader opened the logs of its own
// partitions to fill them in, at every question.
func TestTheLeadersAnswerToAQuestionCarriesNoPartitionStats(t *testing.T) {
	h := newHarness(t)
	h.createTopic("wide", func(r *msg.CreateTopic) { r.Partitions = 64 })
	closed := h.node.Stats().OpenLogs
	detail := h.ok(msg.GetTopic{Name: "wide", Partition: msg.PartitionNone, Confirm: true}).(msg.TopicDetail)
	require.Equal(t, 64, detail.Partitions, "the answer carries the count")
	require.Empty(t, detail.PartitionStats, "and no partition's stats")
	require.Equal(t, closed, h.node.Stats().OpenLogs, "no log was opened to answer")
	described := h.ok(msg.GetTopic{Name: "wide", Partition: msg.PartitionNone}).(msg.TopicDetail)
	require.Len(t, described.PartitionStats, 64, "a description still describes every partition")
}
