package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAPollOutlivingItsSubscriptionIsStillNotified: a poll parked
// while an earlier subscription at the owner still had more than half its
// life left does not subscribe again, yet it may wait longer than that
// subscription lasts. A record produced at the owner after the
// subscription ran out, while the poll still waits, must answer the poll.
func TestAPollOutlivingItsSubscriptionIsStillNotified(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	poller := owners[0]
	remote := slices.IndexFunc(owners, func(o string) bool { return o != poller })
	cfg := c.configs[poller]
	forMs := cfg.ConsumeWaitMaxMs + cfg.ForwardTimeoutMs

	// A first short poll subscribes at the other owners, then times out.
	first := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 500})
	c.settle()
	start := c.nowMs
	c.await(first, 100, 20)

	// Just before half the subscription's life has passed, a long poll
	// parks: the subscription is "fresh", so no new Subscribe is sent.
	for c.nowMs < start+forMs/2-200 {
		c.tick(100)
	}
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: cfg.ConsumeWaitMaxMs})
	c.settle()

	// The subscription runs out at the owner; the poll still waits.
	for c.nowMs < start+forMs+500 {
		c.tick(100)
	}
	_, answered := c.replies[poll]
	require.False(t, answered, "nothing was produced: the poll still waits")

	require.NoError(t, c.do(c.otherThan(poller, owners[remote]), producePinned("t", remote, "late")).Err)
	c.tick(100)
	reply, answered := c.replies[poll]
	require.True(t, answered, "a record on the owner's partition must wake the parked poll, which still waits")
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1)
}

// TestADrainingNodeDoesNotForwardAPinnedPollToWait: once graceful
// shutdown starts (ReleaseWaiters), consumes no longer wait. A consume
// pinned to a partition another node owns must not be forwarded with its
// wait: it would hold the client (and the host's shutdown) for up to the
// whole wait.
func TestADrainingNodeDoesNotForwardAPinnedPollToWait(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	draining := owners[0]
	remote := slices.IndexFunc(owners, func(o string) bool { return o != draining })

	c.nodes[draining].ReleaseWaiters()
	poll := c.send(draining, msg.Consume{Topic: "t", Partition: remote, WaitMs: 8_000})
	c.settle()
	c.tick(100)
	reply, answered := c.replies[poll]
	require.True(t, answered, "a draining node answers a consume at once, pinned to another owner's partition or not")
	require.NoError(t, reply.Err)
	require.Empty(t, reply.Result.(msg.ConsumeResult).Messages)
}
