package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
	"narad/msg"
)

// grownBehind is a cluster whose topic "t" grew from 3 to 6 partitions
// through the leader while the metastore's appends did not reach behind,
// which still has 3 applied; a record was produced into partition, a new
// partition that behind does not own.
type grownBehind struct {
	c         *clusterHarness
	leader    string
	behind    string
	partition int
}

func newGrownBehind(t *testing.T) grownBehind {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	behind := c.otherThan(leader)
	c.drop = func(env msg.Envelope) bool { // heartbeats still flow: behind knows its leader
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.To == behind && raft.Message.GetType() == raftpb.MsgApp
	}
	grow := 6
	require.NoError(t, c.do(leader, msg.AlterTopic{Name: "t", Partitions: &grow}).Err)
	owners := c.owners(leader, "t")
	partition := -1
	for i := 5; i >= 3 && partition < 0; i-- {
		if owners[i] != behind {
			partition = i
		}
	}
	require.GreaterOrEqual(t, partition, 3, "sanity: a new partition is owned by another node than behind: %v", owners)
	require.NoError(t, c.do(leader, producePinned("t", partition, "grown")).Err)
	record, _ := c.nodes[behind].meta.State().Topic("t")
	require.Equal(t, 3, record.Partitions, "sanity: behind has not applied the growth")
	return grownBehind{c: c, leader: leader, behind: behind, partition: partition}
}

// requireHeld fails unless the request is still unanswered once the
// cluster is quiet.
func (g grownBehind) requireHeld(t *testing.T, id msg.RequestID, what string) {
	g.c.settle()
	reply, answered := g.c.replies[id]
	require.False(t, answered, "a %s pinned to a partition this replica has not applied waits for it; answered %v", what, reply.Err)
}

// TestARequestPinnedToAPartitionNotAppliedHereWaitsForIt: a produce, a
// consume and a replay pinned to a partition the topic grew by through
// another node, taken by a node whose replica has not applied the growth,
// wait for it and are served once it is applied, instead of a 400 that
// tells the client the partition does not exist (growth review).
func TestARequestPinnedToAPartitionNotAppliedHereWaitsForIt(t *testing.T) {
	t.Run("produce", func(t *testing.T) {
		g := newGrownBehind(t)
		id := g.c.send(g.behind, producePinned("t", g.partition, "pinned"))
		g.requireHeld(t, id, "produce")
		g.c.drop = nil
		reply := g.c.await(id, 100, 20)
		require.NoError(t, reply.Err, "the held produce is served once the growth is applied")
		require.Equal(t, g.partition, reply.Result.(msg.ProduceResult).Records[0].Partition, "written where it was pinned")
	})
	t.Run("consume", func(t *testing.T) {
		g := newGrownBehind(t)
		id := g.c.send(g.behind, msg.Consume{Topic: "t", Partition: g.partition})
		g.requireHeld(t, id, "consume")
		g.c.drop = nil
		reply := g.c.await(id, 100, 20)
		require.NoError(t, reply.Err, "the held consume is served once the growth is applied")
		messages := reply.Result.(msg.ConsumeResult).Messages
		require.Len(t, messages, 1, "the record of the pinned partition is delivered")
		require.Equal(t, "grown", string(messages[0].Payload))
	})
	t.Run("replay", func(t *testing.T) {
		g := newGrownBehind(t)
		id := g.c.send(g.behind, msg.Replay{Topic: "t", Partition: g.partition, Offset: 0})
		g.requireHeld(t, id, "replay")
		g.c.drop = nil
		reply := g.c.await(id, 100, 20)
		require.NoError(t, reply.Err, "the held replay is served once the growth is applied")
		message := reply.Result.(msg.ReplayResult).Message
		require.NotNil(t, message, "the record at offset 0 is read")
		require.Equal(t, "grown", string(message.Payload))
	})
	t.Run("describe one partition", func(t *testing.T) {
		g := newGrownBehind(t)
		id := g.c.send(g.behind, msg.GetTopic{Name: "t", Partition: g.partition})
		g.requireHeld(t, id, "description")
		g.c.drop = nil
		reply := g.c.await(id, 100, 20)
		require.NoError(t, reply.Err, "the held description is served once the growth is applied")
		stats := reply.Result.(msg.TopicDetail).PartitionStats
		require.Len(t, stats, 1, "the pinned partition is described")
		require.Equal(t, g.partition, stats[0].Index)
	})
}

// TestAPinnedPartitionThatDoesNotExistIsStillA400: a pin past the count
// the leader has is answered 400 as soon as the leader said so (with the
// leader's count), and a pin no topic can have (at meta.PartitionsMax) at
// once, without a question to the leader.
func TestAPinnedPartitionThatDoesNotExistIsStillA400(t *testing.T) {
	g := newGrownBehind(t)
	asked := 0
	drop := g.c.drop
	g.c.drop = func(env msg.Envelope) bool {
		if forward, ok := env.Message.(msg.ForwardRequest); ok && env.From == g.behind {
			if _, get := forward.Request.(msg.GetTopic); get {
				asked++
			}
		}
		return drop(env)
	}
	reply := g.c.do(g.behind, producePinned("t", 6, "past the leader's count"))
	require.Equal(t, msg.CodeInvalid, msg.CodeOf(reply.Err), "a partition the leader does not have either: %v", reply.Err)
	require.Contains(t, reply.Err.Error(), "topic t has 6 partitions", "the leader's count, not the lagging replica's")
	require.Equal(t, 1, asked, "the leader was asked")

	for _, req := range []msg.Request{
		producePinned("t", meta.PartitionsMax, "x"),
		msg.Consume{Topic: "t", Partition: meta.PartitionsMax},
		msg.Replay{Topic: "t", Partition: meta.PartitionsMax},
	} {
		id := g.c.send(g.behind, req)
		require.Zero(t, g.c.nodes[g.behind].Stats().HeldRequests, "a %T pinned where no topic can have a partition is not held", req)
		g.c.settle()
		reply := g.c.replies[id]
		require.Equal(t, msg.CodeInvalid, msg.CodeOf(reply.Err), "%T: %v", req, reply.Err)
		require.Contains(t, reply.Err.Error(), "topic t has 3 partitions", "%T: answered from this replica", req)
	}
	require.Equal(t, 1, asked, "no question for a pin no topic can have")
}

// TestAPinnedRequestThatWaitsInVainIsRetryable: a pin the leader
// confirmed, on a replica that does not apply the growth within the wait,
// is answered 503 (retry), not 400; a topic deleted meanwhile is a 404;
// and the requests held for partitions count against HeldRequestsMax.
func TestAPinnedRequestThatWaitsInVainIsRetryable(t *testing.T) {
	g := newGrownBehind(t)
	g.c.nodes[g.behind].cfg.HeldRequestsMax = 1
	id := g.c.send(g.behind, msg.Consume{Topic: "t", Partition: g.partition})
	refused := g.c.do(g.behind, msg.Replay{Topic: "t", Partition: g.partition})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "past HeldRequestsMax: %v", refused.Err)
	require.Contains(t, refused.Err.Error(), "the limit")

	reply := g.c.await(id, 100, 30)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "the partition exists at the leader: retry, %v", reply.Err)
	require.Contains(t, reply.Err.Error(), "is not known to this node yet")
	require.Zero(t, g.c.nodes[g.behind].Stats().HeldRequests)

	require.NoError(t, g.c.do(g.leader, msg.DeleteTopic{Name: "t"}).Err)
	gone := g.c.do(g.behind, producePinned("t", g.partition, "deleted"))
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(gone.Err), "the leader no longer has the topic: %v", gone.Err)
}

// TestAPinnedRequestTheLeaderDidNotAnswerIsUnavailable: with the
// leader's answers lost, a request held for a partition that is still
// out of range here once its wait ran out is 503 (retry), not a 400 from
// this replica's count, which is behind the growth the leader committed
// (the client was told 200 for it through another node); and it is 404
// as soon as the replica applies the topic's deletion.
func TestAPinnedRequestTheLeaderDidNotAnswerIsUnavailable(t *testing.T) {
	g := newGrownBehind(t)
	appends := g.c.drop
	g.c.drop = func(env msg.Envelope) bool {
		_, answer := env.Message.(msg.ForwardReply)
		return (answer && env.To == g.behind) || appends(env)
	}
	expired := g.c.send(g.behind, msg.Replay{Topic: "t", Partition: g.partition})
	g.requireHeld(t, expired, "replay")
	reply := g.c.await(expired, 100, 30)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "unsettled and still out of range here: %v", reply.Err)
	require.Contains(t, reply.Err.Error(), fmt.Sprintf("partition %d of topic \"t\" is not known to this node yet", g.partition))

	require.NoError(t, g.c.do(g.leader, msg.DeleteTopic{Name: "t"}).Err)
	deleted := g.c.send(g.behind, msg.Consume{Topic: "t", Partition: g.partition})
	g.requireHeld(t, deleted, "consume")
	g.c.drop = func(env msg.Envelope) bool {
		_, answer := env.Message.(msg.ForwardReply)
		return answer && env.To == g.behind
	}
	gone := g.c.await(deleted, 10, 30)
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(gone.Err), "the topic is gone from the applied state: %v", gone.Err)
	_, known := g.c.nodes[g.behind].meta.State().Topic("t")
	require.False(t, known, "sanity: answered by the replica's deletion, not a leader's answer")
}

// TestAPinHeldAfterTheLeaderWasAskedIsNotAnsweredByTheOldCount: the
// leader's answer that a topic has 3 partitions settles a request pinned
// to partition 4 held before the question left (400: the partition did
// not exist), but not one held after it, which may be for a growth
// acknowledged meanwhile: that one is asked about again, and served once
// the growth is applied here.
func TestAPinHeldAfterTheLeaderWasAskedIsNotAnsweredByTheOldCount(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	behind := c.otherThan(leader)
	answer := c.holdFirstAnswer(leader, behind, func(env msg.Envelope) bool {
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.To == behind && raft.Message.GetType() == raftpb.MsgApp
	})
	early := c.send(behind, producePinned("t", 4, "before the growth"))
	c.settle()
	require.Len(t, *answer, 1, "sanity: the leader was asked, and its answer is held back")
	grow := 6
	require.NoError(t, c.do(leader, msg.AlterTopic{Name: "t", Partitions: &grow}).Err)
	late := c.send(behind, producePinned("t", 4, "after the growth"))
	c.requireOnlyTheEarlySettled(*answer, early, late, msg.CodeInvalid, 20)
	require.Contains(t, c.replies[early].Err.Error(), "topic t has 3 partitions")
}

// TestAGrowToTheCountAReplicaHasGoesThroughTheLog: a grow to the count a
// lagging replica has (3, while the topic grew to 6 through the leader)
// is not answered 200 from that replica's copy, which would tell the
// client the topic has 3 partitions; it goes through the log, where it
// is a shrink the topic grew past (409, retry), and once the replica has
// applied the growth a grow to 6 is 200 with 6.
func TestAGrowToTheCountAReplicaHasGoesThroughTheLog(t *testing.T) {
	g := newGrownBehind(t)
	three := 3
	id := g.c.send(g.behind, msg.AlterTopic{Name: "t", Partitions: &three})
	g.c.drop = nil
	reply := g.c.await(id, 100, 30)
	require.Equal(t, msg.CodeConflict, msg.CodeOf(reply.Err), "the log has 6 partitions: %v %+v", reply.Err, reply.Result)
	six := 6
	again := g.c.do(g.behind, msg.AlterTopic{Name: "t", Partitions: &six})
	require.NoError(t, again.Err)
	require.Equal(t, 6, again.Result.(msg.TopicInfo).Partitions)
}
