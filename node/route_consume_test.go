package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAProbeReleaseIsNoDelivery: a probe reserves records at their owner
// for a poll parked on another node; when the poll was answered meanwhile
// (its wait ran out), the records go back to the owner at once. No
// consumer received them, so that release is no delivery ending unacked:
// with max_deliveries 2, two such releases must not move the record to
// the dead-letter topic, and its first real delivery is delivery 1.
func TestAProbeReleaseIsNoDelivery(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "dead", Partitions: 3}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3, MaxDeliveries: 2, DeadLetterTopic: "dead"}).Err)
	c.tick(100)
	owners := c.owners(leader, "t")
	poller := owners[0]
	remote := slices.IndexFunc(owners, func(o string) bool { return o != poller })
	require.NoError(t, c.do(c.otherThan(poller, owners[remote]), producePinned("t", remote, "never-seen")).Err)

	var held []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		reply, ok := env.Message.(msg.ForwardReply)
		if !ok || env.To != poller {
			return false
		}
		result, ok := reply.Reply.Result.(msg.ConsumeResult)
		if ok && len(result.Messages) > 0 {
			held = append(held, env) // the probe's answer arrives late
			return true
		}
		return false
	}
	for round := range 2 {
		poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 500})
		c.settle()
		require.Len(t, held, 1, "round %d: the probe reserved the record at its owner", round)
		c.tick(600)
		require.Empty(t, c.replies[poll].Result.(msg.ConsumeResult).Messages, "round %d: the poll's wait ran out", round)
		late := held[0]
		held = nil
		require.NoError(t, c.nodes[late.To].Step(late))
		c.settle() // the poller sends the records back to their owner
	}
	c.drop = nil
	for range 5 {
		c.tick(100)
	}
	for partition := range 3 {
		replay := c.do(leader, msg.Replay{Topic: "dead", Partition: partition, Offset: 0})
		if replay.Err == nil {
			require.Nil(t, replay.Result.(msg.ReplayResult).Message, "partition %d of the dead-letter topic: the record was never delivered", partition)
		}
	}
	got := c.do(owners[remote], msg.Consume{Topic: "t", Partition: remote})
	require.NoError(t, got.Err)
	messages := got.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the record is still in its topic")
	require.Equal(t, uint32(1), messages[0].DeliveryCount, "its first delivery to a consumer")
}
