package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// TestAStalledMoveWhoseAbortWasLostIsAbortedLater: a destination that
// makes no progress while its source is alive proposes the move's abort
// (docs/architecture.md#aborts: "a move never holds one of the in-flight
// slots forever"). A proposal can be lost (meta.Propose: a forwarded
// proposal dropped on the way, a leader deposed, no leader known); the
// session must ask again, as the source does for its TTL abort and the
// destination for its flip. It asks once: the move, stalled for good,
// holds its slot and its partition until the destination restarts.
func TestAStalledMoveWhoseAbortWasLostIsAbortedLater(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	partition, source, target := c.partitionAwayFromLeader(leader, "r")
	const stallTimeoutMs = 5_000
	c.nodes[target].cfg.Moves.StallTimeoutMs = stallTimeoutMs

	proposalsLost := true
	c.drop = func(env msg.Envelope) bool {
		if _, ok := env.Message.(msg.ForwardRequest); ok && env.From == target && env.To == source {
			return true // the destination cannot reach its (alive) source: no progress
		}
		raft, ok := env.Message.(msg.RaftMessage)
		return proposalsLost && ok && env.From == target && raft.Message.GetType() == raftpb.MsgProp
	}
	c.startMove(leader, "t", partition, target)
	for range 2 * stallTimeoutMs / 1_000 {
		c.tick(1_000)
	}
	assignment, _ := c.nodes[leader].meta.State().Assignment("t", partition)
	require.Equal(t, target, assignment.Target, "the first abort was lost")
	member, _ := c.nodes[leader].meta.State().Member(source)
	require.True(t, member.Alive, "the source is alive")

	proposalsLost = false
	for range 6 * stallTimeoutMs / 1_000 {
		c.tick(1_000)
	}
	assignment, _ = c.nodes[leader].meta.State().Assignment("t", partition)
	require.Empty(t, assignment.Target, "the stalled move is aborted once a proposal can get through")
}

// TestAMoveWhoseSourceDiedFreesItsSlotForADrain: a move whose source died
// before it froze can never be promoted (the copy may lack records the
// source acknowledged after it). The destination used to wait for the
// source, holding one of the planner's moves.max_in_flight slots for as
// long as the node stayed down: with the bound reached, a decommission
// elsewhere never started a move. Once the source was silent for the
// promotion delay (and the stall timeout), the destination now proposes
// the abort, the partition stays with its dead owner, and the drain goes
// on.
func TestAMoveWhoseSourceDiedFreesItsSlotForADrain(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 8)
	for _, n := range c.nodes {
		n.cfg.Moves.MaxInFlight = 1
		n.cfg.Moves.ForcePromoteAfterMs, n.cfg.Moves.StallTimeoutMs = 5_000, 5_000
	}
	owners := c.owners(leader, "t")
	partition := slices.IndexFunc(owners, func(owner string) bool { return owner != leader })
	source := owners[partition]
	target := c.otherThan(source, leader)
	leaving := c.otherThan(source, leader, target)
	require.Contains(t, owners, leaving, "the node to drain owns partitions")
	events := &detailRecorder{}
	c.nodes[target].observer = events
	require.NoError(t, c.do(source, producePinned("t", partition, "r")).Err)
	c.drop = func(env msg.Envelope) bool { // no freeze reaches the source: its copy is never final
		forward, ok := env.Message.(msg.ForwardRequest)
		_, freeze := forward.Request.(msg.MoveFreeze)
		return ok && freeze && env.To == source
	}
	c.startMove(leader, "t", partition, target)
	c.tick(100)
	require.Len(t, c.nodes[target].MoveSessions(), 1, "the move copies")
	c.cut[source] = true

	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(1_000, 60, func() bool { return !slices.Contains(c.owners(leader, "t"), leaving) })
	member, _ := c.nodes[leader].meta.State().Member(source)
	require.False(t, member.Alive, "the source is dead in the metastore")
	assignment, _ := c.nodes[leader].meta.State().Assignment("t", partition)
	require.Equal(t, source, assignment.Owner, "the copy was not promoted")
	require.Empty(t, assignment.Target, "the move was aborted")
	require.Empty(t, c.nodes[target].MoveSessions(), "the destination's session ended")
	lost := slices.IndexFunc(events.events, func(event string) bool { return strings.HasPrefix(event, "move-source-lost: ") })
	require.GreaterOrEqual(t, lost, 0, "the destination said why it aborted")
	// The figure is the source's silence, not the time since it was
	// marked dead (the warning said "dead since" it, for a node marked
	// dead cluster.dead_after_ms after it went silent).
	require.Contains(t, events.events[lost], fmt.Sprintf("source %s dead, silent for ", source))
}
