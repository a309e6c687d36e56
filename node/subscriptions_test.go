package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestDeletedTopicsLeaveNoSubscriptions: a long poll parked on a
// node that owns nothing with records subscribes at the topic's other
// owners (route_consume.go). The subscription state on both sides
// (Node.cluster.subscribers at the owners, subscribedUntilMs and notified
// at the poller) is keyed by topic name and was never dropped with the
// topic: a client that created, polled and deleted topics made every node
// hold an entry per topic name for good (docs/operations.md#limits:
// "Every resource a client can make a node hold is bounded").
func TestDeletedTopicsLeaveNoSubscriptions(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	const cycles = 5
	for i := range cycles {
		name := fmt.Sprintf("t%d", i)
		require.NoError(t, c.do(leader, msg.CreateTopic{Name: name, Partitions: 3}).Err)
		c.tick(100)
		poller := c.owners(leader, name)[0]
		remote := slices.IndexFunc(c.owners(leader, name), func(o string) bool { return o != poller })
		poll := c.send(poller, msg.Consume{Topic: name, Partition: msg.PartitionNone, WaitMs: 1_000})
		c.settle()
		require.NoError(t, c.do(c.otherThan(poller), producePinned(name, remote, "x")).Err, "the owner notifies the poller")
		c.await(poll, 100, 20)
		require.NoError(t, c.do(leader, msg.DeleteTopic{Name: name}).Err)
		c.tick(100)
	}
	for _, id := range c.ids {
		n := c.nodes[id]
		require.Empty(t, n.cluster.subscribers, "%s: subscribers of deleted topics", id)
		require.Empty(t, n.cluster.subscribedUntilMs, "%s: subscriptions to deleted topics", id)
		require.Empty(t, n.cluster.notified, "%s: notifications of deleted topics", id)
	}
}
