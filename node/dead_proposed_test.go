package node

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestADroppedMarkDeadIsProposedAgain: the leader's MarkMemberDead of a
// silent member is dropped by raft (a leadership transfer is pending, as
// handLeadershipOver starts one for a drained leader; an uncommitted
// entry overwritten after a change of leader is lost the same way). The
// transfer fails and the leader keeps leading: it must propose the mark
// again, or the member stays alive for as long as this node leads, and
// the planner keeps sending it partitions (membership review, medium).
func TestADroppedMarkDeadIsProposedAgain(t *testing.T) {
	c := newClusterHarness(t, 5)
	leader := c.electWithTopic("t", 5)
	others := c.except(leader)
	silent, transferee := others[0], others[1]

	c.cut[silent] = true
	c.tickUntil(100, 100, func() bool { // until the leader is about to find the silent member dead
		seen, ok := c.nodes[leader].cluster.seen[silent]
		m, _ := c.nodes[leader].meta.State().Member(silent)
		return ok && seen.heartbeatMs == m.LastHeartbeatMs && c.nowMs-seen.atMs >= c.configs[leader].MemberDeadAfterMs-400
	})
	c.cut[transferee] = true // a transfer to an unreachable voter is pending when the leader proposes
	require.NoError(t, c.nodes[leader].meta.TransferLeadership(transferee))
	for range 7 { // past MemberDeadAfterMs: the leader proposes, raft drops it
		c.tick(100)
	}
	m, _ := c.nodes[leader].meta.State().Member(silent)
	require.True(t, m.Alive, "the mark proposed during the transfer was dropped")

	delete(c.cut, transferee) // the transfer times out; the leader keeps leading
	for range 100 {
		c.tick(100)
	}
	require.True(t, c.nodes[leader].meta.IsLeader(), "the leader kept leading")
	m, _ = c.nodes[leader].meta.State().Member(silent)
	require.False(t, m.Alive, "the silent member is marked dead: the dropped mark was proposed again")
}
