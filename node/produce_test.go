package node

import (
	"narad/msg"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/storage"
)

func TestProduceReplyWaitsForItsSyncRound(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.node.Handle(100, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
	rd := h.node.Ready()
	require.Len(t, rd.Syncs, 1, "the produce needs one sync round")
	require.True(t, rd.Syncs[0].Data())
	require.Len(t, rd.Replies, 1, "the reply rides in the same Ready, sent after the syncs")
	log := h.node.partitions[partitionKey{"orders", 0}].log
	require.Equal(t, uint64(0), log.HWM(), "nothing is visible before the sync round")
	require.NoError(t, rd.Syncs[0].Run())
	require.Equal(t, uint64(0), log.HWM(), "visible at Advance, not before")
	h.node.Advance(rd)
	require.Equal(t, uint64(1), log.HWM())
	_, ok := h.consume("orders")
	require.True(t, ok, "visible after the sync round")
}

// Pipelined group commit: a produce handled while a round is in flight
// goes into the next Ready; Advance of the first makes visible only what
// the first covered, and the second's reply leaves with the second.
func TestProduceDuringSyncRoundWaitsForTheNext(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.node.Handle(100, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
	first := h.node.Ready()
	require.Len(t, first.Replies, 1)
	h.node.Handle(101, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("y")}}})
	h.node.Tick(h.nowMs + 1)
	require.NoError(t, first.Syncs[0].Run())
	h.node.Advance(first)
	log := h.node.partitions[partitionKey{"orders", 0}].log
	require.Equal(t, uint64(1), log.HWM(), "only the first round's record is visible")
	require.Equal(t, uint64(2), log.Next())
	require.True(t, h.node.HasReady())
	second := h.node.Ready()
	require.Len(t, second.Syncs, 1)
	require.Equal(t, 1, second.Syncs[0].Records())
	require.Len(t, second.Replies, 1)
	require.Equal(t, msg.RequestID(101), second.Replies[0].ID)
	require.NoError(t, second.Syncs[0].Run())
	h.node.Advance(second)
	require.Equal(t, uint64(2), log.HWM())
}

func TestProduceGroupCommitSharesOneSyncPerPartition(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for i := range 10 {
		h.node.Handle(msg.RequestID(100+i), msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: i % 2, Payload: []byte("x")}}})
	}
	rd := h.node.Ready()
	require.Len(t, rd.Syncs, 2, "ten produces on two partitions share two sync rounds")
	require.Len(t, rd.Replies, 10)
}

func TestProducePlacement(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	keyed := func(key string) int {
		result := h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte(key), Partition: msg.PartitionNone, Payload: []byte("v")}}}).(msg.ProduceResult)
		return result.Records[0].Partition
	}
	first := keyed("customer-7")
	for range 5 {
		require.Equal(t, first, keyed("customer-7"), "a key always lands on the same partition")
	}
	seen := map[int]int{}
	for range 9 {
		seen[h.produce("orders", msg.PartitionNone, "keyless").Partition]++
	}
	require.Equal(t, map[int]int{0: 3, 1: 3, 2: 3}, seen, "keyless records go round-robin")
	require.Equal(t, 2, h.produce("orders", 2, "pinned").Partition)
}

func TestProduceOffsetsAreConsecutive(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	records := make([]msg.ProduceRecord, 5)
	for i := range records {
		records[i] = msg.ProduceRecord{Partition: 1, Payload: []byte{byte(i)}}
	}
	result := h.ok(msg.Produce{Topic: "orders", Records: records, Batch: true}).(msg.ProduceResult)
	for i, placement := range result.Records {
		require.Equal(t, msg.Placement{Partition: 1, Offset: uint64(i)}, placement)
	}
	require.True(t, result.Batch)
}

func TestProduceRejectsBadInputAndWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	good := msg.ProduceRecord{Partition: 0, Payload: []byte("ok")}
	h.fail(msg.Produce{Topic: "missing", Records: []msg.ProduceRecord{good}}, msg.CodeNotFound)
	h.fail(msg.Produce{Topic: "orders"}, msg.CodeInvalid)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{good, {Partition: 3, Payload: []byte("x")}}}, msg.CodeInvalid)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{good, {Partition: 0, Payload: make([]byte, msg.MessageBytesMax+1)}}}, msg.CodeTooLarge)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Key: make([]byte, msg.KeyBytesMax+1), Payload: []byte("x")}}}, msg.CodeInvalid)
	h.fail(msg.Produce{Topic: "orders", Records: make([]msg.ProduceRecord, msg.ProduceBatchRecordsMax+1)}, msg.CodeInvalid)
	require.Equal(t, uint64(0), h.stats("orders", 0).HighWatermark, "a refused batch writes none of its records")
}

func TestLargestRecordFits(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Key: make([]byte, msg.KeyBytesMax), Payload: make([]byte, msg.MessageBytesMax)}}})
	result := h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 0}).(msg.ReplayResult)
	require.Len(t, result.Message.Payload, msg.MessageBytesMax)
}

func TestAcknowledgedProduceSurvivesCrash(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for i := range 20 {
		h.produce("orders", i%3, "durable")
	}
	// A produce whose sync round never ran must not be answered.
	h.node.Handle(999, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("lost")}}})
	h.crash()
	total := uint64(0)
	for p := range 3 {
		total += h.stats("orders", p).HighWatermark
	}
	require.GreaterOrEqual(t, total, uint64(20), "every acknowledged record survives a crash")
	require.NotContains(t, h.replies, msg.RequestID(999))
}

// TestBatchWhoseSecondAppendFailsChangesNothingDurable: a write fault on
// the second record of a batch fails the partition's log; the request gets
// a retryable error and the node keeps working (it once put the dropped
// log back in its sync set). Found by the simulator, seed 6.
func TestBatchWhoseSecondAppendFailsChangesNothingDurable(t *testing.T) {
	h := newHarness(t)
	h.cfg.Log.WriteBufferBytesMax = 50 // one small frame stays buffered, the second flushes
	h.restart()
	h.createTopic("orders")
	h.produce("orders", 0, "before")
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	records := []msg.ProduceRecord{{Partition: 0, Payload: []byte("b")}, {Partition: 0, Payload: []byte("c")}}
	h.fail(msg.Produce{Topic: "orders", Records: records, Batch: true}, msg.CodeUnavailable)
	h.produce("orders", 0, "after")
	result := h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 0}).(msg.ReplayResult)
	require.Equal(t, "before", string(result.Message.Payload), "the failed log reopens from disk with what was durable")
}

// A storage failure tells the client its kind, never a path on the
// node's disk (the operator's log has the whole error).
func TestStorageErrorsNameNoPath(t *testing.T) {
	h := newHarness(t)
	h.cfg.Log.WriteBufferBytesMax = 50 // the second frame flushes, and the write fails
	h.restart()
	h.createTopic("orders")
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	records := []msg.ProduceRecord{{Partition: 0, Payload: []byte("b")}, {Partition: 0, Payload: []byte("c")}}
	e := h.fail(msg.Produce{Topic: "orders", Records: records, Batch: true}, msg.CodeUnavailable)
	require.Contains(t, e.Message, "no space left")
	require.NotContains(t, e.Message, PartitionDir("orders", 0))
	require.NotContains(t, e.Message, topicsDir+"/")
}
