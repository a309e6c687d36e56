package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A parent whose records from the cursor to its high watermark are all
// corrupt has nothing to copy: the cursor moves past them (consumers skip
// them too), and the lag drops to zero, instead of the cursor staying
// below them, re-reading the damaged run at each drive and counting it as
// lag until a good record follows.
func TestAFanoutCursorMovesPastACorruptTail(t *testing.T) {
	h := newHarness(t)
	h.cfg.Log.HWMLagBytesMax, h.cfg.Log.HWMLagMsMax = 0, 0 // every acknowledged record below the persisted HWM
	h.restart()
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	h.createTopic("audit", func(r *msg.CreateTopic) { r.Partitions = 3 })
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1) // the cursor starts at the parent's tail
	h.produce("orders", 0, "good")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(1)
	require.Equal(t, []string{"good"}, h.replayAll("audit", 0))
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // the cursor's file says it was copied
	h.produce("orders", 0, "damaged-1")
	h.produce("orders", 0, "damaged-2")
	require.NoError(t, h.node.Abandon()) // before the linger ends: neither copied
	h.node = nil
	h.fs.Crash()
	damagePayload(t, h.fs, PartitionDir("orders", 0), "damaged-1")
	damagePayload(t, h.fs, PartitionDir("orders", 0), "damaged-2")
	h.start()
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.do(msg.Replay{Topic: "orders", Partition: 0, Offset: 2}).Err),
		"recovery found the damaged records corrupt")

	for range 5 {
		h.tick(h.cfg.Fanout.LingerMs)
	}
	require.Equal(t, []string{"good"}, h.replayAll("audit", 0))
	lag := h.lagOf("orders", "audit")
	require.Zero(t, lag.LagMessages, "the corrupt tail is not counted as lag: %+v", lag)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	cursor := h.node.partitions[partitionKey{"orders", 0}].fanout["audit"]
	require.Equal(t, uint64(3), cursor.next)
	require.Equal(t, cursor.next, cursor.persisted, "the cursor's file says so too")
}
