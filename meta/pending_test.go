package meta

import (
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
)

// Property: TopicCountPending is true exactly while the replica's log
// holds, past the applied index, a create of the topic or an alter that
// sets its partition count; an alter of another setting, or of another
// topic, is no such change, and nothing is pending once applied.
func TestTopicCountPendingSeesUnappliedCreatesAndGrowths(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 21)
	c := newTestCluster(t, 3, 21, true, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	c.requireApplied(c.propose(leader, createTopic("orders", leader)), nil)
	m := c.meta(leader)
	require.False(t, m.TopicCountPending("orders"), "everything applied")

	c.isolate([]string{leader}, otherThan(c.ids, leader))
	retention, partitions := int64(60_000), 2
	creation := c.creation(leader, "orders")
	for _, cmd := range []Command{
		AlterTopic{Name: "orders", ExpectedCreation: creation, RetentionMs: &retention},
		createTopic("other", leader),
	} {
		_, err := m.Propose(cmd)
		require.NoError(t, err)
		c.stabilize()
	}
	require.Greater(t, lastIndex(t, m), m.AppliedIndex(), "sanity: the proposals are in the log, not applied")
	require.False(t, m.TopicCountPending("orders"), "an alter of the retention changes no count")
	require.True(t, m.TopicCountPending("other"), "an unapplied create of the topic")
	require.False(t, m.TopicCountPending("third"), "no entry names the topic")

	_, err := m.Propose(AlterTopic{Name: "orders", ExpectedCreation: creation, Partitions: &partitions, NewOwners: []string{leader}})
	require.NoError(t, err)
	c.stabilize()
	require.True(t, m.TopicCountPending("orders"), "an unapplied growth of the topic")

	c.heal()
	c.tick(3)
	require.Equal(t, lastIndex(t, m), m.AppliedIndex(), "sanity: the log is applied")
	require.False(t, m.TopicCountPending("orders"), "applied: nothing pending")
	require.False(t, m.TopicCountPending("other"), "applied: nothing pending")
}

func lastIndex(t *testing.T, m *Meta) uint64 {
	last, err := m.storage.LastIndex()
	require.NoError(t, err)
	return last
}
