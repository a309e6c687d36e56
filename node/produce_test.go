package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/storage"
)

func TestProduceReplyWaitsForItsSyncRound(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.node.Handle(100, Produce{Topic: "orders", Records: []ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
	rd := h.node.Ready()
	require.Len(t, rd.Syncs, 1, "the produce needs one sync round")
	require.True(t, rd.Syncs[0].Data())
	require.Len(t, rd.Replies, 1, "the reply rides in the same Ready, sent after the syncs")
	log := h.node.partitions[partitionKey{"orders", 0}].log
	require.Equal(t, uint64(0), log.HWM(), "nothing is visible before the sync round")
	require.NoError(t, rd.Syncs[0].Run())
	require.Equal(t, uint64(1), log.HWM())
	h.node.Advance(rd)
	_, ok := h.consume("orders")
	require.True(t, ok, "visible after the sync round")
}

func TestProduceGroupCommitSharesOneSyncPerPartition(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for i := range 10 {
		h.node.Handle(RequestID(100+i), Produce{Topic: "orders", Records: []ProduceRecord{{Partition: i % 2, Payload: []byte("x")}}})
	}
	rd := h.node.Ready()
	require.Len(t, rd.Syncs, 2, "ten produces on two partitions share two sync rounds")
	require.Len(t, rd.Replies, 10)
}

func TestProducePlacement(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	keyed := func(key string) int {
		result := h.ok(Produce{Topic: "orders", Records: []ProduceRecord{{Key: []byte(key), Partition: PartitionNone, Payload: []byte("v")}}}).(ProduceResult)
		return result.Records[0].Partition
	}
	first := keyed("customer-7")
	for range 5 {
		require.Equal(t, first, keyed("customer-7"), "a key always lands on the same partition")
	}
	seen := map[int]int{}
	for range 9 {
		seen[h.produce("orders", PartitionNone, "keyless").Partition]++
	}
	require.Equal(t, map[int]int{0: 3, 1: 3, 2: 3}, seen, "keyless records go round-robin")
	require.Equal(t, 2, h.produce("orders", 2, "pinned").Partition)
}

func TestProduceOffsetsAreConsecutive(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	records := make([]ProduceRecord, 5)
	for i := range records {
		records[i] = ProduceRecord{Partition: 1, Payload: []byte{byte(i)}}
	}
	result := h.ok(Produce{Topic: "orders", Records: records, Batch: true}).(ProduceResult)
	for i, placement := range result.Records {
		require.Equal(t, Placement{Partition: 1, Offset: uint64(i)}, placement)
	}
	require.True(t, result.Batch)
}

func TestProduceRejectsBadInputAndWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	good := ProduceRecord{Partition: 0, Payload: []byte("ok")}
	h.fail(Produce{Topic: "missing", Records: []ProduceRecord{good}}, CodeNotFound)
	h.fail(Produce{Topic: "orders"}, CodeInvalid)
	h.fail(Produce{Topic: "orders", Records: []ProduceRecord{good, {Partition: 3, Payload: []byte("x")}}}, CodeInvalid)
	h.fail(Produce{Topic: "orders", Records: []ProduceRecord{good, {Partition: 0, Payload: make([]byte, MessageBytesMax+1)}}}, CodeTooLarge)
	h.fail(Produce{Topic: "orders", Records: []ProduceRecord{{Partition: 0, Key: make([]byte, KeyBytesMax+1), Payload: []byte("x")}}}, CodeInvalid)
	h.fail(Produce{Topic: "orders", Records: make([]ProduceRecord, ProduceBatchRecordsMax+1)}, CodeInvalid)
	require.Equal(t, uint64(0), h.stats("orders", 0).HighWatermark, "a refused batch writes none of its records")
}

func TestLargestRecordFits(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.ok(Produce{Topic: "orders", Records: []ProduceRecord{{Partition: 0, Key: make([]byte, KeyBytesMax), Payload: make([]byte, MessageBytesMax)}}})
	result := h.ok(Replay{Topic: "orders", Partition: 0, Offset: 0}).(ReplayResult)
	require.Len(t, result.Message.Payload, MessageBytesMax)
}

func TestAcknowledgedProduceSurvivesCrash(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for i := range 20 {
		h.produce("orders", i%3, "durable")
	}
	// A produce whose sync round never ran must not be answered.
	h.node.Handle(999, Produce{Topic: "orders", Records: []ProduceRecord{{Partition: 0, Payload: []byte("lost")}}})
	h.crash()
	total := uint64(0)
	for p := range 3 {
		total += h.stats("orders", p).HighWatermark
	}
	require.GreaterOrEqual(t, total, uint64(20), "every acknowledged record survives a crash")
	require.NotContains(t, h.replies, RequestID(999))
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
	records := []ProduceRecord{{Partition: 0, Payload: []byte("b")}, {Partition: 0, Payload: []byte("c")}}
	h.fail(Produce{Topic: "orders", Records: records, Batch: true}, CodeUnavailable)
	h.produce("orders", 0, "after")
	result := h.ok(Replay{Topic: "orders", Partition: 0, Offset: 0}).(ReplayResult)
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
	records := []ProduceRecord{{Partition: 0, Payload: []byte("b")}, {Partition: 0, Payload: []byte("c")}}
	e := h.fail(Produce{Topic: "orders", Records: records, Batch: true}, CodeUnavailable)
	require.Contains(t, e.Message, "no space left")
	require.NotContains(t, e.Message, PartitionDir("orders", 0))
	require.NotContains(t, e.Message, topicsDir+"/")
}
