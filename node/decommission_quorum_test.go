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
	c.cutUntilMarkedDead(leader, down...)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool {
		return c.holding(leader, "t", leaving) == 0 && len(c.nodes[leader].meta.State().Moves()) == 0
	})
	c.tick(3_000) // a few planning rounds past the drain
	c.requireMetastoreCommits(leaving)
}
