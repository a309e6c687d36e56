package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestConcurrentAltersKeepEachOthersFields: two alters of different
// fields taken before either applies must both take effect: an alter
// leaves the fields it does not name as they are (docs/api.md#alter-a-topic).
// The node used to propose every field from its view of the topic, so the
// second alter wrote back the retention the first one changed.
func TestConcurrentAltersKeepEachOthersFields(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	retention := int64(2 * 3_600_000)
	visibility := int64(5_000)
	h.node.Handle(100, msg.AlterTopic{Name: "orders", RetentionMs: &retention})
	h.node.Handle(101, msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: &visibility})
	h.flush()
	require.NoError(t, h.replies[100].Err)
	require.NoError(t, h.replies[101].Err)
	info := h.ok(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}).(msg.TopicDetail)
	require.Equal(t, visibility, info.VisibilityTimeoutMs)
	require.Equal(t, retention, info.RetentionMs, "the second alter (visibility only) reverted the first one's retention_ms")
}
