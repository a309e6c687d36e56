package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// deposedUnaware is a cluster whose topic "t" of 3 partitions was
// created through old, the metastore leader, before old was cut off
// from the others' raft messages (its forwards still pass). old gets no
// tick meanwhile, so CheckQuorum never steps it down: it believes it
// leads. The others elected next, which grew "t" to 6 partitions and
// created "fresh", both acknowledged to their client.
type deposedUnaware struct {
	c    *clusterHarness
	old  string
	next string
	// questions are old's answers to the questions asked in the test
	// (forwardQuestion), taken off the wire.
	questions map[uint64]msg.Reply
}

func newDeposedUnaware(t *testing.T) *deposedUnaware {
	c := newClusterHarness(t, 3)
	d := &deposedUnaware{c: c, old: c.electWithTopic("t", 3), questions: map[uint64]msg.Reply{}}
	c.drop = func(env msg.Envelope) bool {
		if reply, ok := env.Message.(msg.ForwardReply); ok && env.From == d.old && reply.ID >= questionIDBase {
			d.questions[reply.ID] = reply.Reply
			return true
		}
		_, isRaft := env.Message.(msg.RaftMessage)
		return isRaft && (env.From == d.old || env.To == d.old)
	}
	d.next = d.electWithoutOld(t)
	grow := 6
	require.NoError(t, c.do(d.next, msg.AlterTopic{Name: "t", Partitions: &grow}).Err)
	require.NoError(t, c.do(d.next, msg.CreateTopic{Name: "fresh", Partitions: 3}).Err)
	require.True(t, c.nodes[d.old].meta.IsLeader(), "sanity: the old leader still believes it leads")
	record, _ := c.nodes[d.old].meta.State().Topic("t")
	require.Equal(t, 3, record.Partitions, "sanity: the old leader has not seen the growth")
	_, known := c.nodes[d.old].meta.State().Topic("fresh")
	require.False(t, known, "sanity: nor the new topic")
	return d
}

// questionIDBase numbers the questions the test forwards to old, far
// above the forwards of the nodes themselves.
const questionIDBase = 1 << 60

// electWithoutOld ticks every node but old until one of them leads.
func (d *deposedUnaware) electWithoutOld(t *testing.T) string {
	c := d.c
	for range 200 {
		c.nowMs += 100
		for _, id := range c.except(d.old) {
			c.nodes[id].Tick(c.nowMs)
		}
		c.settle()
		for _, id := range c.except(d.old) {
			if c.nodes[id].meta.Barrier() {
				return id
			}
		}
	}
	t.Fatal("the others elected no leader")
	return ""
}

// forwardQuestion steps into old a follower's question about the topic,
// as askLeaderAbout sends it; its answer lands in d.questions[id].
func (d *deposedUnaware) forwardQuestion(t *testing.T, id uint64, topic string) {
	question := msg.ForwardRequest{ID: id, Request: msg.GetTopic{Name: topic, Partition: msg.PartitionNone, Confirm: true}, LocalOnly: true}
	require.NoError(t, d.c.nodes[d.old].Step(msg.Envelope{From: d.next, To: d.old, Message: question}))
	d.c.settle()
}

// TestADeposedLeaderThatDoesNotKnowItDeniesNoTopicItsSuccessorHas: a
// metastore leader cut off from the quorum, which still believes it
// leads, does not answer 400 for a partition of a growth its successor
// committed and acknowledged, nor 404 for a topic its successor created,
// to its own clients or to another node's question: each waits for a
// read barrier no quorum confirms, and is 503 (retry) at its deadline.
// Healed, the same produce through it is served. Before the barrier, it
// answered from its applied state at once: 400, 404, and 404 to the
// question.
func TestADeposedLeaderThatDoesNotKnowItDeniesNoTopicItsSuccessorHas(t *testing.T) {
	d := newDeposedUnaware(t)
	c := d.c
	pinned := c.send(d.old, producePinned("t", 5, "grown"))
	unknown := c.send(d.old, msg.Produce{Topic: "fresh", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("new")}}})
	d.forwardQuestion(t, questionIDBase+1, "fresh")
	c.settle()
	for _, id := range []msg.RequestID{pinned, unknown} {
		reply, answered := c.replies[id]
		require.False(t, answered, "request %d is answered before any quorum confirmed the leader: %v", id, reply.Err)
	}
	require.Empty(t, d.questions, "the question is answered before any quorum confirmed the leader")
	require.Equal(t, 3, c.nodes[d.old].Stats().HeldRequests, "all three wait for the barrier")

	c.await(pinned, 100, 30) // old's clock runs to the requests' deadlines
	for _, id := range []msg.RequestID{pinned, unknown} {
		require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.replies[id].Err), "request %d: %v", id, c.replies[id].Err)
	}
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(d.questions[questionIDBase+1].Err), "%v", d.questions[questionIDBase+1].Err)

	c.drop = nil
	reply := c.await(c.send(d.old, producePinned("t", 5, "grown")), 100, 50)
	require.NoError(t, reply.Err, "healed, the produce is served")
	require.Equal(t, 5, reply.Result.(msg.ProduceResult).Records[0].Partition)
}

// TestALeaderPastItsBarrierStillDenies: a leader that a quorum confirms
// answers 400 for a pin past the count and 404 for a topic nobody
// created, to its own clients and to a follower's question (the
// follower answers its client so); it holds each until its read barrier
// passes, not answering at once. A replica that does not lead answers a
// question 503: its state may be behind.
func TestALeaderPastItsBarrierStillDenies(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	follower := c.otherThan(leader)
	unknown := msg.GetTopic{Name: "nobody", Partition: msg.PartitionNone}

	past := c.send(leader, producePinned("t", 7, "past"))
	nobody := c.send(leader, unknown)
	require.Equal(t, 2, c.nodes[leader].Stats().HeldRequests, "held until the barrier")
	c.settle()
	require.Equal(t, msg.CodeInvalid, msg.CodeOf(c.replies[past].Err), "%v", c.replies[past].Err)
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.replies[nobody].Err), "%v", c.replies[nobody].Err)
	require.Zero(t, c.nodes[leader].Stats().HeldRequests)

	require.Equal(t, msg.CodeInvalid, msg.CodeOf(c.do(follower, producePinned("t", 7, "past")).Err), "the follower, told the leader's count")
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.do(follower, unknown).Err), "the follower, told the leader has no such topic")

	question := msg.GetTopic{Name: "t", Partition: msg.PartitionNone, Confirm: true}
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.do(follower, question).Err), "a replica that does not lead answers no question")
	detail := c.do(leader, question)
	require.NoError(t, detail.Err)
	require.Equal(t, 3, detail.Result.(msg.TopicDetail).Partitions, "the leader does")
}

// TestAQuestionToANodeThatLeadsNoMoreIsAskedAgainOfTheNewLeader: a
// follower asks the leader it knows about a topic it holds a request
// for; before the question arrives, that node hands the leadership over
// and answers 503 (it answers for the cluster no more). The follower,
// which knows the new leader by then, asks it instead of taking the 503
// for the leader's doubt, and its client gets the new leader's 404, not a
// 503 when the hold runs out (review finding).
func TestAQuestionToANodeThatLeadsNoMoreIsAskedAgainOfTheNewLeader(t *testing.T) {
	c := newClusterHarness(t, 3)
	old := c.electWithTopic("t", 3)
	asker := c.except(old)[0]
	next := c.otherThan(old, asker)
	var question []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		forward, isForward := env.Message.(msg.ForwardRequest)
		get, isGet := forward.Request.(msg.GetTopic)
		if isForward && isGet && get.Confirm && env.To == old {
			question = append(question, env)
			return true
		}
		return false
	}
	held := c.send(asker, produceTo("nobody"))
	c.settle()
	require.Len(t, question, 1, "the asker asked the leader it knew")
	require.NoError(t, c.nodes[old].meta.TransferLeadership(next))
	for step := 0; step < 50 && !c.nodes[next].meta.Barrier(); step++ {
		c.tick(10)
	}
	leader, known := c.nodes[asker].meta.Leader()
	require.True(t, known && leader == next && !c.nodes[old].meta.IsLeader(), "the leadership moved, and the asker knows it")
	require.NotContains(t, c.replies, held, "%v", c.replies[held].Err)
	c.drop = nil
	c.deliver(question)
	c.settle()
	reply, answered := c.replies[held]
	require.True(t, answered, "the new leader was asked and answered")
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(reply.Err), "%v", reply.Err)
}
