package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Property: under the disk reserve a node refuses writes into its
// partitions with a 503 that names the reserve, and appends nothing; it
// counts what it appended since the last report, so a burst stops at the
// reserve before the next report; a report above the reserve lets writes
// in again. A node never told of its disk keeps no reserve.
func TestWritesStopAtTheDiskReserve(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	payload := strings.Repeat("x", 1_000)
	produce := msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte(payload)}}}
	h.ok(produce) // never told: no reserve

	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 1_500)
	h.ok(produce) // 1,064 bytes counted: 436 left above the reserve
	h.ok(produce) // taken while above it; now under
	refused := h.fail(produce, msg.CodeUnavailable)
	require.Contains(t, refused.Message, "storage.disk_reserve_bytes")
	require.True(t, h.node.Stats().DiskLow)
	require.NoError(t, h.do(msg.Replay{Topic: "t", Partition: 0, Offset: 2}).Err)
	require.Error(t, h.do(msg.Replay{Topic: "t", Partition: 0, Offset: 3}).Err, "the refused record was not appended")

	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 1<<20)
	require.False(t, h.node.Stats().DiskLow)
	h.ok(produce)
}

// Property: once the driver says the free space is no longer known
// (ForgetDiskFree), the node keeps no reserve: its own count of appends
// since the last report would only go down.
func TestAnUnknownFreeSpaceKeepsNoReserve(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 1)
	h.fail(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}}, msg.CodeUnavailable)
	h.node.ForgetDiskFree()
	require.False(t, h.node.Stats().DiskLow)
	h.ok(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
}
