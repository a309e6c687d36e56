package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAPollPastMoreCorruptRecordsThanOneReserveSkipsIsServed: one
// reserve skips at most corruptSkipsPerReserveMax corrupt records, so a
// damaged run longer than that ends a consume's look at the partition
// with a good record still beyond it. The poll that parked then was woken
// by nothing but a new record and waited out its whole wait with the
// record there; it is now served at the node's next tick, which goes on
// skipping.
func TestAPollPastMoreCorruptRecordsThanOneReserveSkipsIsServed(t *testing.T) {
	const damaged = corruptSkipsPerReserveMax + 6
	h := newHarness(t)
	h.cfg.Log.HWMLagBytesMax, h.cfg.Log.HWMLagMsMax = 0, 0 // every acknowledged record below the persisted HWM
	h.restart()
	h.createTopic("t", func(r *msg.CreateTopic) { r.Partitions = 3 }) // partitions 1 and 2 stay empty
	writeDamagedRun(t, h, "t", damaged)
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.do(msg.Replay{Topic: "t", Partition: 0, Offset: damaged - 1}).Err),
		"recovery found the damaged records corrupt")

	poll := h.send(msg.Consume{Topic: "t", Partition: msg.PartitionNone, Max: 1, WaitMs: 20_000})
	h.tick(10)
	reply, answered := h.replies[poll]
	require.True(t, answered, "the poll is served at the next tick, not after its wait")
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1)
	require.Equal(t, fmt.Sprintf("record-%03d", damaged), string(messages[0].Payload))
}

// writeDamagedRun produces damaged+1 records ("record-000", ...) to
// partition 0 of topicName, crashes the node, damages the first damaged
// of them on disk and starts it again: its recovery finds them corrupt,
// and only the last record good.
func writeDamagedRun(t *testing.T, h *harness, topicName string, damaged int) {
	t.Helper()
	for i := range damaged + 1 {
		h.produce(topicName, 0, fmt.Sprintf("record-%03d", i))
	}
	require.NoError(t, h.node.Abandon())
	h.node = nil
	h.fs.Crash()
	for i := range damaged {
		damagePayload(t, h.fs, PartitionDir(topicName, 0), fmt.Sprintf("record-%03d", i))
	}
	h.start()
}
