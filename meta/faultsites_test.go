package meta

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// Property: a snapshot that fault site SiteMetaSnapshotLost loses on the
// way is sent again once counted lost, as a snapshot the network lost.
func TestASnapshotLostAtItsFaultSiteIsSentAgain(t *testing.T) {
	const ackTicks = 15
	c, leader, joiner := compactedClusterWithJoiner(t, 23, ackTicks)
	chaos.Force(chaos.SiteMetaSnapshotLost)
	defer chaos.Reset()
	c.requireApplied(c.proposeConfChange(leader, ConfChange{Kind: AddVoter, Peer: joiner}), nil)
	c.tick(ackTicks - 2)
	require.Equal(t, 1, chaos.Fired()[chaos.SiteMetaSnapshotLost], "the leader's snapshot to the joiner was lost")
	require.Zero(t, c.snapshotsDelivered)
	require.Zero(t, c.meta(joiner.ID).AppliedIndex())
	chaos.Reset()
	c.tick(4)
	require.Equal(t, 1, c.snapshotsDelivered, "the leader sent the snapshot again, once")
	c.requireConverged()
}

// Property: followers that campaign early under fault site SiteMetaCampaign
// do not depose a leader whose followers hear from it (pre-vote and
// check-quorum refuse them), and the group keeps committing.
func TestAnEarlyCampaignDoesNotDeposeAHealthyLeader(t *testing.T) {
	c := newTestCluster(t, 3, 31, true, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	term := c.meta(leader).raw.Status().Term
	chaos.Force(chaos.SiteMetaCampaign)
	defer chaos.Reset()
	c.tick(2 * campaignSiteEveryElections * c.meta(leader).config.ElectionTicks)
	require.Equal(t, 4, chaos.Fired()[chaos.SiteMetaCampaign], "both followers campaigned twice")
	current, ok := c.leader()
	require.True(t, ok)
	require.Equal(t, leader, current)
	require.Equal(t, term, c.meta(leader).raw.Status().Term, "no election took place")
	chaos.Reset()
	c.requireApplied(c.propose(leader, createTopic("after", "n1")), nil)
	c.requireConverged()
}
