package node

import (
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
	others := c.except(leader)
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
