package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Five voters, two of them dead for good. The operator decommissions a
// live node and one of the dead ones (they own nothing: no topic). Removing
// the live one is refused (ErrQuorumAtRisk: four left, two alive), but
// removing the dead one is safe (four left, three alive), and after it the
// live one's removal is safe too (three left, two alive): a refused removal
// does not keep the leader from trying the next drained member.
func TestARefusedRemovalDoesNotBlockASafeOne(t *testing.T) {
	c := newClusterHarness(t, 5)
	leader := c.elect()
	others := c.except(leader)
	slices.Sort(others)
	live, dead := others[0], others[2:] // live sorts before both dead ones
	for _, id := range dead {
		c.cut[id] = true
	}
	c.tickUntil(100, 100, func() bool {
		for _, id := range dead {
			if m, _ := c.nodes[leader].meta.State().Member(id); m.Alive {
				return false
			}
		}
		return true
	})
	require.NoError(t, c.do(leader, msg.Decommission{ID: live}).Err)
	require.NoError(t, c.do(leader, msg.Decommission{ID: dead[0]}).Err)
	c.tickUntil(100, 300, func() bool { // thirty simulated seconds, many planning rounds
		_, voter := c.nodes[leader].meta.State().PeerByNodeID(dead[0])
		return !voter
	})
}

// The guard judges liveness by Member.Alive, which lags a crash by
// cluster.dead_after_ms. Two of five voters crash, and a third, drained
// (it owns nothing), must not be removed within that lag: the leader,
// which has not heard from the crashed voters, does not propose it (four
// voters left with two alive could never commit again).
func TestARemovalWaitsForVotersHeardNotForTheAliveFlag(t *testing.T) {
	c := newClusterHarness(t, 5)
	leader := c.elect()
	others := c.except(leader)
	down, leaving := others[:2], others[2]
	c.tick(1_000) // the leader hears from everyone
	for _, id := range down {
		c.cut[id] = true
	}
	c.tick(1_500) // past raft's election timeout, well within dead_after_ms
	for _, id := range down {
		m, _ := c.nodes[leader].meta.State().Member(id)
		require.True(t, m.Alive, "the metastore has not marked %s dead yet", id)
	}
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tick(5_000) // planning rounds
	now, ok := c.leader()
	require.True(t, ok, "the metastore lost its leader")
	_, voter := c.nodes[now].meta.State().PeerByNodeID(leaving)
	id := c.send(now, msg.CreateTopic{Name: "after", Partitions: 3})
	reply := c.await(id, 100, 100)
	require.NoError(t, reply.Err, "the metastore cannot commit (drained node still a voter: %t; voters %v)",
		voter, c.nodes[now].meta.State().ConfState().Voters)
}

// except lists the cluster's nodes but id, in id order.
func (c *clusterHarness) except(id string) []string {
	var others []string
	for _, other := range c.ids {
		if other != id {
			others = append(others, other)
		}
	}
	return others
}
