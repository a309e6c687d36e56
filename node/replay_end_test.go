package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Property: a replay at the high watermark of a partition whose owner's
// disk is under its reserve answers "nothing there" (204), as anywhere
// else: the low disk refuses appends, so the end it reads is the end.
// Only a frozen or fenced copy, whose new owner may hold more, is 503.
func TestAReplayAtTheEndIsEmptyOnALowDisk(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	h.produce("t", 0, "a")
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 1)
	require.True(t, h.node.Stats().DiskLow)

	result := h.ok(msg.Replay{Topic: "t", Partition: 0, Offset: 1}).(msg.ReplayResult)
	require.Nil(t, result.Message, "a replay at the end on a low disk is empty (204), not 503")
	record := h.ok(msg.Replay{Topic: "t", Partition: 0, Offset: 0}).(msg.ReplayResult)
	require.Equal(t, "a", string(record.Message.Payload), "records below the end are replayed on a low disk")
}

// Property: a fenced owner (cut from the metastore past half of
// MemberDeadAfterMs) still answers a replay at its copy's end 503: another
// node may be about to take the partition over and append past it.
func TestAReplayAtTheEndOfAFencedCopyIsRetryable(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	cut := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), cut)
	require.GreaterOrEqual(t, index, 0, "the cut node owns a partition")
	require.NoError(t, c.do(cut, producePinned("t", index, "before")).Err)
	require.Nil(t, c.do(cut, msg.Replay{Topic: "t", Partition: index, Offset: 1}).Result.(msg.ReplayResult).Message, "unfenced, the end is empty")

	c.cut[cut] = true
	for range 4 {
		c.tick(500) // past half of MemberDeadAfterMs, not past it
	}
	fenced := c.do(cut, msg.Replay{Topic: "t", Partition: index, Offset: 1})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(fenced.Err), "a fenced copy's end may not be the partition's: %v", fenced.Err)
}
