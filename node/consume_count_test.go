package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// newCountedCluster starts three nodes that record the consume outcomes
// they report, with a topic of three partitions (one per node).
func newCountedCluster(t *testing.T) (*clusterHarness, map[string]*pollOutcomes) {
	c := newClusterHarness(t, 3)
	outcomes := observeEach(c, func() *pollOutcomes { return &pollOutcomes{} })
	c.electWithTopic("t", 3)
	return c, outcomes
}

// observeEach gives every node of c an observer of its own, made by
// fresh, and restarts the nodes with them; it returns them by node id.
func observeEach[T Observer](c *clusterHarness, fresh func() T) map[string]T {
	observers := map[string]T{}
	c.observers = map[string]Observer{}
	for _, id := range c.ids {
		observers[id] = fresh()
		c.observers[id] = observers[id]
	}
	c.reconfigure(func(*Config) {})
	return observers
}

// Property: a client's consume is counted once, at the node that served
// it: an unpinned consume at the node it reached (the other owners it
// probed count nothing), a pinned one forwarded whole at its partition's
// owner (the node it reached counts nothing), cancelled there too
// (metrics audit finding 2: each probe was counted at its owner as a
// no_wait poll, and in narad_consume_empty_total when it found nothing).
func TestAClientsConsumeIsCountedOnce(t *testing.T) {
	c, outcomes := newCountedCluster(t)
	owners := c.owners(c.ids[0], "t")
	require.Len(t, outcomes, 3)
	poller := owners[0]
	remote := 1
	require.NotEqual(t, poller, owners[remote], "one partition per node")
	require.NoError(t, c.do(poller, producePinned("t", remote, "a")).Err)
	counted := func() map[string][]string {
		got := map[string][]string{}
		for id, o := range outcomes {
			got[id] = o.outcomes
			o.outcomes = nil
		}
		return got
	}
	counted()

	got := c.do(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone}).Result.(msg.ConsumeResult)
	require.Len(t, got.Messages, 1, "the record on another owner's partition, through its probe")
	got = c.do(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone}).Result.(msg.ConsumeResult)
	require.Empty(t, got.Messages)
	after := counted()
	require.Equal(t, []string{"hit", "no_wait"}, after[poller])
	for _, id := range c.except(poller) {
		require.Empty(t, after[id], "%s was only probed", id)
	}

	require.NoError(t, c.do(poller, producePinned("t", remote, "b")).Err)
	counted()
	got = c.do(poller, msg.Consume{Topic: "t", Partition: remote}).Result.(msg.ConsumeResult)
	require.Len(t, got.Messages, 1)
	parked := c.send(poller, msg.Consume{Topic: "t", Partition: remote, WaitMs: 5_000})
	c.settle()
	c.nodes[poller].Cancel(parked)
	c.settle()
	after = counted()
	require.Equal(t, []string{"hit", "cancelled"}, after[owners[remote]], "a pinned consume counts at its owner")
	for _, id := range c.except(owners[remote]) {
		require.Empty(t, after[id], "%s only passed the pinned consumes on", id)
	}
}
