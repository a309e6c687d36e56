package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestANotifyAfterTheDeleteLeavesNoState: forgetSubscriptions drops
// a topic's subscription state when this node applies the topic's delete
// (docs/operations.md#limits: every resource a client can make a node hold
// is bounded). But an owner that applies the delete later still holds this
// node's subscription, and a record it makes available meanwhile sends a
// Notify; stepNotify, finding no poll of the (gone) topic, files the owner
// under notified[topic], which nothing drops any more: the topic's delete
// was applied here already.
func TestANotifyAfterTheDeleteLeavesNoState(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	slow := c.otherThan(leader) // applies the delete last
	index := slices.Index(owners, slow)
	require.GreaterOrEqual(t, index, 0)

	// A poll parked at the leader subscribes at the other owners.
	poll := c.send(leader, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 10_000})
	c.settle()
	require.Contains(t, c.nodes[slow].cluster.subscribers["t"], leader, "sanity: the leader subscribed at the slow owner")

	// The delete commits without the slow owner (its raft traffic is lost).
	c.drop = func(env msg.Envelope) bool {
		_, isRaft := env.Message.(msg.RaftMessage)
		return isRaft && (env.To == slow || env.From == slow)
	}
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.replies[poll].Err), "sanity: the parked poll was answered 404")
	_, known := c.nodes[slow].meta.State().Topic("t")
	require.True(t, known, "sanity: the slow owner has not applied the delete")

	// The slow owner takes a record of the topic it still knows, and
	// notifies its subscriber.
	require.NoError(t, c.do(slow, producePinned("t", index, "x")).Err)

	c.drop = nil
	for range 10 {
		c.tick(100)
	}
	_, known = c.nodes[slow].meta.State().Topic("t")
	require.False(t, known, "sanity: the delete reached the slow owner")
	for _, id := range c.ids {
		n := c.nodes[id]
		require.NotContains(t, n.cluster.notified, "t", "%s: notifications of a deleted topic, kept for good", id)
		require.NotContains(t, n.cluster.subscribers, "t", "%s: subscribers of a deleted topic", id)
	}
}

// A Subscribe for a topic this node does not know (deleted here already,
// sent by a node behind; or created elsewhere and not applied here yet)
// is kept until it runs out, then swept: nothing of it stays for good.
func TestASubscribeForAnUnknownTopicIsSweptOnceItRunsOut(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	owner := c.otherThan(leader)
	require.NoError(t, c.nodes[owner].Step(msg.Envelope{From: leader, To: owner, Message: msg.Subscribe{Topic: "ghost", ForMs: 5_000}}))
	require.Contains(t, c.nodes[owner].cluster.subscribers, "ghost", "kept while it lasts: the topic may be about to exist here")
	for range subscribeForMsMax/1_000 + 2 {
		c.tick(1_000)
	}
	require.NotContains(t, c.nodes[owner].cluster.subscribers, "ghost", "swept once it ran out")
}
