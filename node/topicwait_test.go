package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestRequestsHeldForAnUnknownTopicAreBounded: requests naming a topic a
// lagging replica does not know yet wait for it, at most
// Config.HeldRequestsMax of them (the next is answered 503 at once), and
// the node asks the leader about the topic once, not once per request;
// once the replica learns the topic, the held ones are served (produce
// review).
func TestRequestsHeldForAnUnknownTopicAreBounded(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	lagging := c.except(leader)[0]
	c.nodes[lagging].cfg.HeldRequestsMax = 2
	c.dropRaftOf(lagging)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "new", Partitions: 3}).Err)

	asked := 0
	drop := c.drop
	c.drop = func(env msg.Envelope) bool {
		if forward, ok := env.Message.(msg.ForwardRequest); ok && env.From == lagging {
			if _, get := forward.Request.(msg.GetTopic); get {
				asked++
			}
		}
		return drop(env)
	}
	first := c.send(lagging, producePinned("new", 0, "a"))
	second := c.send(lagging, producePinned("new", 1, "b"))
	third := c.send(lagging, producePinned("new", 2, "c"))
	refused := c.await(third, 10, 5)
	require.Error(t, refused.Err)
	require.Contains(t, refused.Err.Error(), "the limit")
	require.Equal(t, 2, c.nodes[lagging].Stats().HeldRequests)
	require.Equal(t, uint64(1), c.nodes[lagging].Stats().HeldRefusedFull, "counted for narad_held_requests_refused_total")
	require.Equal(t, 1, asked, "one question to the leader for the topic")

	c.drop = nil
	for _, id := range []msg.RequestID{first, second} {
		require.NoError(t, c.await(id, 100, 30).Err, "a held request is served once the topic is known here")
	}
	require.Zero(t, c.nodes[lagging].Stats().HeldRequests)
}

// TestAHeldRequestIsNotAnsweredByAQuestionAskedBeforeIt: a request held
// for a topic this replica does not know waits for the leader's answer to
// a question asked for it, not to one asked before it was held: a slow
// "not found" to an earlier request must not answer one held after the
// topic was created meanwhile (diff review).
func TestAHeldRequestIsNotAnsweredByAQuestionAskedBeforeIt(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	lagging := c.except(leader)[0]
	c.dropRaftOf(lagging)
	raftDrop := c.drop
	answer := c.holdFirstAnswer(leader, lagging, raftDrop)
	early := c.send(lagging, producePinned("new", 0, "before the create"))
	c.settle()
	require.Len(t, *answer, 1)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "new", Partitions: 3}).Err)
	late := c.send(lagging, producePinned("new", 0, "after the create"))
	c.requireOnlyTheEarlySettled(*answer, early, late, msg.CodeNotFound, 30)
}

// holdFirstAnswer holds back the leader's first forwarded answer to node
// (the slow answer to a question), kept in the slice returned; every
// other envelope is dropped as otherwise says.
func (c *clusterHarness) holdFirstAnswer(leader, node string, otherwise func(msg.Envelope) bool) *[]msg.Envelope {
	var answer []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		if _, ok := env.Message.(msg.ForwardReply); ok && env.From == leader && env.To == node && answer == nil {
			answer = append(answer, env)
			return true
		}
		return otherwise(env)
	}
	return &answer
}

// requireOnlyTheEarlySettled delivers the held answer: the request held
// before its question left (early) gets its code, the one held after
// (late) is not answered by it, and is served once nothing is dropped.
func (c *clusterHarness) requireOnlyTheEarlySettled(answer []msg.Envelope, early, late msg.RequestID, code msg.Code, steps int) {
	c.settle()
	c.deliver(answer)
	c.settle()
	require.Equal(c.t, code, msg.CodeOf(c.replies[early].Err), "the early request gets the answer to its question")
	if reply, ok := c.replies[late]; ok {
		require.NotEqual(c.t, code, msg.CodeOf(reply.Err), "the late one is not answered by the early question")
	}
	c.drop = nil
	reply := c.await(late, 100, steps)
	require.NoError(c.t, reply.Err, "once the replica has what it waited for, the late request is served")
}

// TestAForwardHeldForItsTopicIsAnsweredBeforeTheSenderGivesUp: an owner
// whose replica does not know a topic yet holds a forwarded produce for
// it; when the topic does not come in time, the owner's 503 reaches the
// sender within the sender's forward timeout, so the sender passes it on
// and does not take the healthy owner for down (held for the whole
// timeout, the answer always came after the sender gave up on it).
func TestAForwardHeldForItsTopicIsAnsweredBeforeTheSenderGivesUp(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	lagging := c.except(leader)[0]
	c.dropRaftOf(lagging)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "new", Partitions: 3}).Err)
	partition := slices.Index(c.owners(leader, "new"), lagging)
	require.GreaterOrEqual(t, partition, 0, "sanity: the lagging node owns a partition")

	reply := c.await(c.send(leader, producePinned("new", partition, "a")), 10, 300)
	require.Error(t, reply.Err)
	require.Contains(t, reply.Err.Error(), "is not known to this node yet", "the owner's own answer, not the sender's timeout")
	again := c.await(c.send(leader, producePinned("new", partition, "b")), 10, 300)
	require.Error(t, again.Err, "sanity: the owner still does not know the topic")
	require.NotContains(t, again.Err.Error(), "down or unreachable", "the owner is not taken for down")
}
