package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAnAckFreeingASlotWakesARemotePoll: docs/api.md#consume says a
// poll parked on any node is woken when a record becomes available on any
// partition of the topic, and that a partition at its
// max_in_flight_per_partition delivers nothing "until that changes". An
// ack at the owner frees the slot and makes the next record available, so
// a poll parked on another node must be answered with it.
func TestAnAckFreeingASlotWakesARemotePoll(t *testing.T) {
	f := parkAtACappedPartition(t)
	require.NoError(t, f.c.do(f.owner, msg.Ack{Topic: "t", Handles: []string{f.held.ReceiptHandle}, Action: msg.AckCommit}).Err)
	f.requireWokenWithTheSecond(t, "the ack freed the slot: the parked poll must be woken with the next record, not answered empty")
}

// cappedPoll is a three-node cluster whose topic "t" (max_in_flight 1)
// holds two records on one partition, the first leased (held), and a poll
// parked on another node (poll) that waits for a record.
type cappedPoll struct {
	c             *clusterHarness
	leader, owner string
	held          msg.Message
	poll          msg.RequestID
}

func parkAtACappedPartition(t *testing.T) cappedPoll {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3, InFlightMax: 1}).Err)
	c.tick(100)
	owners := c.owners(leader, "t")
	owner := owners[0]
	poller := c.otherThan(owner)
	partition := slices.IndexFunc(owners, func(o string) bool { return o == owner })
	for _, payload := range []string{"first", "second"} {
		require.NoError(t, c.do(owner, producePinned("t", partition, payload)).Err)
	}
	held := c.do(owner, msg.Consume{Topic: "t", Partition: partition})
	require.NoError(t, held.Err)
	first := held.Result.(msg.ConsumeResult).Messages[0]
	require.Equal(t, "first", string(first.Payload))

	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.tick(100)
	_, answered := c.replies[poll]
	require.False(t, answered, "the only partition with records is at its in-flight cap: the poll waits")
	return cappedPoll{c: c, leader: leader, owner: owner, held: first, poll: poll}
}

// requireWokenWithTheSecond awaits the poll (its wait ends within 8 s)
// and requires the second record in its answer.
func (f cappedPoll) requireWokenWithTheSecond(t *testing.T, why string) {
	reply := f.c.await(f.poll, 100, 100)
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, why)
	require.Equal(t, "second", string(messages[0].Payload))
}
