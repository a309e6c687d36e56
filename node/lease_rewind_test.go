package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// rewindHarness is a node whose appends write through at once, with one
// topic: a failed append makes its log fail and reopen within the run.
func rewindHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.cfg.Log.WriteBufferBytesMax = 1
	h.restart()
	h.createTopic("orders")
	return h
}

// consumeFirst consumes one record of partition 0, if any.
func consumeFirst(h *harness) (msg.Message, bool) {
	result := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult)
	if len(result.Messages) == 0 {
		return msg.Message{}, false
	}
	return result.Messages[0], true
}

// loseLogTail damages the frame of payload, acknowledged but above the
// lazily written hwm file, and makes the next append fail: the log fails,
// and its reopening recovers to before that frame (media damage above the
// persisted HWM reads as a torn tail), handing its offsets out again.
func loseLogTail(h *harness, payload string) {
	damagePayload(h.t, h.fs, PartitionDir("orders", 0), payload)
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}}, msg.CodeUnavailable)
}

// Property: when a log comes back below the offsets its lease table has
// seen, the table is dropped. The records produced at the reused offsets
// are delivered (before and after a restart: the frontier of the lost
// records never reaches the log's committed offset), and a receipt handle
// of a lost record acks nothing.
func TestALogRecoveredBelowItsLeasesStartsAFreshTable(t *testing.T) {
	h := rewindHarness(t)
	h.produce("orders", 0, "first")
	h.produce("orders", 0, "second")
	for range 2 {
		message, ok := consumeFirst(h)
		require.True(t, ok)
		require.NoError(t, h.ackHandle("orders", message.ReceiptHandle, msg.AckCommit))
	}
	loseLogTail(h, "first")
	require.Equal(t, uint64(0), h.produce("orders", 0, "fresh-1").Offset, "the lost offsets are handed out again")
	message, ok := consumeFirst(h)
	require.True(t, ok, "a record at a reused offset must be delivered")
	require.Equal(t, "fresh-1", string(message.Payload))
	h.tick(1000)
	h.restart()
	message, ok = consumeFirst(h)
	require.True(t, ok, "after a restart too: the persisted committed offset never passed it")
	require.Equal(t, "fresh-1", string(message.Payload))
}

func TestAReceiptHandleOfALostRecordAcksNothing(t *testing.T) {
	h := rewindHarness(t)
	h.produce("orders", 0, "first")
	stale, ok := consumeFirst(h)
	require.True(t, ok)
	loseLogTail(h, "first")
	require.Equal(t, uint64(0), h.produce("orders", 0, "fresh-1").Offset)
	require.Error(t, h.ackHandle("orders", stale.ReceiptHandle, msg.AckCommit), "the handle named the lost record")
	message, ok := consumeFirst(h)
	require.True(t, ok)
	require.Equal(t, "fresh-1", string(message.Payload))
}
