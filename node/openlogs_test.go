package node

import (
	"fmt"
	"testing"

	"narad/msg"

	"github.com/stretchr/testify/require"
)

// openLogsTestMax is the small cap of open logs the test runs under.
const openLogsTestMax = 4

// With far more partitions than open logs allowed, the node stays under
// its cap and serves every partition, closing the least recently used
// logs and reopening them on demand; a batch that would need more dirty
// logs than the cap is refused as retryable (the records it appended
// before the refusal become durable, as after any 503 of a batch).
func TestOpenLogsCapServesEveryPartition(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = openLogsTestMax
	h.restart()
	const partitions = 30
	h.createTopic("many", func(c *msg.CreateTopic) { c.Partitions = partitions })
	h.createTopic("wide", func(c *msg.CreateTopic) { c.Partitions = partitions })

	wide := msg.Produce{Topic: "wide"}
	for index := range openLogsTestMax + 1 {
		wide.Records = append(wide.Records, msg.ProduceRecord{Partition: index, Payload: []byte("wide")})
	}
	h.fail(wide, msg.CodeUnavailable)
	require.LessOrEqual(t, h.node.Stats().OpenLogs, openLogsTestMax)

	for index := range partitions {
		placement := h.produce("many", index, fmt.Sprintf("record %d", index))
		require.Equal(t, uint64(0), placement.Offset, "partition %d", index)
		require.LessOrEqual(t, h.node.Stats().OpenLogs, openLogsTestMax)
	}
	for index := range partitions {
		result := h.ok(msg.Consume{Topic: "many", Partition: index}).(msg.ConsumeResult)
		if len(result.Messages) == 0 {
			// Every open log held an unpersisted committed offset: the
			// refused open scheduled their persist, so a retry succeeds.
			result = h.ok(msg.Consume{Topic: "many", Partition: index}).(msg.ConsumeResult)
		}
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
