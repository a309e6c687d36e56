package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

func TestConsumeReservesThenRedeliversAfterVisibilityTimeout(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k"), Partition: 1, Payload: []byte("hello")}}})
	first, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, "hello", string(first.Payload))
	require.Equal(t, "k", string(first.Key))
	require.Equal(t, uint32(1), first.DeliveryCount)
	require.Equal(t, harnessStartMs, first.TimestampMs)
	require.Regexp(t, `^1:0:[0-9]+:[0-9a-f]{16}$`, first.ReceiptHandle)

	_, ok = h.consume("orders")
	require.False(t, ok, "a reserved record is invisible to other consumers")
	h.tick(999)
	_, ok = h.consume("orders")
	require.False(t, ok, "still reserved 1 ms before the deadline")
	h.tick(1)
	second, ok := h.consume("orders")
	require.True(t, ok, "redelivered once the visibility timeout passed")
	require.Equal(t, uint32(2), second.DeliveryCount)
	require.NotEqual(t, first.ReceiptHandle, second.ReceiptHandle)
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit)), "the lapsed handle is stale")
	require.NoError(t, h.ackHandle("orders", second.ReceiptHandle, msg.AckCommit))
	h.tick(5_000)
	_, ok = h.consume("orders")
	require.False(t, ok, "an acked record is never delivered again")
}

func TestNackRedeliversAtOnceAndExtendKeepsTheLease(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	h.produce("orders", 0, "x")
	m, _ := h.consume("orders")
	require.NoError(t, h.ackHandle("orders", m.ReceiptHandle, msg.AckNack))
	again, ok := h.consume("orders")
	require.True(t, ok, "a nacked record is available at once")
	require.Equal(t, uint32(2), again.DeliveryCount)

	h.tick(800)
	require.NoError(t, h.ackHandle("orders", again.ReceiptHandle, msg.AckExtend))
	h.tick(800) // 1,600 ms after the reservation, 800 after the extend
	_, ok = h.consume("orders")
	require.False(t, ok, "an extended lease outlives its first deadline")
	require.NoError(t, h.ackHandle("orders", again.ReceiptHandle, msg.AckCommit), "the same handle stays valid after extend")
}

func TestAckRejectsMalformedAndForeignHandles(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for _, handle := range []string{"", "abc", "1:2", "1:2:3", "1:2:0:0123456789abcdef", "-1:2:3:0123456789abcdef", "1:2:3:4:0123456789abcdef", "1:2:3:0123456789ABCDEF"} {
		require.Equal(t, msg.CodeInvalid, msg.CodeOf(h.ackHandle("orders", handle, msg.AckCommit)), "handle %q", handle)
	}
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", "7:0:12:0123456789abcdef", msg.AckCommit)), "partition out of range")
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", "0:0:12:0123456789abcdef", msg.AckCommit)), "never reserved")
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(h.ackHandle("missing", "0:0:12:0123456789abcdef", msg.AckCommit)))
}

func TestOutOfOrderAcksAdvanceTheFrontierWhenContiguous(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for i := range 3 {
		h.produce("orders", 0, fmt.Sprint(i))
	}
	var handles []string
	for range 3 {
		m, ok := h.consume("orders")
		require.True(t, ok)
		handles = append(handles, m.ReceiptHandle)
	}
	require.NoError(t, h.ackHandle("orders", handles[2], msg.AckCommit))
	require.NoError(t, h.ackHandle("orders", handles[1], msg.AckCommit))
	require.Equal(t, uint64(0), h.stats("orders", 0).Committed, "acks ahead of the frontier are held")
	require.NoError(t, h.ackHandle("orders", handles[0], msg.AckCommit))
	require.Equal(t, uint64(3), h.stats("orders", 0).Committed, "the frontier collapses the contiguous run")
}

func TestInFlightCapLimitsReservations(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.InFlightMax = 2 })
	for range 4 {
		h.produce("orders", 0, "x")
	}
	a, _ := h.consume("orders")
	h.consume("orders")
	_, ok := h.consume("orders")
	require.False(t, ok, "the in-flight cap stops a third reservation")
	require.NoError(t, h.ackHandle("orders", a.ReceiptHandle, msg.AckCommit))
	_, ok = h.consume("orders")
	require.True(t, ok, "an ack frees a slot")
}

func TestAckedAheadCapServesOnlyTheFrontier(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.AckedAheadMax = 1; c.VisibilityTimeoutMs = 1_000 })
	for range 4 {
		h.produce("orders", 0, "x")
	}
	var handles []string
	for range 3 {
		m, _ := h.consume("orders")
		handles = append(handles, m.ReceiptHandle)
	}
	require.NoError(t, h.ackHandle("orders", handles[1], msg.AckCommit))
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(h.ackHandle("orders", handles[2], msg.AckCommit)), "acked-ahead set full: 503")
	_, ok := h.consume("orders")
	require.False(t, ok, "with the set full only the frontier offset may be served, and it is in flight")
	h.tick(1_000) // every lease lapses; offset 0 becomes available again
	m, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, uint64(0), m.Offset, "the frontier is served first")
}

func TestBatchConsume(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for i := range 7 {
		h.produce("orders", i%3, "x")
	}
	result := h.ok(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, Max: 5}).(msg.ConsumeResult)
	require.Len(t, result.Messages, 5)
	require.True(t, result.Batch)
	result = h.ok(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, Max: 5}).(msg.ConsumeResult)
	require.Len(t, result.Messages, 2)
	result = h.ok(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, Max: 5}).(msg.ConsumeResult)
	require.Empty(t, result.Messages)
	require.NotNil(t, result.Messages, "an empty batch is a list, never null")
	h.fail(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, Max: 101}, msg.CodeInvalid)
	h.fail(msg.Consume{Topic: "orders", Partition: 9}, msg.CodeInvalid)
}

func TestPinnedConsumeReadsOnlyItsPartition(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 2, "two")
	result := h.ok(msg.Consume{Topic: "orders", Partition: 1}).(msg.ConsumeResult)
	require.Empty(t, result.Messages)
	result = h.ok(msg.Consume{Topic: "orders", Partition: 2}).(msg.ConsumeResult)
	require.Len(t, result.Messages, 1)
}

func TestLongPollIsWokenByAProduce(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	id := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 5_000})
	require.NotContains(t, h.replies, id, "nothing to deliver: the poll waits")
	h.tick(1_000)
	require.NotContains(t, h.replies, id)
	h.produce("orders", 1, "wake up")
	reply, ok := h.replies[id]
	require.True(t, ok, "the produce's sync round wakes the poll")
	require.Equal(t, "wake up", string(reply.Result.(msg.ConsumeResult).Messages[0].Payload))
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	id := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 2_000})
	require.LessOrEqual(t, h.node.NextDeadlineMs(), harnessStartMs+2_000, "the driver learns when to tick next")
	h.tick(1_999)
	require.NotContains(t, h.replies, id)
	h.tick(1)
	require.Empty(t, h.replies[id].Result.(msg.ConsumeResult).Messages)
}

func TestLongPollWaitIsClamped(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	id := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 3_600_000})
	h.tick(h.cfg.ConsumeWaitMaxMs)
	require.Contains(t, h.replies, id, "the wait is clamped to ConsumeWaitMaxMs")
}

func TestLongPollWokenByLeaseExpiryAndNack(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	h.produce("orders", 0, "x")
	m, _ := h.consume("orders")
	id := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 5_000})
	h.tick(1_000)
	require.Contains(t, h.replies, id, "an expired lease wakes a waiting poll")

	second := h.replies[id].Result.(msg.ConsumeResult).Messages[0]
	id2 := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 5_000})
	require.NoError(t, h.ackHandle("orders", second.ReceiptHandle, msg.AckNack))
	require.Contains(t, h.replies, id2, "a nack wakes a waiting poll")
	require.Equal(t, m.Offset, h.replies[id2].Result.(msg.ConsumeResult).Messages[0].Offset)
}

func TestCancelDropsAParkedPoll(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	id := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 5_000})
	h.node.Cancel(id)
	h.produce("orders", 0, "x")
	h.tick(10_000)
	require.NotContains(t, h.replies, id, "a cancelled poll is never answered")
	_, ok := h.consume("orders")
	require.True(t, ok, "and it reserved nothing")
}

func TestReplay(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 0, "first")
	h.produce("orders", 0, "second")
	result := h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 1}).(msg.ReplayResult)
	require.Equal(t, "second", string(result.Message.Payload))
	require.Empty(t, result.Message.ReceiptHandle, "replay reserves nothing")
	require.Nil(t, h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 2}).(msg.ReplayResult).Message, "past the HWM: nothing (204)")
	h.fail(msg.Replay{Topic: "orders", Partition: 3, Offset: 0}, msg.CodeInvalid)
	_, ok := h.consume("orders")
	require.True(t, ok, "replay does not touch queue state")
}

func TestCommittedOffsetSurvivesRestartAndCrash(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for range 3 {
		h.produce("orders", 0, "x")
	}
	for range 2 {
		m, _ := h.consume("orders")
		require.NoError(t, h.ackHandle("orders", m.ReceiptHandle, msg.AckCommit))
	}
	h.tick(h.cfg.CommitPersistIntervalMs) // persists the committed offset
	h.crash()
	m, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, uint64(2), m.Offset, "acked records persisted before the crash are not redelivered")
	require.NoError(t, h.ackHandle("orders", m.ReceiptHandle, msg.AckCommit))
	h.restart() // graceful: Close persists without waiting for the tick
	_, ok = h.consume("orders")
	require.False(t, ok)
}

func TestRedeliveryAfterCrashOfUnackedRecords(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 0, "x")
	m, _ := h.consume("orders")
	h.crash()
	again, ok := h.consume("orders")
	require.True(t, ok, "a reservation does not survive a crash: the record comes back")
	require.Equal(t, m.Offset, again.Offset)
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", m.ReceiptHandle, msg.AckCommit)), "handles of the old incarnation are stale")
}

// segmentedHarness is a node whose topic "orders" has 20 records of
// 1,000 bytes in partition 0, over several 4 KiB segments.
func segmentedHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.cfg.Log.SegmentBytes = 4096
	h.restart()
	h.createTopic("orders")
	payload := string(make([]byte, 1000))
	for range 20 {
		h.produce("orders", 0, payload)
	}
	return h
}

func TestRetentionAgesOutOldSegments(t *testing.T) {
	h := segmentedHarness(t)
	h.tick(h.cfg.DefaultRetentionMs + h.cfg.RetentionCheckIntervalMs)
	stats := h.stats("orders", 0)
	require.Positive(t, stats.OldestOffset, "sealed segments past retention are deleted")
	h.fail(msg.Replay{Topic: "orders", Partition: 0, Offset: 0}, msg.CodeGone)
	m, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, stats.OldestOffset, m.Offset, "the consumer frontier moves past deleted records")
}

// TestReopenedLogKeepsTheAckedFrontier: a log that fails and reopens
// recovers the committed offset last persisted, but acks since then are in
// the lease table: the log's frontier must not go back. Found by the
// simulator, seed 72.
func TestReopenedLogKeepsTheAckedFrontier(t *testing.T) {
	h := newHarness(t)
	h.cfg.Log.WriteBufferBytesMax = 50
	h.restart()
	h.createTopic("orders")
	for range 3 {
		h.produce("orders", 0, "x")
	}
	for range 3 {
		m, _ := h.consume("orders")
		require.NoError(t, h.ackHandle("orders", m.ReceiptHandle, msg.AckCommit))
	}
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("b")}, {Partition: 0, Payload: []byte("c")}}, Batch: true}, msg.CodeUnavailable)
	h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 0}) // reopens the log
	for _, state := range h.node.OpenPartitions() {
		if state.Dir == PartitionDir("orders", 0) {
			require.Equal(t, uint64(3), state.Committed, "the reopened log keeps the acked frontier")
		}
	}
}

// TestRetentionReachesLogsClosedSinceRestart: a partition nobody touches
// after a restart still loses its expired segments (the retention pass
// reopens closed logs that hold sealed segments).
func TestRetentionReachesLogsClosedSinceRestart(t *testing.T) {
	h := segmentedHarness(t)
	h.restart()
	require.Empty(t, h.node.store.OpenDirs(), "nothing is open after a restart")
	h.tick(h.cfg.DefaultRetentionMs + h.cfg.RetentionCheckIntervalMs)
	require.Positive(t, h.stats("orders", 0).OldestOffset, "expired sealed segments were deleted without any client touching the partition")
}

// A node restarted after its records expired applies retention within
// retentionFirstCheckAfterMs, not a whole check interval later: it served
// expired records for a minute after each start, and one restarting more
// often never applied retention (retention audit).
func TestRetentionRunsSoonAfterAStart(t *testing.T) {
	h := segmentedHarness(t)
	require.Greater(t, h.cfg.RetentionCheckIntervalMs, int64(retentionFirstCheckAfterMs))
	h.nowMs += h.cfg.DefaultRetentionMs + 1 // the records expired while the node was down
	h.restart()
	h.tick(retentionFirstCheckAfterMs - 1)
	require.Zero(t, h.stats("orders", 0).OldestOffset, "not before the first check")
	h.tick(1)
	require.Positive(t, h.stats("orders", 0).OldestOffset, "expired sealed segments deleted at the first check after the start")
}

// A log closed intact is described by what it held when it closed: a
// stats request does not reopen (and so recover) it, nor does a retention
// pass while none of its segments has expired. Once one has, retention
// reopens it and deletes the segment.
func TestAnIntactClosedLogIsReopenedOnlyForExpiredSegments(t *testing.T) {
	h := segmentedHarness(t)
	open := h.stats("orders", 0)
	require.Greater(t, open.Segments, 1)
	dir := PartitionDir("orders", 0)
	h.tick(h.cfg.IdleLogCloseMs)
	require.False(t, h.node.store.IsOpen(dir), "the idle log closed")

	for range 3 {
		h.tick(h.cfg.RetentionCheckIntervalMs)
		require.False(t, h.node.store.IsOpen(dir), "a retention pass reopened a log with no expired segment")
	}
	require.Equal(t, open, h.stats("orders", 0), "a closed log's stats are those it closed with")
	require.False(t, h.node.store.IsOpen(dir), "a stats request reopened the closed log")

	h.tick(h.cfg.DefaultRetentionMs)
	h.tick(h.cfg.RetentionCheckIntervalMs)
	require.Positive(t, h.stats("orders", 0).OldestOffset, "the expired segments were deleted")
}

// A batch consume stops adding messages once they hold
// ConsumeReplyBytesMax of payload: twenty 1 MiB records asked for a
// hundred at a time come back eight, eight and four.
func TestBatchConsumeStopsAtTheReplyByteCap(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, 8<<20, h.cfg.ConsumeReplyBytesMax)
	h.createTopic("big")
	record := strings.Repeat("x", msg.MessageBytesMax)
	for range 20 {
		h.produce("big", 0, record)
	}
	var sizes []int
	for range 3 {
		result := h.ok(msg.Consume{Topic: "big", Partition: 0, Max: msg.ConsumeBatchMax}).(msg.ConsumeResult)
		payload := 0
		for _, message := range result.Messages {
			payload += len(message.Payload)
		}
		require.LessOrEqual(t, payload, h.cfg.ConsumeReplyBytesMax+msg.MessageBytesMax)
		sizes = append(sizes, len(result.Messages))
	}
	require.Equal(t, []int{8, 8, 4}, sizes)

	h.cfg.ConsumeReplyBytesMax = msg.MessageBytesMax
	h.restart()
	h.tick(h.cfg.DefaultVisibilityTimeoutMs + 1) // the leases lapse: all twenty are available again
	result := h.ok(msg.Consume{Topic: "big", Partition: 0, Max: msg.ConsumeBatchMax}).(msg.ConsumeResult)
	require.Len(t, result.Messages, 1, "at the smallest cap a reply still carries one message")
}
