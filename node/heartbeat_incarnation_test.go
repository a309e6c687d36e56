package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/msg"
)

// clockAheadMs is how far ahead a node's clock runs in its first life in
// the tests below.
const clockAheadMs = 60_000

// aheadFirstLife is a three-node cluster whose node skewed, owner of
// partition index of topic "t", ran its first life with its clock
// clockAheadMs ahead of the others', long enough for a heartbeat stamped
// ahead to apply.
func aheadFirstLife(t *testing.T) (c *clusterHarness, leader, skewed string, index int) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	skewed = c.otherThan(leader)
	index = slices.Index(c.owners(leader, "t"), skewed)
	require.GreaterOrEqual(t, index, 0, "the skewed node owns a partition")
	for range 6 {
		c.nowMs += 500
		for _, id := range c.ids {
			skew := int64(0)
			if id == skewed {
				skew = clockAheadMs
			}
			c.nodes[id].Tick(c.nowMs + skew)
		}
		c.settle()
	}
	member, _ := c.nodes[leader].meta.State().Member(skewed)
	require.Greater(t, member.LastHeartbeatMs, c.nowMs+clockAheadMs/2, "sanity: a heartbeat stamped ahead was applied")
	return c, leader, skewed, index
}

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
	c, leader, skewed, index := aheadFirstLife(t)

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

// TestARestartedNodeCutOffBeforeItsFirstBeatIsFenced: a node writes only
// while its own heartbeat was applied within half of MemberDeadAfterMs,
// so that a node cut off from the metastore stops writing before another
// may take its partitions over. A node whose clock ran a minute ahead
// restarts with the right time and is cut off at once, before any
// heartbeat of its new start applies: writable() compared its clock with
// the earlier start's stamp (a minute in its future), so it went on
// accepting writes long after the leader declared it dead.
func TestARestartedNodeCutOffBeforeItsFirstBeatIsFenced(t *testing.T) {
	c, leader, skewed, index := aheadFirstLife(t)
	c.crash(skewed) // second life: the right time, but cut off at once
	c.cut[skewed] = true
	for range 10 {
		c.tick(500) // 5 s: past MemberDeadAfterMs (3 s)
	}
	m, _ := c.nodes[leader].meta.State().Member(skewed)
	require.False(t, m.Alive, "sanity: the leader declared the silent node dead")
	refused := c.do(skewed, producePinned("t", index, "split-brain"))
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err),
		"a node cut off since its restart, no heartbeat of this start ever applied, accepted a write 5 s later (err %v)", refused.Err)
}
