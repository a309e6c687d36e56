package node

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Creates past the cluster's topic limit and creates or growths past a
// node's partition limit are refused with a clear 409, and change nothing.
func TestPlacementLimits(t *testing.T) {
	h := newHarness(t)
	h.cfg.TopicsMax = 2
	h.cfg.PartitionsPerNodeMax = 10
	h.restart()
	h.createTopic("a", func(c *CreateTopic) { c.Partitions = 4 })
	e := h.fail(CreateTopic{Name: "b", Partitions: 7}, CodeConflict)
	require.Contains(t, e.Message, "limit of 10 partitions")
	h.createTopic("b", func(c *CreateTopic) { c.Partitions = 6 })
	e = h.fail(CreateTopic{Name: "c"}, CodeConflict)
	require.Contains(t, e.Message, "limit of 2 topics")

	h.ok(DeleteTopic{Name: "b"})
	grow := 11
	e = h.fail(AlterTopic{Name: "a", Partitions: &grow}, CodeConflict)
	require.Contains(t, e.Message, "limit of 10 partitions")
	require.Equal(t, 4, h.ok(GetTopic{Name: "a", Partition: PartitionNone}).(TopicDetail).Partitions)
	grow = 10
	h.ok(AlterTopic{Name: "a", Partitions: &grow})
}
