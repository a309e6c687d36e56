package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestTheLeaderProposesOneRoundOfHeartbeatsPerInterval: in a calm
// three-node cluster each member heartbeats at the interval's multiples
// of its clock and the leader proposes the three heartbeats as one entry,
// each stamped with its member's time.
func TestTheLeaderProposesOneRoundOfHeartbeatsPerInterval(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	interval := c.configs[leader].MemberHeartbeatIntervalMs
	for c.nowMs%interval != 0 { // to a boundary: every member heartbeats now
		c.tick(min(100, interval-c.nowMs%interval))
	}
	c.tick(interval) // a whole interval in step
	boundary := c.nowMs
	before := c.nodes[leader].MetaAppliedIndex()
	for range 9 {
		c.tick(interval / 10)
	}
	require.Equal(t, before+1, c.nodes[leader].MetaAppliedIndex(), "one entry for the whole round")
	for _, id := range c.ids {
		member, ok := c.nodes[leader].meta.State().Member(id)
		require.True(t, ok)
		require.True(t, member.Alive)
		require.Equal(t, boundary, member.LastHeartbeatMs, "%s's heartbeat carries its own time", id)
	}
}

// TestAnInvalidHeartbeatSpoilsNoRound: a heartbeat whose address is over
// the bound is dropped where it arrives; the round it would have joined
// still applies the others.
func TestAnInvalidHeartbeatSpoilsNoRound(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	other := c.otherThan(leader)
	c.nodes[leader].Step(msg.Envelope{From: other, To: leader,
		Message: msg.Heartbeat{HTTPAddr: strings.Repeat("h", 300), ClusterAddr: "c:1", NowMs: c.nowMs}})
	require.Empty(t, c.nodes[leader].cluster.heartbeats.beats, "dropped on arrival")
	interval := c.configs[leader].MemberHeartbeatIntervalMs
	before, _ := c.nodes[leader].meta.State().Member(leader)
	c.tick(interval)
	c.tick(interval / 10)
	after, _ := c.nodes[leader].meta.State().Member(leader)
	require.Greater(t, after.LastHeartbeatMs, before.LastHeartbeatMs, "the leader's own round applies")
	member, _ := c.nodes[leader].meta.State().Member(other)
	require.NotEqual(t, strings.Repeat("h", 300), member.HTTPAddr)
}

// TestAFollowerHeartbeatsToTheLeaderNotThroughRaft: a follower's
// heartbeat is a message to the leader; a node that does not lead drops
// one it is sent.
func TestAFollowerHeartbeatsToTheLeaderNotThroughRaft(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	follower := c.otherThan(leader)
	third := c.otherThan(leader, follower)
	c.nodes[third].Step(msg.Envelope{From: follower, To: third, Message: msg.Heartbeat{HTTPAddr: "h:1", ClusterAddr: "c:1", NowMs: c.nowMs}})
	require.Empty(t, c.nodes[third].cluster.heartbeats.beats, "a follower gathers no round")
	c.nodes[leader].Step(msg.Envelope{From: follower, To: leader, Message: msg.Heartbeat{HTTPAddr: "h:1", ClusterAddr: "c:1", NowMs: c.nowMs + 1,
		Incarnation: c.nodes[follower].incarnation}})
	c.settle()
	member, _ := c.nodes[leader].meta.State().Member(follower)
	require.Equal(t, "h:1", member.HTTPAddr, "new addresses are news: proposed at once")
	require.Equal(t, c.nowMs+1, member.LastHeartbeatMs)
}
