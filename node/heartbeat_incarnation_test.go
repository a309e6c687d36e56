package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestARestartedNodeWhoseClockWasAheadIsFencedAndDetected: a node ran
// with its clock a minute ahead (started before NTP set the clock, say:
// host's clock keeps the offset it booted with) and restarts with the
// right time, a minute behind the heartbeats it stamped before. It
// heartbeats every interval like any member, so the leader must not
// declare it dead; once it is cut off it must stop writing within half
// of MemberDeadAfterMs (the write fence), and the leader must declare it
// dead after MemberDeadAfterMs. The metastore kept the largest heartbeat
// a member ever sent, and the leader and the fence compared against it,
// so none of the three held until the node's clock caught up with the
// minute; heartbeats now carry the node's incarnation, and a new start's
// stamps replace the earlier start's.
func TestARestartedNodeWhoseClockWasAheadIsFencedAndDetected(t *testing.T) {
	const aheadMs = 60_000
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	skewed := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), skewed)
	require.GreaterOrEqual(t, index, 0, "the skewed node owns a partition")

	// First life: the node's clock runs a minute ahead of the others'.
	for range 6 {
		c.nowMs += 500
		for _, id := range c.ids {
			skew := int64(0)
			if id == skewed {
				skew = aheadMs
			}
			c.nodes[id].Tick(c.nowMs + skew)
		}
		c.settle()
	}
	member, _ := c.nodes[leader].meta.State().Member(skewed)
	require.Greater(t, member.LastHeartbeatMs, c.nowMs+aheadMs/2, "sanity: a heartbeat stamped ahead was applied")

	// Second life: the right time, and heartbeats every interval.
	c.crash(skewed)
	for range 20 { // 10 s: three MemberDeadAfterMs
		c.tick(500)
	}
	m, _ := c.nodes[leader].meta.State().Member(skewed)
	require.True(t, m.Alive, "sanity: alive at the end")
	_, proposedDead := c.nodes[leader].cluster.deadProposed[skewed]
	assert.False(t, proposedDead, "the leader declared dead a node that heartbeats every interval (its next heartbeat revived it)")
	require.NoError(t, c.do(skewed, producePinned("t", index, "before")).Err, "sanity: it writes while in contact")

	// Cut off from the metastore: fenced, then declared dead.
	c.cut[skewed] = true
	for range 4 {
		c.tick(500) // 2 s, past half of MemberDeadAfterMs
	}
	refused := c.do(skewed, producePinned("t", index, "after"))
	assert.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "the cut node still accepts writes 2 s after its last applied heartbeat")
	for range 16 {
		c.tick(500) // 8 s more, well past MemberDeadAfterMs (3 s)
	}
	m, _ = c.nodes[leader].meta.State().Member(skewed)
	assert.False(t, m.Alive, "the leader never declares the silent node dead")
}
