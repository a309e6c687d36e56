package node

import (
	"narad/msg"
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
	h.createTopic("a", func(c *msg.CreateTopic) { c.Partitions = 4 })
	e := h.fail(msg.CreateTopic{Name: "b", Partitions: 7}, msg.CodeConflict)
	require.Contains(t, e.Message, "limit of 10 partitions")
	h.createTopic("b", func(c *msg.CreateTopic) { c.Partitions = 6 })
	e = h.fail(msg.CreateTopic{Name: "c"}, msg.CodeConflict)
	require.Contains(t, e.Message, "limit of 2 topics")

	h.ok(msg.DeleteTopic{Name: "b"})
	grow := 11
	e = h.fail(msg.AlterTopic{Name: "a", Partitions: &grow}, msg.CodeConflict)
	require.Contains(t, e.Message, "limit of 10 partitions")
	require.Equal(t, 4, h.ok(msg.GetTopic{Name: "a", Partition: msg.PartitionNone}).(msg.TopicDetail).Partitions)
	grow = 10
	h.ok(msg.AlterTopic{Name: "a", Partitions: &grow})
}
