package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// In a five-voter cluster with two voters dead, a drained third is not
// removed from the voters: the remaining four would need three votes and
// only two are alive, so the metastore could never commit again.
func TestDecommissionNeverLeavesTooFewLiveVotersForAQuorum(t *testing.T) {
	c := newClusterHarness(t, 5)
	leader := c.electWithTopic("t", 10)
	var others []string
	for _, id := range c.ids {
		if id != leader {
			others = append(others, id)
		}
	}
	down, leaving := others[:2], others[2]
	for _, id := range down {
		c.cut[id] = true
	}
	c.tickUntil(100, 100, func() bool {
		for _, id := range down {
			if m, _ := c.nodes[leader].meta.State().Member(id); m.Alive {
				return false
			}
		}
		return true
	})
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool {
		return c.holding(leader, "t", leaving) == 0 && len(c.nodes[leader].meta.State().Moves()) == 0
	})
	c.tick(3_000) // a few planning rounds past the drain
	now, ok := c.leader()
	require.True(t, ok, "the metastore lost its leader after the drain")
	_, voter := c.nodes[now].meta.State().PeerByNodeID(leaving)
	id := c.send(now, msg.CreateTopic{Name: "after", Partitions: 3})
	reply := c.await(id, 100, 100)
	require.NoError(t, reply.Err, "the metastore cannot commit after the drain (drained node still a voter: %t; voters %v)",
		voter, c.nodes[now].meta.State().ConfState().Voters)
}

// A move whose source died before answering its freeze can neither flip
// nor be force-promoted, and nothing aborts it while the source stays
// dead: it holds no moves.max_in_flight slot, so a decommission elsewhere
// still drains (docs: "a move never holds one of the in-flight slots
// forever").
func TestAMoveFromADeadSourceDoesNotBlockADrainForever(t *testing.T) {
	c := newClusterHarness(t, 4)
	for _, id := range c.ids {
		c.nodes[id].cfg.Moves.MaxInFlight = 1
	}
	leader := c.electWithTopic("t", 8)
	source := c.otherThan(leader)
	target := c.otherThan(leader, source)
	leaving := c.otherThan(leader, source, target)
	index := slices.Index(c.owners(leader, "t"), source)
	require.GreaterOrEqual(t, index, 0)
	require.Positive(t, c.holding(leader, "t", leaving))
	c.drop = func(env msg.Envelope) bool { // the source never answers the new move
		forward, ok := env.Message.(msg.ForwardRequest)
		return ok && env.To == source && isMoveRequest(forward.Request)
	}
	c.startMove(leader, "t", index, target)
	c.cut[source] = true // the source dies for good before any freeze
	c.tickUntil(100, 100, func() bool {
		m, _ := c.nodes[leader].meta.State().Member(source)
		return !m.Alive
	})
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	for range 600 { // ten simulated minutes
		c.tick(1_000)
	}
	require.Zero(t, c.holding(leader, "t", leaving), "the drain is stuck behind the moves in flight %+v",
		c.nodes[leader].meta.State().Moves())
}

func isMoveRequest(r msg.Request) bool {
	switch r.(type) {
	case msg.MoveStatus, msg.MoveRead, msg.MoveFreeze:
		return true
	}
	return false
}
