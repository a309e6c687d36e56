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
// each stamped with its member's time, as soon as the round holds all
// three (it does not wait out the gather time).
func TestTheLeaderProposesOneRoundOfHeartbeatsPerInterval(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	interval := c.configs[leader].MemberHeartbeatIntervalMs
	for c.nowMs%interval != 0 { // to a boundary: every member heartbeats now
		c.tick(min(100, interval-c.nowMs%interval))
	}
	c.tick(interval - 1)
	before := c.nodes[leader].MetaAppliedIndex()
	c.tick(1) // a whole interval in step: the harness delivers every message at once
	boundary := c.nowMs
	require.Equal(t, before+1, c.nodes[leader].MetaAppliedIndex(), "one entry for the whole round, proposed when it is whole")
	for range 9 {
		c.tick(interval / 10)
	}
	require.Equal(t, before+1, c.nodes[leader].MetaAppliedIndex(), "nothing more until the next interval")
	for _, id := range c.ids {
		member, ok := c.nodes[leader].meta.State().Member(id)
		require.True(t, ok)
		require.True(t, member.Alive)
		require.Equal(t, boundary, member.LastHeartbeatMs, "%s's heartbeat carries its own time", id)
	}
}

// TestARoundOfHeartbeatsWaitsForALateMemberWithinTheGatherTime: with one
// member's clock behind the others, the round that holds the others'
// heartbeats waits for its heartbeat (up to heartbeatGatherMs) and the
// three go as one entry; a member that never beats holds a round no
// longer than that.
func TestARoundOfHeartbeatsWaitsForALateMemberWithinTheGatherTime(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	late := c.otherThan(leader)
	gatherMs := c.configs[leader].heartbeatGatherMs()
	require.Equal(t, c.configs[leader].MemberHeartbeatIntervalMs/2, gatherMs, "dead after six intervals: half an interval")
	round := &c.nodes[leader].cluster.heartbeats
	c.nodes[leader].Tick(c.nowMs + 1)
	clear(round.beats)
	before := c.nodes[leader].MetaAppliedIndex()
	beat := func(id string, nowMs int64) {
		c.nodes[leader].Step(msg.Envelope{From: id, To: leader, Message: msg.Heartbeat{HTTPAddr: c.configs[id].AdvertiseAddr,
			ClusterAddr: c.configs[id].ClusterAddr, NowMs: nowMs, Incarnation: c.nodes[id].incarnation}})
	}
	for _, id := range c.ids {
		if id != late && id != leader {
			beat(id, c.nowMs+1)
		}
	}
	c.nodes[leader].gatherHeartbeat(leader, msg.Heartbeat{HTTPAddr: c.configs[leader].AdvertiseAddr,
		ClusterAddr: c.configs[leader].ClusterAddr, NowMs: c.nowMs + 1, Incarnation: c.nodes[leader].incarnation})
	c.nodes[leader].Tick(c.nowMs + gatherMs/2)
	require.Len(t, round.beats, 2, "the round waits for the late member")
	beat(late, c.nowMs+gatherMs/2)
	require.Empty(t, round.beats, "the round is whole: proposed at once")
	c.settle()
	require.Equal(t, before+1, c.nodes[leader].MetaAppliedIndex(), "one entry for the three")

	firstMs := c.nodes[leader].nowMs
	beat(c.otherThan(leader, late), firstMs)
	c.nodes[leader].Tick(firstMs + gatherMs - 1)
	require.NotEmpty(t, round.beats, "held within the gather time: the late member has not beaten")
	c.nodes[leader].Tick(firstMs + gatherMs + c.configs[leader].MetaTickIntervalMs)
	require.Empty(t, round.beats, "proposed once the gather time has passed")
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

// TestTheGatherTimeLeavesTheWriteFenceItsSlack: the gather time is half of
// what the fence leaves past an interval, between a tenth and a half of
// an interval.
func TestTheGatherTimeLeavesTheWriteFenceItsSlack(t *testing.T) {
	for _, c := range []struct{ intervalMs, deadAfterMs, want int64 }{
		{5_000, 30_000, 2_500}, // the defaults: capped at half an interval
		{500, 3_000, 250},      // the simulator's
		{1_000, 3_000, 250},    // the tightest allowed: (1500 - 1000) / 2
		{1_000, 4_000, 500},
		{1_000, 3_100, 275},
	} {
		cfg := Config{MemberHeartbeatIntervalMs: c.intervalMs, MemberDeadAfterMs: c.deadAfterMs}
		gatherMs := cfg.heartbeatGatherMs()
		require.Equal(t, c.want, gatherMs, "interval %d, dead after %d", c.intervalMs, c.deadAfterMs)
		require.LessOrEqual(t, c.intervalMs+2*gatherMs, c.deadAfterMs/2, "an interval and twice the gather time fit in the fence")
	}
}
