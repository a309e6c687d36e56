package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// Property: a decommissioned node left running changes nothing: once its
// replica applied its removal it refuses every change asked of it at once
// (503 naming its decommission, and its readiness says so), and the other
// nodes refuse its proposals and its forwarded changes, so a change asked
// of it (with credentials revoked since, say) never applies. Before, such
// a node answered 503 "timed out" while its proposals applied
// cluster-wide. Its clients' writes still go through it, to the owners,
// for the dead-after period (a drain refuses no produce), and are refused
// after it.
func TestADecommissionedNodeLeftRunningChangesNothing(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 4)
	leaving := c.otherThan(leader)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool { return c.nodes[leaving].meta.State().Retired(leaving) })

	reply := c.do(leaving, msg.CreateTopic{Name: "from-retired", Partitions: 3})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))
	require.Contains(t, reply.Err.Error(), "decommissioned")
	require.ErrorContains(t, c.nodes[leaving].Serving(), "decommissioned")

	n := c.nodes[leaving]
	forwarded := msg.Envelope{From: leaving, To: leader, Message: msg.ForwardRequest{ID: 1, Request: msg.DeleteTopic{Name: "t"}, LocalOnly: true}}
	require.ErrorContains(t, c.nodes[leader].Step(forwarded), "decommission is complete")
	_, err := n.meta.Propose(meta.CreateTopic{Name: "proposed-by-retired", Owners: []string{leader, leader, leader}, RetentionMs: 3_600_000,
		VisibilityTimeoutMs: 30_000, MaxInFlightPerPartition: 1_000, MaxAckedAheadPerPartition: 1_000, CreatedAtMs: c.nowMs, Numbered: true})
	require.NoError(t, err, "its replica still knows a leader: the proposal travels, and is refused there")
	c.tick(1_000)
	for _, id := range c.except(leaving) {
		_, found := c.nodes[id].meta.State().Topic("proposed-by-retired")
		require.False(t, found, "%s applied a retired node's proposal", id)
		_, found = c.nodes[id].meta.State().Topic("t")
		require.True(t, found, "%s served a retired node's forwarded delete", id)
	}

	produced := c.do(leaving, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("late")}}})
	require.NoError(t, produced.Err, "within its grace a retired node forwards its clients' writes")
	c.tick(c.configs[leaving].MemberDeadAfterMs)
	refused := c.do(leaving, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("later")}}})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err))
	require.Contains(t, refused.Err.Error(), "decommissioned")
}

// Property: a decommissioned node whose replica never applied its own
// removal (it was cut off when the leader removed it) learns of it from
// the peers that refuse its messages, and refuses its clients from then
// on, with a readiness that says so, after the grace of its reads and
// writes. Started again, it has no second grace, though its replica still
// misses its removal (the owners may have forgotten it, and could not
// answer its forwards).
func TestADecommissionedNodeThatMissedItsRemovalIsToldByItsPeers(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 4)
	leaving := c.otherThan(leader)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool { return c.holding(leader, "t", leaving) == 0 })
	c.cut[leaving] = true
	c.tickUntil(100, 300, func() bool { return c.nodes[leader].meta.State().Retired(leaving) })
	require.False(t, c.nodes[leaving].meta.State().Retired(leaving), "cut off, its replica did not apply its removal")

	c.cut[leaving] = false
	c.tick(c.configs[leaving].MemberHeartbeatIntervalMs + 1_000) // it heartbeats; its peers answer
	require.ErrorContains(t, c.nodes[leaving].Serving(), "decommissioned")
	reply := c.do(leaving, msg.CreateTopic{Name: "late", Partitions: 3})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))
	require.Contains(t, reply.Err.Error(), "says")
	require.NoError(t, c.do(leaving, msg.ListTopics{}).Err, "reads are served during its grace")
	c.tick(c.configs[leaving].MemberDeadAfterMs)
	after := c.do(leaving, msg.ListTopics{})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(after.Err), "and refused after it: %+v", after.Err)

	// Started again, its replica still does not show its removal, and a
	// peer tells it again: it gets no second grace.
	c.crash(leaving)
	c.tick(c.configs[leaving].MemberHeartbeatIntervalMs + 1_000)
	require.ErrorContains(t, c.nodes[leaving].Serving(), "decommissioned")
	require.False(t, c.nodes[leaving].meta.State().Retired(leaving), "its replica still missed its removal")
	produced := c.do(leaving, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("x")}}})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(produced.Err), "its writes refused at once: %+v", produced.Err)
	require.Contains(t, produced.Err.Error(), "decommissioned")
}

// Property: a decommissioned node started again on its data, whose
// replica shows its decommission complete, gets no second grace: it
// refuses its clients' writes at once, naming the decommission, rather
// than forwarding them to owners that may have forgotten it (their
// replies unroutable, each forward timed out into a copy of the record at
// the next owner: three copies and a 503 after 6 s, observability audit).
func TestADecommissionedNodeStartedAgainHasNoSecondGrace(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 4)
	leaving := c.otherThan(leader)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool { return c.nodes[leaving].meta.State().Retired(leaving) })
	c.tick(1)
	produced := c.do(leaving, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("in grace")}}})
	require.NoError(t, produced.Err, "within its grace a retired node forwards its clients' writes")

	c.crash(leaving)
	c.tick(1)
	refused := c.do(leaving, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("after restart")}}})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err))
	require.Contains(t, refused.Err.Error(), "decommissioned")
	require.ErrorContains(t, c.nodes[leaving].Serving(), "decommissioned")
}
