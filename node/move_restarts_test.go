package node

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAMoveThatCannotFitEnds: a destination whose disk cannot hold the
// copy restarts its session at every failed chunk write, and each session
// makes progress before it fails, so no stall shows; after
// MoveConfig.RestartsMax restarts the next session proposes the move's
// abort, and the move ends (every move ends; move review, medium).
func TestAMoveThatCannotFitEnds(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	source := c.owners(leader, "t")[0]
	target := c.otherThan(source)
	payload := string(bytes.Repeat([]byte("x"), 32<<10))
	for range 40 {
		require.NoError(t, c.do(source, producePinned("t", 0, payload)).Err)
	}
	c.nodes[target].cfg.Moves.LagBytes = 64 << 10 // CatchUp runs over several passes before any freeze
	events := &detailRecorder{}
	c.nodes[target].observer = events
	c.disks[target].SetCapacity(400 << 10) // well below the 1.3 MB partition
	c.startMove(leader, "t", 0, target)
	ended := false
	for range 600 { // 600 s, ten times moves.stall_timeout_ms
		c.tick(1_000)
		if a, _ := c.nodes[leader].meta.State().Assignment("t", 0); a.Target == "" {
			ended = true
			break
		}
	}
	require.True(t, ended, "the move ended")
	a, _ := c.nodes[leader].meta.State().Assignment("t", 0)
	require.Equal(t, source, a.Owner, "aborted: the source keeps the partition")
	restarts := slices.IndexFunc(events.events, func(e string) bool { return strings.HasPrefix(e, "move-restarts-exhausted") })
	require.GreaterOrEqual(t, restarts, 0, "the destination gave up after its restarts: %v", events.events)
	require.Contains(t, events.events[restarts], "restarted 8 times here")
	c.tick(100)
	require.Empty(t, c.nodes[target].moveRestarts, "the ended move's count is forgotten")
}

// detailRecorder keeps the node's events with their details.
type detailRecorder struct {
	NopObserver
	events []string
}

func (r *detailRecorder) Event(kind, detail string) { r.events = append(r.events, kind+": "+detail) }

// TestAFailedStagingWaitsBeforeTheNextSession: after a failure to stage a
// move's copy, no session of that move starts before stageRetryMs (a
// moment without descriptors must not use up the restarts in as many
// ticks); another move of the partition is not held back; a count whose
// move no longer targets the node is forgotten.
func TestAFailedStagingWaitsBeforeTheNextSession(t *testing.T) {
	h := newHarness(t)
	key := partitionKey{"t", 0}
	h.node.moveRestarts[key] = moveRestartCount{moveStartedAtMs: 5, count: 1, retryAtMs: h.nowMs + stageRetryMs}
	require.False(t, h.node.mayStartSession(key, 5))
	require.True(t, h.node.mayStartSession(key, 6), "another move of the partition")
	h.tick(stageRetryMs)
	require.True(t, h.node.mayStartSession(key, 5))
	h.node.movesScratch = nil
	h.node.forgetEndedRestarts()
	require.Empty(t, h.node.moveRestarts, "no move targets this node: the count goes")
}
