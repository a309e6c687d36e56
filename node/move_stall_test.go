package node

import (
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
