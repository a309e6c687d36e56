package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A drained member of a three-voter cluster stays a voter, the documented
// normal case: the leader says so once with the routine event
// voter-removal-deferred, not voter-removal-refused, which counted an
// operational error at every such decommission (grow/drain audit).
func TestADrainedVoterOfThreeIsDeferredNotRefused(t *testing.T) {
	c := newClusterHarness(t, 3)
	recorders := observeEach(c, func() *detailRecorder { return &detailRecorder{} })
	leader := c.electWithTopic("t", 6)
	leaving := c.otherThan(leader)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool {
		return c.holding(leader, "t", leaving) == 0 && len(c.nodes[leader].meta.State().Moves()) == 0
	})
	for range 30 { // a few planning rounds past the drain
		c.tick(100)
	}
	_, voter := c.nodes[leader].meta.State().PeerByNodeID(leaving)
	require.True(t, voter, "never below three voters")
	var events []string
	for _, id := range c.ids {
		events = append(events, recorders[id].events...)
	}
	require.Equal(t, 0, eventCount(events, "voter-removal-refused"), "%v", events)
	require.Equal(t, 1, eventCount(events, "voter-removal-deferred"), "said once: %v", events)
}

func eventCount(events []string, kind string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, kind+": ") {
			n++
		}
	}
	return n
}
