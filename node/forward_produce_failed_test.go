package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAProduceJoiningAFailedForwardIsAnswered: the produce forward of the
// Ready being built fails before that Ready is taken (the driver reports
// the owner unreachable; the node contract allows PeerUnreachable between
// any two inputs, and host calls it after a flush, when a reroute may
// just have opened a forward to a second unreachable peer). The owner is
// then heard from (it restarted), which makes it usable again, and a
// second produce for the same owner and topic arrives before the Ready is
// taken. It joins the batch of the failed forward (routing.produceForwards
// still holds it), travels, is written at the owner, and its answer goes
// nowhere: the client waits until it gives up. It must be answered, like
// the first, within a forward timeout.
func TestAProduceJoiningAFailedForwardIsAnswered(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	owner := c.otherThan(leader)
	at := c.otherThan(leader, owner)
	partition := slices.Index(owners, owner)

	first := c.send(at, producePinned("t", partition, "first"))
	c.nodes[at].PeerUnreachable(owner) // the forward, not yet sent, fails at once
	require.NoError(t, c.nodes[at].Step(msg.Envelope{From: owner, To: at, Message: msg.Notify{Topic: "t"}}), "the owner is heard from")
	second := c.send(at, producePinned("t", partition, "second"))
	c.settle()
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.replies[first].Err), "sanity: the first produce failed with its forward")

	c.await(second, 100, 50) // 5 s of node time: 2.5 forward timeouts
}
