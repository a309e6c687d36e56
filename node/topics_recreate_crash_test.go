package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestARecreatedTopicDoesNotResurrectTheDeletedOnesRecordsAfterACrash:
// a topic is deleted and created again under the same name, then the node
// crashes. The delete's purge of the old directory (dropTopicState's
// RemoveAll) was never made durable, so the crash brings the old
// partition back under the re-created topic's name; the startup sweep
// keeps it (the name is known) and the new topic serves the deleted
// topic's records.
func TestARecreatedTopicDoesNotResurrectTheDeletedOnesRecordsAfterACrash(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	h.produce("orders", 0, "old-record")
	h.ok(msg.DeleteTopic{Name: "orders"})
	h.tick(10)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })

	h.crash()

	require.Equal(t, uint64(0), h.stats("orders", 0).HighWatermark, "the re-created topic is still empty after a crash")
	m, ok := h.consume("orders")
	require.False(t, ok, "the deleted topic's record %q is served by its re-creation", m.Payload)
}
