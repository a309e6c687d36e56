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

// unclaimedSetup makes a topic "t" whose records go to the dead-letter
// topic "dead" after one delivery, with a visibility timeout far shorter
// than the test's ticks, and a record in one partition. It returns that
// partition's owner and a node that owns none of "t"'s partition 0.
func unclaimedSetup(t *testing.T) (c *clusterHarness, leader, owner, asker string) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("dead", 3)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3, MaxDeliveries: 1, DeadLetterTopic: "dead", VisibilityTimeoutMs: 3_000}).Err)
	c.tick(100)
	owner = c.owners(leader, "t")[0]
	return c, leader, owner, c.otherThan(owner)
}

// requireOnlyDelivery checks, after the record's visibility timeout has
// passed many times over, that nothing reached the dead-letter topic and
// that the record's first delivery to a consumer is delivery 1.
func requireOnlyDelivery(t *testing.T, c *clusterHarness, leader, owner string) {
	for range 50 {
		c.tick(100)
	}
	for partition, deadOwner := range c.owners(leader, "dead") {
		replay := c.do(deadOwner, msg.Replay{Topic: "dead", Partition: partition, Offset: 0})
		require.NoError(t, replay.Err)
		require.Nil(t, replay.Result.(msg.ReplayResult).Message, "partition %d of the dead-letter topic: no consumer ever received the record", partition)
	}
	got := c.do(owner, msg.Consume{Topic: "t", Partition: 0})
	require.NoError(t, got.Err)
	messages := got.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the record is still in its topic")
	require.Equal(t, uint32(1), messages[0].DeliveryCount, "its first delivery to a consumer")
}

// TestALateProbeAnswerIsHandedBack: the owner's answer to a probe arrives
// after the probe's forward timed out, so no poll can take its records;
// they go back to the owner (an ack-return), and their reservation is no
// delivery: with max_deliveries 1 the record must not be dead-lettered.
func TestALateProbeAnswerIsHandedBack(t *testing.T) {
	c, leader, owner, asker := unclaimedSetup(t)
	require.NoError(t, c.do(owner, producePinned("t", 0, "never-seen")).Err)
	var late []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		reply, ok := env.Message.(msg.ForwardReply)
		if !ok || env.From != owner || env.To != asker {
			return false
		}
		result, ok := reply.Reply.Result.(msg.ConsumeResult)
		if ok && len(result.Messages) > 0 {
			late = append(late, env)
			return true
		}
		return false
	}
	poll := c.send(asker, msg.Consume{Topic: "t", Partition: msg.PartitionNone})
	c.settle()
	require.Len(t, late, 1, "the owner reserved the record for the probe")
	c.tick(c.nodes[asker].cfg.ForwardTimeoutMs + 1)
	require.Empty(t, c.replies[poll].Result.(msg.ConsumeResult).Messages, "the client was answered without the record")
	c.drop = nil
	require.NoError(t, c.nodes[asker].Step(late[0]))
	c.settle()
	requireOnlyDelivery(t, c, leader, owner)
}

// TestACancelledForwardedPollHandsItsRecordsBack: a long poll pinned to
// another node's partition is forwarded whole and parks at the owner; its
// client leaves (Cancel) before a record arrives. The owner still reserves
// the record for the parked poll, and its answer comes back for a client
// that is gone: the record goes back to the owner, uncounted.
func TestACancelledForwardedPollHandsItsRecordsBack(t *testing.T) {
	c, leader, owner, asker := unclaimedSetup(t)
	poll := c.send(asker, msg.Consume{Topic: "t", Partition: 0, WaitMs: 5_000})
	c.settle()
	c.nodes[asker].Cancel(poll)
	c.settle()
	require.NoError(t, c.do(owner, producePinned("t", 0, "never-seen")).Err)
	c.tick(100)
	requireOnlyDelivery(t, c, leader, owner)
	require.Empty(t, c.nodes[asker].routing.passedConsumes, "the forward's entry goes with its answer")
}
