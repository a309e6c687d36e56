package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A consume of a topic never written to, and its stats, make no files:
// each partition's look used to create its directory, an empty segment,
// the hwm file and the durable topic stamp, on the loop, while every
// other client waited (audit: 0.44 s per consume of a 108-partition
// topic). The first record written still makes them, and is consumed.
func TestReadingANeverWrittenTopicMakesNoFiles(t *testing.T) {
	h := newHarness(t)
	h.createTopic("empty", func(r *msg.CreateTopic) { r.Partitions = 8 })
	_, found := h.consume("empty")
	require.False(t, found)
	for i := range 8 {
		stats := h.stats("empty", i)
		require.True(t, stats.Available)
		require.Zero(t, stats.HighWatermark)
	}
	entries, err := h.fs.List(topicsDir)
	if err == nil {
		require.NotContains(t, entries, "empty", "a read made the topic's files")
	}

	h.produce("empty", 3, "first")
	message, found := h.consume("empty")
	require.True(t, found)
	require.Equal(t, "first", string(message.Payload))
	partitions, err := h.fs.List(topicsDir + "/empty")
	require.NoError(t, err)
	require.Equal(t, []string{partitionEntry(3)}, partitions, "only the partition written to has files")
}
