package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestRetentionIsNotStarvedByPipelinedRounds: the node contract lets a
// driver feed Tick while a Ready's partition syncs run (pipelined group
// commit). Under steady produce load the partition's round is in flight
// at every tick, and the log deletes nothing then: the retention waits
// for the round's Advance, not for the next check a whole interval later
// (when a round is in flight again), so expired segments go under load
// too (produce review).
func TestRetentionIsNotStarvedByPipelinedRounds(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t", func(r *msg.CreateTopic) { r.RetentionMs = 3_600_000 })
	big := strings.Repeat("x", 16<<10)
	for range 20 { // several 64 KiB segments
		h.produce("t", 0, big)
	}
	before := h.stats("t", 0).OldestOffset
	start := h.nowMs
	for h.nowMs < start+3*3_600_000 { // three hours of steady load, one-hour retention
		h.nextID++
		h.node.Handle(h.nextID, producePinned("t", 0, "load"))
		rd := h.node.Ready()
		overlapped := len(rd.Syncs) > 0 && !rd.Metastore()
		if overlapped { // the driver ticks while the round is on disk
			h.nowMs += 500
			h.node.Tick(h.nowMs)
		}
		for _, s := range rd.Syncs {
			require.NoError(t, s.Run())
		}
		h.takeReplies(rd.Replies)
		h.node.Advance(rd)
		for h.node.HasReady() && !overlapped { // a metastore Ready is never overlapped
			h.advanceOnce()
		}
	}
	h.flush()
	require.NoError(t, h.replies[h.nextID].Err, "the load was accepted throughout")
	require.Greater(t, h.stats("t", 0).OldestOffset, before,
		"segments three hours old under a one-hour retention are still there after 180 retention passes")
}
