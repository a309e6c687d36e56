package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
	"narad/msg"
)

// The causes of a wake that know the partition whose records they made
// servable wake only the polls that may take them: the topic's unpinned
// polls and those pinned to that partition. Each test parks polls pinned
// to the other partitions of a topic (parkPinnedPollsWith), counts the
// looks at them as TestRecordsOnOnePartitionLookAtNoOtherPinnedPartition
// does, and requires the poll pinned to the cause's partition to get the
// record, so that narrowing the wake strands no poll.

// An applied entry that changes no topic record (here the node's own
// heartbeat) changes nothing a parked poll could take: it wakes no poll.
// Waking every topic's polls at each applied entry looked at every
// pinned partition once per heartbeat round. A change of the topic (a
// raised in-flight cap, which may serve any partition) still wakes the
// polls of every partition, among them the one the cap held back.
func TestAHeartbeatLooksAtNoPinnedPartition(t *testing.T) {
	h, parked := parkPinnedPollsWith(t, func(*Config) {}, func(c *msg.CreateTopic) { c.InFlightMax = 1 })
	capped := parkBehindTheInFlightCap(t, h)
	chaos.Record(nil, 0)
	defer chaos.Reset()
	applied := h.node.meta.AppliedIndex()
	for range 14 { // 7 s: past the member heartbeat interval
		h.tick(500)
	}
	require.Greater(t, h.node.meta.AppliedIndex(), applied, "a heartbeat was applied")
	require.Zero(t, closedLogLooks(), "a heartbeat looks at none of the partitions the polls are pinned to")
	require.NotContains(t, h.replies, capped, "nothing the capped poll may take changed")

	two := 2
	h.ok(msg.AlterTopic{Name: "orders", InFlightMax: &two})
	require.Positive(t, closedLogLooks(), "a change of the topic wakes the polls of every partition (the count is not blind)")
	requireServed(t, h, capped, "second")
	for _, id := range parked {
		require.NotContains(t, h.replies, id, "the polls pinned to empty partitions still wait")
	}
}

// parkBehindTheInFlightCap produces two records to partition 0 of
// "orders", whose in-flight cap is 1, takes the first, and parks a poll
// pinned to partition 0, which the cap holds back from the second.
func parkBehindTheInFlightCap(t *testing.T, h *harness) msg.RequestID {
	t.Helper()
	h.produce("orders", 0, "first")
	h.produce("orders", 0, "second")
	taken := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult)
	require.Len(t, taken.Messages, 1)
	require.Equal(t, "first", string(taken.Messages[0].Payload))
	capped := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 60_000})
	require.NotContains(t, h.replies, capped, "the partition is at its in-flight cap: the poll waits")
	return capped
}

// requireServed requires the parked poll id answered with the one
// record whose payload is want.
func requireServed(t *testing.T, h *harness, id msg.RequestID, want string) {
	t.Helper()
	reply, answered := h.replies[id]
	require.True(t, answered, "the poll that may take the record is woken")
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1)
	require.Equal(t, want, string(messages[0].Payload))
}
