package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A change of the topics wakes only the parked polls it may serve
// (reconcileTopics): those of a topic whose caps let more records go, and
// the unpinned polls of a topic with a partition this node gained. The
// tests park polls pinned to the empty partitions of "orders"
// (parkPinnedPolls), count the looks at them (closedLogLooks), and
// require every poll the change may serve to be served, so that the
// narrower wake strands none.

// Creating a topic serves no poll of another: it looks at none of the
// partitions the polls of "orders" are pinned to. Every topic change
// woke every parked poll of every topic.
func TestCreatingAnotherTopicLooksAtNoPinnedPartition(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	countLooks(t)
	h.createTopic("other", func(c *msg.CreateTopic) { c.Partitions = 3 })
	require.Zero(t, closedLogLooks(), "creating another topic looks at none of the partitions the polls of orders are pinned to")
	requireStillWaiting(t, h, parked)
}

// Altering a topic, even raising its caps, serves no poll of another
// topic; altering "orders" in ways that make none of its records
// deliverable (its retention, a lowered in-flight cap) wakes none of its
// own polls either.
func TestAlteringATopicLooksAtNoPollOfAnother(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	h.createTopic("other", func(c *msg.CreateTopic) { c.InFlightMax = 1 })
	countLooks(t)
	two, retention, one := 2, int64(3_600_000), 1
	h.ok(msg.AlterTopic{Name: "other", InFlightMax: &two, RetentionMs: &retention})
	require.Zero(t, closedLogLooks(), "altering other looks at none of the partitions the polls of orders are pinned to")
	h.ok(msg.AlterTopic{Name: "orders", RetentionMs: &retention})
	h.ok(msg.AlterTopic{Name: "orders", InFlightMax: &one})
	require.Zero(t, closedLogLooks(), "a retention or a lowered cap makes nothing of orders deliverable: its polls are not looked at")
	requireStillWaiting(t, h, parked)
}

// A raised cap still serves the poll it held back, and wakes no poll of
// another topic: the capped poll of "capped" gets its second record, and
// the polls pinned to the partitions of "orders" are not looked at.
func TestARaisedCapServesItsTopicsCappedPollOnly(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	h.createTopic("capped", func(c *msg.CreateTopic) { c.InFlightMax = 1 })
	h.produce("capped", 0, "first")
	h.produce("capped", 0, "second")
	taken := h.ok(msg.Consume{Topic: "capped", Partition: 0}).(msg.ConsumeResult)
	require.Len(t, taken.Messages, 1)
	capped := h.send(msg.Consume{Topic: "capped", Partition: 0, WaitMs: 60_000})
	require.NotContains(t, h.replies, capped, "the partition is at its in-flight cap: the poll waits")
	countLooks(t)
	two := 2
	h.ok(msg.AlterTopic{Name: "capped", InFlightMax: &two})
	requireServed(t, h, capped, "second")
	require.Zero(t, closedLogLooks(), "raising the cap of capped looks at none of the partitions the polls of orders are pinned to")
	requireStillWaiting(t, h, parked)
}

// Growth gains this node new partitions: its unpinned polls may take
// their records, and no poll pinned to an old partition is looked at. A
// poll parked unpinned across the growth gets the first record of a new
// partition.
func TestGrowthServesAnUnpinnedPollAndLooksAtNoPinnedPartition(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	countLooks(t)
	grown := pinnedPartitions + 1
	h.ok(msg.AlterTopic{Name: "orders", Partitions: &grown})
	require.Zero(t, closedLogLooks(), "growth looks at none of the partitions the polls are pinned to")
	unpinned := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 60_000})
	require.NotContains(t, h.replies, unpinned, "every partition is empty: the poll waits")
	grown++
	h.ok(msg.AlterTopic{Name: "orders", Partitions: &grown})
	require.NotContains(t, h.replies, unpinned, "the new partition is empty")
	h.produce("orders", grown-1, "new")
	requireServed(t, h, unpinned, "new")
	requireStillWaiting(t, h, parked)
}

// Deleting a topic answers its parked polls 404, as ever (dropTopicState),
// and serves no poll of another topic.
func TestDeletingATopicAnswersItsParkedPollsAndNoOther(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	h.createTopic("doomed")
	doomed := []msg.RequestID{
		h.send(msg.Consume{Topic: "doomed", Partition: 0, WaitMs: 60_000}),
		h.send(msg.Consume{Topic: "doomed", Partition: msg.PartitionNone, WaitMs: 60_000}),
	}
	countLooks(t)
	h.ok(msg.DeleteTopic{Name: "doomed"})
	for _, id := range doomed {
		reply, answered := h.replies[id]
		require.True(t, answered, "a poll of a deleted topic is answered at the delete")
		require.Equal(t, msg.CodeNotFound, msg.CodeOf(reply.Err))
	}
	require.Zero(t, closedLogLooks(), "deleting doomed looks at none of the partitions the polls of orders are pinned to")
	requireStillWaiting(t, h, parked)
}

// A flip of a partition to this node makes its records deliverable here
// at once (a move carries no reservation): an unpinned poll parked at the
// new owner, which found the partition frozen at its source, gets its
// record at the flip, not at the end of its wait. (A poll pinned to the
// partition never parks here before the flip: it goes to the owner, which
// releases it at the flip: releasePinnedPolls.)
func TestAFlipServesAnUnpinnedPollParkedAtTheNewOwner(t *testing.T) {
	c, leader, source, target := installedUnflipped(t, 1)
	poll := c.send(target, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 30_000})
	c.tick(100)
	require.NotContains(t, c.replies, poll, "the only record is frozen at the source: the poll parks")
	c.proposeFlip(leader, source, target)
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })
	reply, answered := c.replies[poll]
	require.True(t, answered, "the partition gained is looked at for the poll parked at %s when the flip applies", target)
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1)
	require.Equal(t, "r0", string(messages[0].Payload))
}
