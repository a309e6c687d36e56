package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A poll parked on one node waits for a record of the topic. The only
// record sits in partition 0 on another node, reserved by a consumer with
// a long visibility timeout. Partition 0 then moves to a node that owned
// no partition of the topic; a move carries no reservation, so at the new
// owner the record is deliverable at once: the poll gets it (the poller
// probes the owner it newly subscribes at, and the new owner notifies its
// subscribers of the partition it gained), not an empty answer at the end
// of its wait.
// reservedBeforeAMove makes four nodes, a topic of three partitions with
// the longest visibility timeout on three of them (idle owns none), and
// the one record of partition 0 ("only") reserved at its owner, owners[0],
// for the whole test.
func reservedBeforeAMove(t *testing.T) (c *clusterHarness, leader string, owners []string, idle string) {
	c = newClusterHarness(t, 4)
	leader = c.elect()
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3, VisibilityTimeoutMs: msg.VisibilityTimeoutMsMax}).Err)
	c.tick(100)
	owners = c.owners(leader, "t")
	idle = c.ownsNone(t, owners)
	require.NoError(t, c.do(owners[0], producePinned("t", 0, "only")).Err)
	held := c.do(owners[0], msg.Consume{Topic: "t", Partition: 0})
	require.NoError(t, held.Err)
	require.Len(t, held.Result.(msg.ConsumeResult).Messages, 1)
	return c, leader, owners, idle
}

func TestAPollParkedAcrossAMoveGetsTheRecordReadyAtTheNewOwner(t *testing.T) {
	c, leader, owners, idle := reservedBeforeAMove(t)
	source, poller := owners[0], owners[1]
	require.NotEqual(t, source, poller)

	parkedAtMs := c.nowMs
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 10_000})
	c.tick(100)
	_, answered := c.replies[poll]
	require.False(t, answered, "the only record is reserved: the poll waits")

	c.startMove(leader, "t", 0, idle)
	c.tickUntil(100, 60, func() bool { return c.owners(poller, "t")[0] == idle && c.owners(idle, "t")[0] == idle })
	t.Logf("partition 0 flipped to %s %d ms after the poll parked at %s", idle, c.nowMs-parkedAtMs, poller)

	reply := c.await(poll, 100, 120) // the poll's wait ends within 10 s
	require.NoError(t, reply.Err)
	if len(reply.Result.(msg.ConsumeResult).Messages) == 0 {
		direct := c.do(idle, msg.Consume{Topic: "t", Partition: 0})
		require.NoError(t, direct.Err)
		require.Len(t, direct.Result.(msg.ConsumeResult).Messages, 1)
		t.Logf("the poll was answered empty %d ms after parking; a consume at %s right after got %q",
			c.nowMs-parkedAtMs, idle, direct.Result.(msg.ConsumeResult).Messages[0].Payload)
	}
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1,
		"the record is deliverable at the partition's new owner: the parked poll must get it, not an empty answer")
}
