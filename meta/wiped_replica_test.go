package meta

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// Property: a replica started again on an empty store under its old raft
// id (its disk was lost, or its data directory replaced) gives no vote
// that could elect a leader lacking committed entries. Entries committed
// by the leader and this replica while the third was down are on two of
// three replicas; once this one forgot them and the leader is gone, the
// third, whose log lacks them, must not win an election with this
// replica's vote: it would lead without them, and the old leader, back,
// would find its committed entries contradicted (raft ends the process).
func TestAWipedReplicaDoesNotElectALeaderLackingCommittedEntries(t *testing.T) {
	c := newTestCluster(t, 3, 7, true, func(config *Config) { config.DataID = "dir-of-" + config.NodeID })
	leader := c.waitLeader()
	for _, id := range c.ids {
		c.requireApplied(c.propose(leader, MemberHeartbeat{ID: id, HTTPAddr: id + ":7942", ClusterAddr: id + ":7943", NowMs: 10, DataID: "dir-of-" + id}), nil)
	}
	followers := otherThan(c.ids, leader)
	wiped, lagging := followers[0], followers[1]
	c.crash(lagging)
	c.requireApplied(c.propose(leader, createTopic("committed-while-lagging", leader)), nil)

	c.crash(wiped)
	require.NoError(t, os.Remove(c.nodes[wiped].path))
	c.nodes[wiped].lastApplied = 0 // the harness checks that a replica never applies an index twice: this one starts over
	c.nodes[wiped].config.DataID = "another-dir-of-" + wiped
	c.start(wiped) // a fresh store: the replica bootstraps again under its raft id
	c.start(lagging)
	c.crash(leader)
	c.tick(20 * c.nodes[lagging].config.ElectionTicks)
	if elected, ok := c.leader(); ok {
		_, found := c.meta(elected).State().Topic("committed-while-lagging")
		require.True(t, found, "%s leads without an entry the old leader and %s committed", elected, wiped)
	}

	c.start(leader)
	require.NotPanics(t, func() { c.waitLeader(leader, lagging) })
	c.tick(5 * c.nodes[leader].config.ElectionTicks)
	for _, id := range c.ids {
		_, found := c.meta(id).State().Topic("committed-while-lagging")
		require.True(t, found, "%s lost a committed entry", id)
	}
	c.requireSameEntries()
}
