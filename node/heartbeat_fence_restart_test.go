package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestARestartedNodeCutOffBeforeItsFirstBeatIsFenced: node/doc.go
// promises that a node writes only while its own heartbeat was applied
// within half of MemberDeadAfterMs, so that a node cut off from the
// metastore stops writing before another may take its partitions over.
// A node whose clock ran a minute ahead restarts with the right time and
// is cut off at once, before any heartbeat of its new incarnation
// applies: writable() compares its clock with the earlier start's stamp
// (a minute in its future), so it goes on accepting writes long after the
// leader declared it dead.
func TestARestartedNodeCutOffBeforeItsFirstBeatIsFenced(t *testing.T) {
	const aheadMs = 60_000
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	skewed := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), skewed)
	require.GreaterOrEqual(t, index, 0, "the skewed node owns a partition")

	for range 6 { // first life: its clock a minute ahead
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
