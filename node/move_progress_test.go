package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// listedMove lists the moves at node id and returns the one of t's
// partition index.
func (c *clusterHarness) listedMove(id string, index int) msg.Move {
	reply := c.do(id, msg.ListMoves{})
	require.NoError(c.t, reply.Err)
	for _, m := range reply.Result.(msg.MovesResult).Moves {
		if m.Topic == "t" && m.Partition == index {
			return m
		}
	}
	c.t.Fatalf("no move of t/%d listed at %s", index, id)
	return msg.Move{}
}

// TestTheProgressListedIsThatOfTheMoveListed: a move is aborted and
// started again to the same destination, and the destination, which has
// not applied the abort yet, still lists the first move and runs its
// session. The progress it reports is that of the first move, and must
// not be shown for the second: the node that lists the moves matches a
// destination's progress to a move by its start time too. Before, it
// showed the first session's phase and size for a move no session had
// started. (The destination's own entries are consistent: it ends the
// sessions of the moves it applied an end of as it applies them.)
func TestTheProgressListedIsThatOfTheMoveListed(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	index, source, target := c.partitionAwayFromLeader(leader, strings.Repeat("a", 3000))
	c.nodes[target].cfg.Moves.LagBytes = 0 // no hand-off before every byte is copied
	c.drop = func(env msg.Envelope) bool { // the copy waits: the session stays in catch-up
		forward, ok := env.Message.(msg.ForwardRequest)
		_, read := forward.Request.(msg.MoveRead)
		return ok && read && env.From == target && env.To == source
	}
	c.startMove(leader, "t", index, target)
	c.tick(100)
	first := c.listedMove(leader, index)
	require.Equal(t, "catchup", first.Phase, "the first move's session reports its phase")

	held := c.drop
	c.drop = func(env msg.Envelope) bool { // the destination applies nothing more
		raft, ok := env.Message.(msg.RaftMessage)
		return held(env) || ok && env.To == target && raft.Message.GetType() == raftpb.MsgApp
	}
	c.abortMove(leader, "t", index, target)
	c.startMove(leader, "t", index, target)
	second := c.listedMove(leader, index)
	require.Greater(t, second.StartedAtMs, first.StartedAtMs, "a second move")
	require.Len(t, c.nodes[target].MoveSessions(), 1, "the destination still runs the first move's session")
	require.Empty(t, second.Phase, "no session of the second move reported progress: %+v", second)
}
