package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

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
	_, capped := parkBehindTheInFlightCap(t, h)
	countLooks(t)
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
	requireStillWaiting(t, h, parked)
}

// parkBehindTheInFlightCap produces two records to partition 0 of
// "orders", whose in-flight cap is 1, takes the first, and parks a poll
// pinned to partition 0, which the cap holds back from the second; it
// returns the record taken and the poll.
func parkBehindTheInFlightCap(t *testing.T, h *harness) (msg.Message, msg.RequestID) {
	t.Helper()
	h.produce("orders", 0, "first")
	h.produce("orders", 0, "second")
	taken := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult)
	require.Len(t, taken.Messages, 1)
	require.Equal(t, "first", string(taken.Messages[0].Payload))
	capped := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 60_000})
	require.NotContains(t, h.replies, capped, "the partition is at its in-flight cap: the poll waits")
	return taken.Messages[0], capped
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

// requireStillWaiting requires the polls parked on the other partitions
// (parkOnTheOtherPartitions) unanswered.
func requireStillWaiting(t *testing.T, h *harness, parked []msg.RequestID) {
	t.Helper()
	for _, id := range parked {
		require.NotContains(t, h.replies, id, "the polls pinned to empty partitions still wait")
	}
}

// takeOneAndPark produces a record to partition 0 of "orders", takes it,
// and parks a poll pinned to partition 0, which finds nothing; it
// returns the record taken and the poll.
func takeOneAndPark(t *testing.T, h *harness, payload string) (msg.Message, msg.RequestID) {
	t.Helper()
	h.produce("orders", 0, payload)
	taken := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult)
	require.Len(t, taken.Messages, 1)
	poll := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 60_000})
	require.NotContains(t, h.replies, poll, "nothing left to deliver on partition 0: the poll waits")
	return taken.Messages[0], poll
}

// A nack releases a record of its partition: the poll pinned there gets
// it again, and the polls pinned to the other partitions are not looked
// at.
func TestANackWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	taken, poll := takeOneAndPark(t, h, "released")
	countLooks(t)
	require.NoError(t, h.ackHandle("orders", taken.ReceiptHandle, msg.AckNack))
	require.Zero(t, closedLogLooks(), "a nack on partition 0 looks at none of the partitions the polls are pinned to")
	requireServed(t, h, poll, "released")
	requireStillWaiting(t, h, parked)
}

// An ack that frees an in-flight slot lets its partition's next record
// go: the poll pinned there gets it, and the polls pinned to the other
// partitions are not looked at.
func TestAnAckFreeingASlotWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h, parked := parkPinnedPollsWith(t, func(*Config) {}, func(c *msg.CreateTopic) { c.InFlightMax = 1 })
	first, capped := parkBehindTheInFlightCap(t, h)
	countLooks(t)
	require.NoError(t, h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit))
	require.Zero(t, closedLogLooks(), "an ack on partition 0 looks at none of the partitions the polls are pinned to")
	requireServed(t, h, capped, "second")
	requireStillWaiting(t, h, parked)
}

// A lease that runs out makes its record deliverable again: the poll
// pinned to its partition gets it at the tick that expires it, and the
// polls pinned to the other partitions are not looked at.
func TestAnExpiredLeaseWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h, parked := parkPinnedPollsWith(t, func(*Config) {}, func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	_, poll := takeOneAndPark(t, h, "lapsed")
	countLooks(t)
	h.tick(1_000)
	require.Zero(t, closedLogLooks(), "a lapse on partition 0 looks at none of the partitions the polls are pinned to")
	requireServed(t, h, poll, "lapsed")
	requireStillWaiting(t, h, parked)
}

// Retention that drops an in-flight reservation frees its partition's
// slot (TestRetentionFreeingASlotWakesAParkedPoll): the poll pinned there
// gets the next record, and the polls pinned to the other partitions are
// not looked at.
func TestRetentionFreeingASlotWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.cfg.Log.SegmentBytes = 4096
	h.cfg.RetentionCheckIntervalMs = 1_000
	h.restart()
	h.createTopic("orders", func(c *msg.CreateTopic) {
		c.Partitions, c.InFlightMax = pinnedPartitions, 1
		c.RetentionMs, c.VisibilityTimeoutMs = msg.RetentionMsMin, msg.VisibilityTimeoutMsMax
	})
	payload := string(make([]byte, 1000))
	for range 20 {
		h.produce("orders", 0, payload)
	}
	first := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult).Messages[0]
	require.Zero(t, first.Offset)
	h.tick(msg.RetentionMsMin - 500) // retention has not expired anything yet
	parked := parkOnTheOtherPartitions(h)
	capped := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 10_000})
	require.NotContains(t, h.replies, capped, "the partition is at its in-flight cap: the poll waits")
	countLooks(t)
	h.tick(2_000) // retention deletes the sealed segments, the lease of offset 0 with them
	require.Positive(t, h.stats("orders", 0).OldestOffset)
	require.Zero(t, closedLogLooks(), "retention on partition 0 looks at none of the partitions the polls are pinned to")
	reply, answered := h.replies[capped]
	require.True(t, answered, "retention freed the in-flight slot: the parked poll must get a record")
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1)
	requireStillWaiting(t, h, parked)
}

// A record exhausted by a nack frees its in-flight slot once its copy is
// durable in the dead-letter topic (deadLettersSettled): the poll pinned
// to its partition gets the next record then, and neither the nack nor
// the settling looks at the polls pinned to the other partitions.
func TestADeadLetterSettledWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.restart()
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(1, "dead"), func(c *msg.CreateTopic) { c.Partitions, c.InFlightMax = pinnedPartitions, 1 })
	parked := parkOnTheOtherPartitions(h)
	first, capped := parkBehindTheInFlightCap(t, h)
	countLooks(t)
	require.NoError(t, h.ackHandle("orders", first.ReceiptHandle, msg.AckNack))
	require.Zero(t, closedLogLooks(), "the dead letter of partition 0 looks at none of the partitions the polls are pinned to")
	requireServed(t, h, capped, "second")
	copied, ok := h.consume("dead")
	require.True(t, ok)
	require.Equal(t, "first", string(copied.Payload), "the exhausted record went to the dead-letter topic")
	requireStillWaiting(t, h, parked)
}

// A reserve that stopped at the skip bound in a damaged run of partition
// 0 (TestAPollPastMoreCorruptRecordsThanOneReserveSkipsIsServed) is
// looked at again at the next tick: the poll pinned to partition 0 gets
// the good record beyond, and the polls pinned to the other partitions
// are not looked at.
func TestAPollPastTheSkipBoundWakesOnlyThePollsOfItsPartition(t *testing.T) {
	const damaged = corruptSkipsPerReserveMax + 6
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.cfg.Log.HWMLagBytesMax, h.cfg.Log.HWMLagMsMax = 0, 0 // every acknowledged record below the persisted HWM
	h.restart()
	h.createTopic("orders", func(c *msg.CreateTopic) { c.Partitions = pinnedPartitions })
	writeDamagedRun(t, h, "orders", damaged)
	parked := parkOnTheOtherPartitions(h)
	countLooks(t)
	poll := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 10_000})
	require.NotContains(t, h.replies, poll, "the reserve stopped at the skip bound")
	h.tick(10)
	require.Zero(t, closedLogLooks(), "the look past the skip bound looks at none of the partitions the polls are pinned to")
	requireServed(t, h, poll, fmt.Sprintf("record-%03d", damaged))
	requireStillWaiting(t, h, parked)
}

// A poll pinned to partition 0 that a round's spent reads left
// unanswered (TestAPollLeftByARoundsSpentReadsLooksAgainAtTheNextTick)
// looks again at the next tick, and the polls pinned to the other
// partitions are not looked at.
func TestAPollLeftBySpentReadsWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.cfg.ConsumeReplyBytesMax = msg.MessageBytesMax
	h.cfg.RoundReadBytesMax = msg.MessageBytesMax
	h.restart()
	h.createTopic("orders", func(c *msg.CreateTopic) { c.Partitions = pinnedPartitions })
	parked := parkOnTheOtherPartitions(h)
	var polls []msg.RequestID
	for range 3 {
		polls = append(polls, h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 8_000}))
	}
	countLooks(t)
	produceThreeLargeRecords(h, "orders")
	require.Contains(t, h.replies, polls[0])
	require.Contains(t, h.replies, polls[1])
	require.NotContains(t, h.replies, polls[2], "the round's reads were spent")
	h.tick(1)
	require.Zero(t, closedLogLooks(), "the look again looks at none of the partitions the polls are pinned to")
	reply, answered := h.replies[polls[2]]
	require.True(t, answered, "the poll looked again at the Tick")
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1)
	requireStillWaiting(t, h, parked)
}

// A poll pinned to partition 0 whose record the lease budget held back
// (TestAPollHeldBackByTheLeaseBudgetIsServedOnceUnderIt) gets it when an
// ack of another topic takes the node under its budget, and the polls
// pinned to the other partitions are not looked at.
func TestAPollHeldBackByTheLeaseBudgetWakesOnlyThePollsOfItsPartition(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.cfg.LeasesMax = 1
	h.restart()
	h.createTopic("other")
	h.createTopic("orders", func(c *msg.CreateTopic) { c.Partitions = pinnedPartitions })
	parked := parkOnTheOtherPartitions(h)
	poll := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 60_000})
	h.produce("other", 0, "a")
	leased, ok := h.consume("other")
	require.True(t, ok)
	h.produce("orders", 0, "held")
	require.NotContains(t, h.replies, poll, "at the budget, the new record is held back")
	countLooks(t)
	require.NoError(t, h.ackHandle("other", leased.ReceiptHandle, msg.AckCommit))
	require.Zero(t, closedLogLooks(), "the end of the budget looks at none of the partitions the polls are pinned to")
	requireServed(t, h, poll, "held")
	requireStillWaiting(t, h, parked)
}

// A partition frozen for a move delivers nothing; a poll pinned to it at
// its owner parks, and gets its record when the move is aborted and the
// partition unfrozen (its wake names the partition).
func TestAPollPinnedToAFrozenPartitionIsServedAtTheUnfreeze(t *testing.T) {
	c, leader, source, target := installedUnflipped(t, 1)
	poll := c.send(source, msg.Consume{Topic: "t", Partition: 0, WaitMs: 10_000})
	c.tick(100)
	require.NotContains(t, c.replies, poll, "the partition is frozen: the poll waits")
	c.abortMove(leader, "t", 0, target)
	reply := c.await(poll, 100, 5)
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the unfrozen partition serves the parked poll at once, not at the end of its wait")
	require.Equal(t, "r0", string(messages[0].Payload))
}

// A partition whose install job was out at its flip becomes servable at
// the new owner when the job comes back (keepOrphanedJob): a poll parked
// on the new owner itself is served then (its wake names the partition),
// as one parked elsewhere is (TestAKeptInstallJobNotifiesPollsParkedElsewhere).
func TestAKeptInstallJobServesAPollParkedAtTheNewOwner(t *testing.T) {
	c, leader, source, target, out := finalizeJobHeld(t)
	c.proposeFlip(leader, source, target)
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })
	poll := c.send(target, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 30_000})
	c.tick(100)
	require.NotContains(t, c.replies, poll, "the only record is behind the install: the poll parks")
	c.returnHeldJob(out)
	reply, answered := c.replies[poll]
	require.True(t, answered, "the record servable at %s was offered to the poll parked there", target)
	require.NoError(t, reply.Err)
	require.Equal(t, "r", string(reply.Result.(msg.ConsumeResult).Messages[0].Payload))
}
