package node

import (
	"fmt"
	"strings"
	"testing"

	"narad/msg"
	"narad/storage"

	"github.com/stretchr/testify/require"
)

// openLogsTestMax is the small cap of open logs the test runs under.
const openLogsTestMax = 4

// cappedHarness is a node capped at openLogsTestMax open logs.
func cappedHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.cfg.OpenLogsMax = openLogsTestMax
	h.restart()
	return h
}

// batchOver is a batch produce of one record into each of partitions
// from..to-1.
func batchOver(topicName, payload string, from, to int) msg.Produce {
	batch := msg.Produce{Topic: topicName, Batch: true}
	for index := from; index < to; index++ {
		batch.Records = append(batch.Records, msg.ProduceRecord{Partition: index, Payload: []byte(payload)})
	}
	return batch
}

// handleInOneRound hands requests to the node without a Ready in between
// (the first's unsynced records still hold their logs when the next
// comes), then flushes; it returns their ids.
func (h *harness) handleInOneRound(requests ...msg.Request) []msg.RequestID {
	ids := make([]msg.RequestID, len(requests))
	for i, request := range requests {
		h.nextID++
		ids[i] = h.nextID
		h.node.Handle(h.nextID, request)
	}
	h.flush()
	return ids
}

// With far more partitions than open logs allowed, the node stays under
// its cap and serves every partition, closing the least recently used
// logs and reopening them on demand. A batch that touches more partitions
// than the cap is served (it would be refused at every retry otherwise):
// its own logs go past the cap until its sync round, and are closed back
// under it then.
func TestOpenLogsCapServesEveryPartition(t *testing.T) {
	h := cappedHarness(t)
	const partitions = 30
	h.createTopic("many", func(c *msg.CreateTopic) { c.Partitions = partitions })
	h.createTopic("wide", func(c *msg.CreateTopic) { c.Partitions = partitions })

	placed := h.ok(batchOver("wide", "wide", 0, openLogsTestMax+2)).(msg.ProduceResult)
	require.Len(t, placed.Records, openLogsTestMax+2)
	require.LessOrEqual(t, h.node.Stats().OpenLogs, openLogsTestMax, "the logs past the cap close after the round")
	for index := range openLogsTestMax + 2 {
		stats := h.stats("wide", index)
		require.Equal(t, [2]uint64{1, 1}, [2]uint64{stats.NextOffset, stats.HighWatermark}, "partition %d holds the batch's one record, durable", index)
	}

	for index := range partitions {
		placement := h.produce("many", index, fmt.Sprintf("record %d", index))
		require.Equal(t, uint64(0), placement.Offset, "partition %d", index)
		require.LessOrEqual(t, h.node.Stats().OpenLogs, openLogsTestMax)
	}
	for index := range partitions {
		consumed := h.do(msg.Consume{Topic: "many", Partition: index})
		if consumed.Err != nil {
			// Every open log held an unpersisted committed offset: the
			// refused open (503) scheduled their persist, so a retry
			// succeeds.
			require.Equal(t, msg.CodeUnavailable, msg.CodeOf(consumed.Err), "%v", consumed.Err)
			consumed = h.do(msg.Consume{Topic: "many", Partition: index})
		}
		require.NoError(t, consumed.Err)
		result := consumed.Result.(msg.ConsumeResult)
		require.Len(t, result.Messages, 1, "partition %d", index)
		require.Equal(t, fmt.Sprintf("record %d", index), string(result.Messages[0].Payload))
		reply := h.do(msg.Ack{Topic: "many", Handles: []string{result.Messages[0].ReceiptHandle}, Action: msg.AckCommit})
		if reply.Err != nil {
			require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "%v", reply.Err)
			require.NoError(t, h.ackHandle("many", result.Messages[0].ReceiptHandle, msg.AckCommit))
		}
		require.LessOrEqual(t, h.node.Stats().OpenLogs, openLogsTestMax)
	}
	stats := h.node.Stats()
	require.Equal(t, openLogsTestMax, stats.OpenLogsMax)
	require.GreaterOrEqual(t, stats.LogEvictions, uint64(2*partitions-openLogsTestMax))

	h.restart()
	for index := range partitions {
		require.Equal(t, uint64(1), h.stats("many", index).Committed, "partition %d", index)
	}
}

// A produce that finds every open log held by other partitions' unsynced
// records is refused as retryable before it appends anything (a retry
// must not leave a stray copy of its first records each time), and the
// retry after their sync round is served.
func TestAProduceRefusedForWantOfRoomAppendsNothing(t *testing.T) {
	h := cappedHarness(t)
	h.createTopic("held", func(c *msg.CreateTopic) { c.Partitions = 8 })
	h.createTopic("late", func(c *msg.CreateTopic) { c.Partitions = 8 })
	late := batchOver("late", "late", 0, 2)
	// The first batch's logs fill the cap, unsynced until the round ends.
	lateID := h.handleInOneRound(batchOver("held", "held", 0, openLogsTestMax), late)[1]
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(h.replies[lateID].Err), "%v", h.replies[lateID].Err)
	for index := range 2 {
		require.Equal(t, uint64(0), h.stats("late", index).NextOffset, "partition %d: the refused produce appended nothing", index)
	}

	h.ok(late)
	for index := range 2 {
		require.Equal(t, uint64(1), h.stats("late", index).NextOffset, "partition %d holds the retry's record only", index)
	}
}

// A produce that appends to a partition whose log is open and unsynced,
// and to one more while every open log is unsynced, goes past the cap
// with its own partitions instead of being refused after appending to the
// first (which every retry would repeat).
func TestAProduceGoesPastTheCapWithItsOwnPartitions(t *testing.T) {
	h := cappedHarness(t)
	h.createTopic("wide", func(c *msg.CreateTopic) { c.Partitions = 8 })
	last := openLogsTestMax - 1
	first, second := batchOver("wide", "first", 0, openLogsTestMax), batchOver("wide", "second", last, last+2)
	h.nextID++
	h.node.Handle(h.nextID, first) // its logs fill the cap, unsynced until the flush below
	h.nextID++
	secondID := h.nextID
	h.node.Handle(secondID, second)
	require.Equal(t, openLogsTestMax+1, h.node.Stats().OpenLogs, "one log past the cap, for the second produce")
	h.flush()
	require.NoError(t, h.replies[secondID].Err)
	require.LessOrEqual(t, h.node.Stats().OpenLogs, openLogsTestMax, "back under the cap after the round")
	require.Equal(t, uint64(2), h.stats("wide", last).NextOffset, "the first produce's record and the second's")
	require.Equal(t, uint64(1), h.stats("wide", last+1).NextOffset)
}

// A pinned consume of a partition whose log cannot open now (the node is
// at its open-log cap and every open log holds unsynced records) is
// answered 503, as a pinned consume whose record cannot be read is: it was
// answered 204, as if the partition held nothing. Once the round synced,
// the record is delivered.
func TestPinnedConsumeOfALogThatCannotOpenIsUnavailable(t *testing.T) {
	h := cappedHarness(t)
	h.createTopic("many", func(c *msg.CreateTopic) { c.Partitions = 2 * openLogsTestMax })
	pinned := openLogsTestMax + 1
	h.produce("many", pinned, "waiting")

	// The batch's logs fill the cap (the pinned partition's, synced, is
	// closed to make room) and stay unsynced until the round's end.
	ids := h.handleInOneRound(batchOver("many", "x", 0, openLogsTestMax), msg.Consume{Topic: "many", Partition: pinned})
	refused := h.replies[ids[1]]
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "consume answered %+v", refused)
	require.Contains(t, refused.Err.Error(), fmt.Sprintf("partition %d of many", pinned))

	again := h.do(msg.Consume{Topic: "many", Partition: pinned})
	require.NoError(t, again.Err)
	messages := again.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1)
	require.Equal(t, "waiting", string(messages[0].Payload))
}

// A waiting consume that found a partition's log closed to it by the
// open-log cap (every open log held unsynced records) is served once the
// round that held them ends: the round's end tells the topic's polls, here
// and on other nodes, as it does of new records. Nothing told them: the
// poll waited out its wait with the record there.
func TestAPollRefusedAnOpenIsServedWhenTheRoundEnds(t *testing.T) {
	h := cappedHarness(t)
	h.createTopic("fill", func(c *msg.CreateTopic) { c.Partitions = openLogsTestMax })
	h.createTopic("wanted")
	h.produce("wanted", 0, "waiting")

	ids := h.handleInOneRound(batchOver("fill", "x", 0, openLogsTestMax),
		msg.Consume{Topic: "wanted", Partition: msg.PartitionNone, WaitMs: 10_000})
	reply, answered := h.replies[ids[1]]
	require.True(t, answered, "the round's end served the poll")
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1)
	require.Equal(t, "waiting", string(messages[0].Payload))
}

// consumePinned consumes one record of a partition, retrying once past a
// refused open (every open log held an unpersisted committed offset: the
// refusal scheduled their persist); it returns the records delivered.
func (h *harness) consumePinned(topicName string, index int) []msg.Message {
	h.t.Helper()
	reply := h.do(msg.Consume{Topic: topicName, Partition: index})
	if reply.Err != nil {
		require.Equal(h.t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "%v", reply.Err)
		reply = h.do(msg.Consume{Topic: topicName, Partition: index})
	}
	require.NoError(h.t, reply.Err)
	return reply.Result.(msg.ConsumeResult).Messages
}

// A consume that finds a partition's log closed intact, with none of its
// records left to deliver, leaves it closed: reopening it would recover
// it again and, at the cap, evict another log, all to find nothing. A
// record whose lease lapsed while its log was closed is delivered again.
func TestAConsumeLeavesAClosedLogWithNothingToDeliverClosed(t *testing.T) {
	h := cappedHarness(t)
	const partitions = 2 * openLogsTestMax
	h.createTopic("drained", func(c *msg.CreateTopic) { c.Partitions = partitions; c.VisibilityTimeoutMs = 1_000 })
	for index := range partitions {
		h.produce("drained", index, fmt.Sprintf("record %d", index))
	}
	for index := range partitions {
		messages := h.consumePinned("drained", index)
		require.Len(t, messages, 1, "partition %d", index)
		if err := h.ackHandle("drained", messages[0].ReceiptHandle, msg.AckCommit); err != nil {
			require.Equal(t, msg.CodeUnavailable, msg.CodeOf(err), "%v", err)
			require.NoError(t, h.ackHandle("drained", messages[0].ReceiptHandle, msg.AckCommit))
		}
	}
	h.tick(h.cfg.CommitPersistIntervalMs) // the acked offsets persisted: every log may close

	before := h.node.Stats()
	closed := 0
	for index := range partitions {
		if h.node.partitions[partitionKey{"drained", index}].log == nil {
			closed++
		}
		require.Empty(t, h.consumePinned("drained", index), "partition %d was drained", index)
	}
	require.GreaterOrEqual(t, closed, partitions-openLogsTestMax)
	require.Equal(t, before.LogEvictions, h.node.Stats().LogEvictions, "a consume reopened a drained log, evicting another")
	require.Equal(t, before.OpenLogs, h.node.Stats().OpenLogs)

	// A lease that lapses while its log is closed makes the record
	// deliverable again: the consume reopens the log for it.
	h.produce("drained", 0, "again")
	messages := h.consumePinned("drained", 0)
	require.Len(t, messages, 1)
	for index := 1; index <= openLogsTestMax; index++ {
		h.produce("drained", index, "evicts partition 0")
	}
	p := h.node.partitions[partitionKey{"drained", 0}]
	require.Nil(t, p.log, "partition 0 was evicted by the produces to the others")
	require.True(t, p.closedIntact)
	h.tick(1_000)
	again := h.consumePinned("drained", 0)
	require.Len(t, again, 1, "the lapsed record is delivered again")
	require.Equal(t, "again", string(again[0].Payload))
	require.Equal(t, uint32(2), again[0].DeliveryCount)
}

// While the node evicts logs, every round writes the hwm files of its
// logs, so a log closed for room has no lagging hwm file to write (and
// fsync) at its close; before the first eviction, and once evictions
// stopped for Config.HWMEagerAfterEvictionMs, the hwm file lags as it
// may; and with 0 there, it lags while the node evicts too.
func TestRoundsWriteTheHWMFilesWhileTheNodeEvicts(t *testing.T) {
	h := cappedHarness(t)
	h.createTopic("many", func(c *msg.CreateTopic) { c.Partitions = 3 * openLogsTestMax })
	persisted := func(partition int) uint64 {
		value, ok, err := storage.PersistedHWM(h.fs, PartitionDir("many", partition))
		require.NoError(t, err)
		require.True(t, ok)
		return value
	}
	h.produce("many", 0, "calm")
	require.Zero(t, persisted(0), "no eviction yet: the hwm file lags")
	require.Zero(t, h.node.logEvictions)

	for partition := range 2 * openLogsTestMax {
		h.produce("many", partition, "churn")
	}
	require.Positive(t, h.node.logEvictions)
	last := 2*openLogsTestMax - 1
	require.Equal(t, uint64(1), persisted(last), "a round while the node evicts writes the hwm file")

	h.tick(h.cfg.HWMEagerAfterEvictionMs)
	h.produce("many", last, "calm again")
	require.Equal(t, uint64(1), persisted(last), "evictions stopped: the hwm file lags again")
	require.Equal(t, uint64(2), h.stats("many", last).HighWatermark)

	h.cfg.HWMEagerAfterEvictionMs = 0
	h.restart()
	for partition := range 2 * openLogsTestMax {
		h.produce("many", partition, "lazy churn")
	}
	require.Positive(t, h.node.logEvictions)
	require.Equal(t, uint64(3), h.stats("many", last).HighWatermark)
	require.Less(t, persisted(last), uint64(3), "turned off: the hwm file lags while the node evicts")
}

// TestStatsCountTheZeroTailsOnDisk: Stats().ZeroTailBytes is the disk the
// partitions' files hold past their frames, open logs and closed ones
// alike (the metric narad_storage_zero_tail_bytes): measured here from
// the files' sizes, with every partition holding one record in one
// segment, so a file's frames are the same size in every partition.
func TestStatsCountTheZeroTailsOnDisk(t *testing.T) {
	h := cappedHarness(t)
	const partitions = 3 * openLogsTestMax
	h.createTopic("tails", func(c *msg.CreateTopic) { c.Partitions = partitions })
	require.Zero(t, h.node.Stats().ZeroTailBytes, "no log has written yet")
	for index := range partitions { // one round each: the later ones evict the earlier
		h.ok(batchOver("tails", "tail", index, index+1))
	}
	h.ok(msg.Replay{Topic: "tails", Partition: 0, Offset: 0}) // reopens a log closed before: counted once
	require.True(t, h.node.store.IsOpen(PartitionDir("tails", 0)))
	open := h.node.store.OpenDirs()
	require.Len(t, open, openLogsTestMax)
	log, _, err := h.node.store.Log(open[0], h.nowMs)
	require.NoError(t, err)
	frames := log.Stats().SizeBytes

	var onDisk int64
	for index := range partitions {
		dir := PartitionDir("tails", index)
		names, err := h.fs.List(dir)
		require.NoError(t, err)
		var segments []string
		for _, name := range names {
			if strings.HasSuffix(name, ".log") {
				segments = append(segments, name)
			}
		}
		require.Len(t, segments, 1, "partition %d", index)
		info, err := h.fs.Stat(dir + "/" + segments[0])
		require.NoError(t, err)
		require.Greater(t, info.Size, frames, "partition %d holds zeros past its frame", index)
		onDisk += info.Size - frames
	}
	require.Equal(t, onDisk, h.node.Stats().ZeroTailBytes)
	require.Greater(t, onDisk, h.node.store.ZeroTailBytes(), "the closed logs' tails count too")
}

// TestAnEvictedPartitionReopensWarm: the logs the node closes for room
// are kept (Stats.KeptLogs), and a kept log's next open is warm: it
// leaves the kept ones and serves every record.
func TestAnEvictedPartitionReopensWarm(t *testing.T) {
	h := cappedHarness(t)
	const partitions = 2 * openLogsTestMax
	h.createTopic("warm", func(c *msg.CreateTopic) { c.Partitions = partitions })
	for index := range partitions {
		for i := range 3 {
			h.produce("warm", index, fmt.Sprintf("%d-%d", index, i))
		}
	}
	stats := h.node.Stats()
	require.Equal(t, partitions-openLogsTestMax, stats.KeptLogs, "every evicted log is kept")
	require.Positive(t, stats.KeptLogBytes)
	require.LessOrEqual(t, stats.KeptLogBytes, stats.KeptLogBytesMax)

	require.Equal(t, []string{"0-0", "0-1", "0-2"}, h.replayAll("warm", 0))
	require.Equal(t, partitions-openLogsTestMax, h.node.Stats().KeptLogs, "partition 0 left the kept logs, another joined them")
	h.produce("warm", 0, "0-3")
	require.Equal(t, []string{"0-0", "0-1", "0-2", "0-3"}, h.replayAll("warm", 0))
}

// TestADeletedTopicLeavesNoKeptLog: the logs kept for a warm reopen are
// forgotten with their topic, so a topic created again under the name
// serves its own records only, never the old topic's through a kept
// index.
func TestADeletedTopicLeavesNoKeptLog(t *testing.T) {
	h := cappedHarness(t)
	const partitions = 2 * openLogsTestMax
	h.createTopic("again", func(c *msg.CreateTopic) { c.Partitions = partitions })
	for index := range partitions {
		h.produce("again", index, fmt.Sprintf("old-%d", index))
		h.produce("again", index, fmt.Sprintf("old-%d", index))
	}
	require.Positive(t, h.node.Stats().KeptLogs)
	h.ok(msg.DeleteTopic{Name: "again"})
	require.Zero(t, h.node.Stats().KeptLogs)
	require.Zero(t, h.node.Stats().KeptLogBytes)

	h.createTopic("again", func(c *msg.CreateTopic) { c.Partitions = partitions })
	for index := range partitions {
		h.produce("again", index, fmt.Sprintf("new-%d", index))
	}
	for index := range partitions {
		require.Equal(t, []string{fmt.Sprintf("new-%d", index)}, h.replayAll("again", index), "partition %d", index)
	}
}
