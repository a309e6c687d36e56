package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A parent partition whose log is closed (evicted) and whose loaded
// cursors had caught up is skipped by driveParentPartition without
// reopening its log (fanout_copy.go): nothing there waits. That holds for
// the cursors it has, not for a link it has no cursor for yet. A child
// attached meanwhile gets no cursor until something else reopens the log,
// so a record committed after the attach but before the owner applied it
// (the case epochStart exists for, docs/architecture.md#fan-out) never
// reaches the child while the partition takes no further record.
func TestAChildAttachedWhileItsParentsLogIsClosedGetsItsRecords(t *testing.T) {
	c := newClusterHarness(t, 3)
	for _, id := range c.ids { // few open logs, so that the parent's can be evicted
		cfg := c.configs[id]
		cfg.OpenLogsMax = 3
		c.configs[id] = cfg
		require.NoError(t, c.nodes[id].Abandon())
		c.start(id)
	}
	leader := c.electWithTopic("orders", 3)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "audit", Parent: "orders"}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "late", Partitions: 3}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "other", Partitions: 9}).Err)
	c.tick(100)
	owners := c.owners(leader, "orders")
	p := 0
	for owners[p] == leader {
		p++
	}
	owner := owners[p] // the parent partition's owner, a follower
	c.tick(200)        // audit's cursors loaded, their files written

	// The attach commits at the leader and the third node; the owner
	// hears of it late (its raft messages are held back).
	c.drop = func(env msg.Envelope) bool {
		_, raft := env.Message.(msg.RaftMessage)
		return raft && env.To == owner
	}
	attach := c.send(leader, msg.AttachChild{Parent: "orders", Child: "late"})
	c.settle()
	require.NoError(t, c.replies[attach].Err)
	require.NoError(t, c.do(owner, producePinned("orders", p, "x")).Err) // committed after the attach
	c.tick(50)                                                           // copied to audit
	c.tick(150)                                                          // audit's cursor file written
	c.tick(10)                                                           // caught up: nothing to wake for
	for i, o := range c.owners(owner, "other") {
		if o == owner { // opening three other logs evicts the parent's
			require.NoError(t, c.do(owner, msg.Replay{Topic: "other", Partition: i}).Err)
		}
	}
	require.False(t, c.nodes[owner].store.IsOpen(PartitionDir("orders", p)), "the parent's log was evicted")
	c.drop = nil
	for range 600 { // a minute; the attach applies at the owner, the partition takes nothing more
		c.tick(100)
	}
	_, linked := c.nodes[owner].meta.State().Topic("late")
	require.True(t, linked)
	audit := c.do(c.owners(leader, "audit")[p], msg.Replay{Topic: "audit", Partition: p})
	require.NoError(t, audit.Err)
	require.NotNil(t, audit.Result.(msg.ReplayResult).Message, "the older child got x")
	late := c.do(c.owners(leader, "late")[p], msg.Replay{Topic: "late", Partition: p})
	require.NoError(t, late.Err)
	require.NotNil(t, late.Result.(msg.ReplayResult).Message, "x, committed in the parent after the attach, never reached the new child")
}

// The same skip leaves the lag of a child attached while the parent's
// logs are closed unknown on their owner, which answered: lag_complete
// false (a lower bound) for as long as the partitions take no record.
func TestTheLagOfAChildAttachedWhileItsParentsLogsAreClosedIsKnown(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.restart()
	h.createTopic("orders", func(r *msg.CreateTopic) { r.RetentionMs = 24 * 3_600_000 })
	h.createTopic("audit")
	h.createTopic("late")
	h.createTopic("other")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	h.tick(1)
	h.ok(msg.Replay{Topic: "other", Partition: 0}) // two other logs open: the parent's are evicted
	h.ok(msg.Replay{Topic: "other", Partition: 1})
	h.ok(msg.AttachChild{Parent: "orders", Child: "late"})
	for range 5 {
		h.tick(1_000)
	}
	require.Equal(t, msg.ChildLag{Name: "late", LagComplete: true}, h.lagOf("orders", "late"),
		"this node owns every parent partition and answered: nothing waits")
}
