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
	require.Zero(t, after.HeldRequests)
}

// TestACutOffLeaderKeepsOneReadOutstanding: a leader no quorum confirms
// asks one read at a time, however many requests for unknown topics it
// holds (asking one per Ready, it reached meta.ReadRequestsMax and
// answered the next request 503 at once); every request still waits, to
// be 503 at its deadline.
func TestACutOffLeaderKeepsOneReadOutstanding(t *testing.T) {
	d := newDeposedUnaware(t)
	c := d.c
	old := c.nodes[d.old]
	var ids []msg.RequestID
	for range meta.ReadRequestsMax + 4 {
		ids = append(ids, c.send(d.old, produceTo("fresh")))
		c.settle()
		require.Equal(t, 1, old.Stats().MetaReadsOutstanding, "one read at a time")
	}
	s := old.Stats()
	require.Zero(t, s.HeldRefusedFull)
	require.Len(t, ids, s.HeldRequests, "every request waits")
	require.Zero(t, s.MetaReadsConfirmed, "no quorum confirmed any")
	for _, id := range ids {
		require.NotContains(t, c.replies, id, "nothing is answered before its deadline")
	}
}

// TestAHealthyLeadersReadsAreNotRefusedWhileItsFollowersAnswerLate: a
// leader that takes more Readys, each holding a request for a topic
// nobody created, than meta.ReadRequestsMax before its followers answer
// (a follower busy in a sync round) refuses none of them: it asks one
// read, then one for all that came meanwhile, and answers each 404 once
// the quorum confirms (diff review: the seventeenth was 503 at once).
func TestAHealthyLeadersReadsAreNotRefusedWhileItsFollowersAnswerLate(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	n := c.nodes[leader]
	before := n.Stats().MetaReadsConfirmed
	var ids []msg.RequestID
	for range meta.ReadRequestsMax + 1 {
		ids = append(ids, c.send(leader, produceTo("nobody")))
		c.handle(n) // the followers' answers are not in yet
		require.Equal(t, 1, n.Stats().MetaReadsOutstanding, "one read at a time")
	}
	for _, id := range ids {
		require.NotContains(t, c.replies, id, "no request is refused while its read is out")
	}
	c.settle()
	for _, id := range ids {
		require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.replies[id].Err), "%v", c.replies[id].Err)
	}
	s := n.Stats()
	require.Zero(t, s.HeldRefusedFull)
	require.Equal(t, before+2, s.MetaReadsConfirmed, "the first request's read, then one for the rest")
}
