package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAPlanIsBuiltAgainOnlyWhenWhatItReadsChanged: a leader whose last
// plan asked for nothing does not build the planner's input again (it
// copies every assignment) while the topics and the members' liveness
// and drain stay as they were; heartbeats alone change neither. A drain
// does, and the next plan moves the drained member's partitions
// (membership review: the input cost tens of ms a second at 64k
// partitions).
func TestAPlanIsBuiltAgainOnlyWhenWhatItReadsChanged(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	c.tick(3_000) // several plan intervals and heartbeat rounds
	at := c.nodes[leader]
	require.True(t, at.planned.idle, "a balanced cluster at rest needs no move")
	before := at.planInput()
	c.tick(3_000)
	require.Equal(t, before, at.planInput(), "heartbeats do not change what a plan reads")

	drained := c.except(leader)[0]
	require.NoError(t, c.do(leader, msg.Decommission{ID: drained}).Err)
	require.NotEqual(t, before, at.planInput(), "a drain does")
	c.tickUntil(100, 100, func() bool { return len(at.meta.State().Moves()) > 0 || !at.meta.State().MemberPlaced(drained) })
}

// TestAStoppingLeaderHandsItsLeadershipOver: a leader about to stop
// hands the metastore over to a live voter, which leads within a few
// ticks, well before the election timeout the others would otherwise
// wait out; a follower, or a lone node, has nothing to hand over.
func TestAStoppingLeaderHandsItsLeadershipOver(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	follower := c.except(leader)[0]
	require.False(t, c.nodes[follower].HandLeadershipOver(), "a follower holds nothing to hand over")
	require.True(t, c.nodes[leader].HandLeadershipOver())
	electionTicks := c.configs[leader].Meta.ElectionTicks
	for range electionTicks / 2 {
		c.tick(c.configs[leader].MetaTickIntervalMs)
	}
	require.False(t, c.nodes[leader].meta.IsLeader(), "the old leader stepped down")
	led := 0
	for _, id := range c.except(leader) {
		if c.nodes[id].meta.IsLeader() {
			led++
		}
	}
	require.Equal(t, 1, led, "another voter leads within half an election timeout")

	single := newHarness(t)
	require.False(t, single.node.HandLeadershipOver(), "a lone node has no one to hand over to")
}
