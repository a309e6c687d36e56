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
	c.cutUntilMarkedDead(leader, dead...)
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
	c.requireMetastoreCommits(leaving)
}
