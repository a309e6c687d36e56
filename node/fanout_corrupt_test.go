package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// copiedParentHarness is a node whose parent "orders" has two records,
// "first" and "second", in partition 0, both copied into its child
// "audit" and the cursor's file written; the hwm file lags (the default
// HWM lag), and with failingWrites an append writes at once, so that a
// write fault fails the log.
func copiedParentHarness(t *testing.T, failingWrites bool) *harness {
	h := newHarness(t)
	if failingWrites {
		h.cfg.Log.WriteBufferBytesMax = 1
		h.restart()
	}
	h.createTopic("orders")
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1) // the cursor starts at the parent's tail
	h.produce("orders", 0, "first")
	h.produce("orders", 0, "second")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, []string{"first", "second"}, h.replayAll("audit", 0))
	cursor := h.node.partitions[partitionKey{"orders", 0}].fanout["audit"]
	require.Equal(t, [2]uint64{2, 2}, [2]uint64{cursor.next, cursor.persisted}, "both copied, and the cursor file says so")
	return h
}

// A parent log whose tail, copied already, is damaged above the persisted
// high watermark and then reopened (its log failed) recovers below the
// cursor: the damaged record and the ones after it are gone (storage's
// corruption window), and new records take their offsets. The cursor goes
// back to the high watermark so that the child gets them; left above it,
// it counted no lag and copied nothing until the log passed it again.
func TestAFanoutCursorPastItsParentsRecoveredTailGoesBack(t *testing.T) {
	h := copiedParentHarness(t, true)

	damagePayload(t, h.fs, PartitionDir("orders", 0), "first") // bit rot above the lagging hwm file
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}}, msg.CodeUnavailable)
	require.Equal(t, uint64(0), h.produce("orders", 0, "fresh-1").Offset, "the reopened log recovered below the damaged record")
	require.Equal(t, uint64(1), h.produce("orders", 0, "fresh-2").Offset)
	for range 3 {
		h.tick(h.cfg.Fanout.LingerMs)
	}
	require.Equal(t, []string{"first", "second", "fresh-1", "fresh-2"}, h.replayAll("audit", 0),
		"the records written at the offsets the cursor had passed reach the child")
	require.Zero(t, h.lagOf("orders", "audit").LagMessages)
}

// The same across a crash: the cursor file says 2, the recovery truncates
// the damaged tail to 0, and records produced before the cursor is loaded
// take offsets 0 and 1. The cursor loads no higher than the high
// watermark the log recovered at, so the child gets them.
func TestAFanoutCursorLoadedAfterItsParentRecoveredLowerStartsThere(t *testing.T) {
	h := copiedParentHarness(t, false)

	damagePayload(t, h.fs, PartitionDir("orders", 0), "first") // bit rot above the lagging hwm file
	h.crash()
	require.Equal(t, uint64(0), h.produce("orders", 0, "fresh-1").Offset, "the recovery truncated the damaged tail")
	require.Equal(t, uint64(1), h.produce("orders", 0, "fresh-2").Offset)
	for range 3 {
		h.tick(h.cfg.Fanout.LingerMs)
	}
	require.Equal(t, []string{"first", "second", "fresh-1", "fresh-2"}, h.replayAll("audit", 0))
}

// A cursor brought back below a recovered parent's high watermark has its
// file brought back too, durably, before new records take the offsets:
// left naming the old offset until the next cursor write, a crash in
// between made the restarted node skip the records written there.
func TestARewoundCursorsFileIsDurableBeforeTheOffsetsAreReused(t *testing.T) {
	h := copiedParentHarness(t, true)

	damagePayload(t, h.fs, PartitionDir("orders", 0), "first") // bit rot above the lagging hwm file
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}}, msg.CodeUnavailable)
	require.Equal(t, uint64(0), h.produce("orders", 0, "fresh-1").Offset)
	require.Equal(t, uint64(1), h.produce("orders", 0, "fresh-2").Offset)
	require.Equal(t, uint64(2), h.produce("orders", 0, "fresh-3").Offset)
	h.tick(1) // within the linger and the cursor write interval: nothing copied or written yet
	h.crash()
	for range 5 {
		h.tick(h.cfg.Fanout.LingerMs)
	}
	require.Equal(t, []string{"first", "second", "fresh-1", "fresh-2", "fresh-3"}, h.replayAll("audit", 0),
		"every record at the reused offsets reaches the child")
}

// A batch in flight when the parent's log reopens lower advances its
// cursor no further than the high watermark the log reopened at
// (fanoutCursor.sentCap): its answer, arriving after the rewind, would
// otherwise put the cursor back past the offsets that new records take.
func TestABatchInFlightAcrossARewindDoesNotCarryTheCursorPastIt(t *testing.T) {
	h := copiedParentHarness(t, true)
	require.Equal(t, uint64(2), h.produce("orders", 0, "third").Offset)

	h.nowMs += h.cfg.Fanout.LingerMs
	h.node.Tick(h.nowMs) // sends the batch of "third" to the child
	cursor := h.node.partitions[partitionKey{"orders", 0}].fanout["audit"]
	require.Equal(t, uint64(3), cursor.sentTo, "the batch of \"third\" is in flight")
	inFlight := h.node.Ready() // the child's round that makes the batch durable

	damagePayload(t, h.fs, PartitionDir("orders", 0), "first") // bit rot above the lagging hwm file
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	h.nextID++
	h.node.Handle(h.nextID, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
	h.nextID++
	h.node.Handle(h.nextID, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("fresh-1")}}})
	require.Equal(t, uint64(0), cursor.next, "the reopened log recovered below the damaged record: the cursor went back")

	for _, s := range inFlight.Syncs {
		require.NoError(t, s.Run())
	}
	h.takeReplies(inFlight.Replies)
	h.node.Advance(inFlight)
	require.Equal(t, uint64(0), cursor.next, "the batch's answer left the cursor at the reopened high watermark")
	h.flush()

	require.Equal(t, uint64(1), h.produce("orders", 0, "fresh-2").Offset)
	require.Equal(t, uint64(2), h.produce("orders", 0, "fresh-3").Offset)
	for range 3 {
		h.tick(h.cfg.Fanout.LingerMs)
	}
	require.Equal(t, []string{"first", "second", "third", "fresh-1", "fresh-2", "fresh-3"}, h.replayAll("audit", 0),
		"every record written at the offsets the batch had passed reaches the child")
}
