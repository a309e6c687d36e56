package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// produceTo is a keyless produce of one record to topicName.
func produceTo(topicName string) msg.Produce {
	return msg.Produce{Topic: topicName, Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("x")}}}
}

// TestTheLeadersReadsShowInItsStats: a produce to a topic nobody created,
// sent to the metastore leader, holds one read outstanding from the
// leader's next Ready until a quorum confirms it; then it is 404, the
// read counted confirmed and none outstanding. These are the numbers
// narad_meta_reads_outstanding and narad_meta_reads_confirmed_total show.
func TestTheLeadersReadsShowInItsStats(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	n := c.nodes[leader]
	before := n.Stats()
	require.Zero(t, before.MetaReadsOutstanding)
	require.Equal(t, meta.ReadRequestsMax, before.MetaReadsMax)

	nobody := c.send(leader, produceTo("nobody"))
	c.handle(n) // its Ready asks for the read; the followers have not answered
	held := n.Stats()
	require.Equal(t, 1, held.MetaReadsOutstanding, "the read the 404 waits for")
	require.Equal(t, before.MetaReadsConfirmed, held.MetaReadsConfirmed)
	require.Equal(t, 1, held.HeldRequests)

	c.settle()
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.replies[nobody].Err), "%v", c.replies[nobody].Err)
	after := n.Stats()
	require.Zero(t, after.MetaReadsOutstanding)
	require.Equal(t, before.MetaReadsConfirmed+1, after.MetaReadsConfirmed)
	require.Zero(t, after.HeldRefusedReadsFull)
	require.Zero(t, after.HeldRequests)
}

// TestTheReadsRefusedAtTheirBoundShowInStats: a leader no quorum
// confirms keeps at most meta.ReadRequestsMax reads outstanding, one per
// Ready that held a new request; the request held past them is answered
// 503 at once, counted in HeldRefusedReadsFull
// (narad_held_requests_refused_total{reason="reads_full"}), while the
// others still wait.
func TestTheReadsRefusedAtTheirBoundShowInStats(t *testing.T) {
	d := newDeposedUnaware(t)
	c := d.c
	old := c.nodes[d.old]
	for i := range meta.ReadRequestsMax {
		c.send(d.old, produceTo("fresh"))
		c.settle()
		require.Equal(t, i+1, old.Stats().MetaReadsOutstanding, "one read per Ready that held a new request")
	}
	refused := c.send(d.old, produceTo("fresh"))
	c.settle()
	reply, answered := c.replies[refused]
	require.True(t, answered, "past the bound the request is answered at once")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "%v", reply.Err)
	require.Contains(t, reply.Err.Error(), "reads of its own state outstanding")
	s := old.Stats()
	require.Equal(t, uint64(1), s.HeldRefusedReadsFull)
	require.Equal(t, meta.ReadRequestsMax, s.MetaReadsOutstanding)
	require.Equal(t, meta.ReadRequestsMax, s.HeldRequests, "the covered requests still wait")
	require.Zero(t, s.MetaReadsConfirmed, "no quorum confirmed any")
}
