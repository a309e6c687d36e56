package node

import (
	"testing"

	"narad/msg"

	"github.com/stretchr/testify/require"
)

// backlogOf is the backlog PartitionBacklogs reports for a partition, and
// whether it reports one.
func (h *harness) backlogOf(topicName string, index int) (PartitionState, bool) {
	for _, state := range h.node.PartitionBacklogs() {
		if state.Topic == topicName && state.Partition == index {
			return state, true
		}
	}
	return PartitionState{}, false
}

// A partition's backlog outlives its open log: a log closed for room still
// reports the high watermark it closed with, its committed offset moved
// by acks taken while it was closed, and its leases; a restart forgets
// what no request has opened since.
func TestABacklogIsReportedWhileItsLogIsClosed(t *testing.T) {
	h := cappedHarness(t)
	h.createTopic("orders")
	for range 5 {
		h.produce("orders", 0, "x")
	}
	first, ok := h.consume("orders")
	require.True(t, ok)
	second, ok := h.consume("orders")
	require.True(t, ok)
	require.NoError(t, h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit))
	h.tick(h.cfg.CommitPersistIntervalMs) // the committed offset persisted, the log may close

	h.createTopic("other", func(c *msg.CreateTopic) { c.Partitions = 2 * openLogsTestMax })
	for index := range 2 * openLogsTestMax {
		h.produce("other", index, "y")
	}
	require.NotContains(t, h.node.OpenLogDirs(), PartitionDir("orders", 0), "produces elsewhere closed the log for room")
	backlog, ok := h.backlogOf("orders", 0)
	require.True(t, ok, "a closed log still reports its backlog")
	require.Equal(t, [4]uint64{5, 1, 1, 0}, [4]uint64{backlog.HWM, backlog.Committed, uint64(backlog.InFlight), uint64(backlog.AckedAhead)},
		"hwm, committed, in flight, acked ahead of the closed log")

	require.NoError(t, h.ackHandle("orders", second.ReceiptHandle, msg.AckCommit))
	backlog, ok = h.backlogOf("orders", 0)
	require.True(t, ok)
	require.Equal(t, [3]uint64{5, 2, 0}, [3]uint64{backlog.HWM, backlog.Committed, uint64(backlog.InFlight)}, "an ack moves the backlog (it reopens the log)")

	h.tick(h.cfg.CommitPersistIntervalMs) // the second ack persisted
	h.restart()
	_, ok = h.backlogOf("orders", 0)
	require.False(t, ok, "before its first tick the restarted node has read no partition's files")
	h.tick(1)
	backlog, ok = h.backlogOf("orders", 0)
	require.True(t, ok, "a partition not opened since the restart reports the backlog its files hold")
	require.Equal(t, [2]uint64{5, 2}, [2]uint64{backlog.HWM, backlog.Committed}, "as persisted before the restart")
	require.NotContains(t, h.node.OpenLogDirs(), PartitionDir("orders", 0), "read without opening the log")
	_, ok = h.backlogOf("orders", 1)
	require.False(t, ok, "a partition without a record reports nothing")

	h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 0})
	backlog, ok = h.backlogOf("orders", 0)
	require.True(t, ok, "opened again, the partition reports its backlog")
	require.Equal(t, [2]uint64{5, 2}, [2]uint64{backlog.HWM, backlog.Committed}, "as the opened log has it")
	require.NotContains(t, h.node.backlogPeeks.found, partitionKey{"orders", 0}, "the open log reports it now: the read figures are forgotten")
	require.Contains(t, h.node.backlogPeeks.found, partitionKey{"other", 0}, "the others' stay")
}

// After a restart, the backlogs read from the files follow the partition:
// an ack of a record (by a consumer that reserved it after the restart)
// moves it, and a deleted topic's partitions report nothing.
func TestABacklogReadAfterARestartFollowsAcksAndDeletes(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	for range 3 {
		h.produce("orders", 0, "x")
	}
	h.restart()
	h.tick(1)
	backlog, ok := h.backlogOf("orders", 0)
	require.True(t, ok)
	require.Equal(t, [2]uint64{3, 0}, [2]uint64{backlog.HWM, backlog.Committed})

	message, ok := h.consume("orders")
	require.True(t, ok)
	require.NoError(t, h.ackHandle("orders", message.ReceiptHandle, msg.AckCommit))
	backlog, ok = h.backlogOf("orders", 0)
	require.True(t, ok)
	require.Equal(t, [2]uint64{3, 1}, [2]uint64{backlog.HWM, backlog.Committed}, "the consume opened the log, which reports the ack")

	h.restart()
	h.tick(1)
	_, ok = h.backlogOf("orders", 0)
	require.True(t, ok)
	h.ok(msg.DeleteTopic{Name: "orders"})
	_, ok = h.backlogOf("orders", 0)
	require.False(t, ok, "a deleted topic's partition reports no backlog")
	require.Empty(t, h.node.backlogPeeks.found)
}

// A closed log's backlog counts the acks its lease table took while it was
// closed: a dead letter settled after the relay's own append evicted its
// source's log moves only the table's frontier (the log learns it when it
// opens again), and the record, acknowledged, is no backlog. A closed log
// without a backlog reports nothing (lag 0).
func TestAClosedLogsBacklogCountsTheAcksTakenWhileClosed(t *testing.T) {
	h := oneOpenLogWithDeadLetters(t)
	h.produce("orders", 0, "poison")
	h.consumeAndNack("orders") // its only delivery ends unacked: it goes to "dead"
	h.flush()
	source := h.node.partitions[partitionKey{"orders", 0}]
	require.Nil(t, source.log, "the relay's append closed the source's log")
	require.True(t, source.frontierUnsaved, "the frontier moved in the lease table only")
	backlog, reported := h.backlogOf("orders", 0)
	require.False(t, reported, "acknowledged by its dead letter, the record is no backlog: %+v", backlog)
}
