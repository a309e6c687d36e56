package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// BenchmarkLeaseExpiryTick is one millisecond's tick of a node with
// 20,000 partitions, each holding a reservation: 19,980 of topics with a
// minute's visibility timeout, and 20 of a topic with one of a
// millisecond, whose reservations (taken again before each tick, outside
// the timing) lapse at every tick. Expiry should cost what is due, not a
// walk of every partition.
func BenchmarkLeaseExpiryTick(b *testing.B) {
	h := newHarness(b)
	for i := range 185 {
		name := fmt.Sprintf("slow%03d", i)
		h.createTopic(name, func(r *msg.CreateTopic) { r.Partitions, r.VisibilityTimeoutMs = 108, 60_000 })
		reserveEveryPartition(b, h, name, 108)
	}
	h.createTopic("fast", func(r *msg.CreateTopic) { r.Partitions, r.VisibilityTimeoutMs = 20, 1 })
	reserveEveryPartition(b, h, "fast", 20)
	b.ReportAllocs()
	for b.Loop() {
		h.nowMs++
		h.node.Tick(h.nowMs)
		b.StopTimer()
		result := h.ok(msg.Consume{Topic: "fast", Partition: msg.PartitionNone, Max: 20}).(msg.ConsumeResult)
		if len(result.Messages) != 20 {
			b.Fatalf("the fast topic's 20 records lapsed and are reserved again, got %d", len(result.Messages))
		}
		b.StartTimer()
	}
}

// reserveEveryPartition puts one record in each partition of a topic
// and reserves them all.
func reserveEveryPartition(b *testing.B, h *harness, name string, partitions int) {
	produce := msg.Produce{Topic: name}
	for partition := range partitions {
		produce.Records = append(produce.Records, msg.ProduceRecord{Partition: partition, Payload: []byte("x")})
	}
	h.ok(produce)
	reserved := 0
	for reserved < partitions {
		result := h.ok(msg.Consume{Topic: name, Partition: msg.PartitionNone, Max: min(partitions-reserved, msg.ConsumeBatchMax)}).(msg.ConsumeResult)
		require.NotEmpty(b, result.Messages, "every partition of %s holds a reservation", name)
		reserved += len(result.Messages)
	}
}
