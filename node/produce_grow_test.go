package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAProduceToAGrownPartitionWaitsWhileItsOwnerCatchesUp:
// a topic grows from 3 to 6 partitions; the leader has applied the growth,
// the owner of a new partition has not yet (its raft messages are late). A
// keyed or pinned produce for that new partition, taken by the leader, is
// valid. The owner once answered the forwarded part 503 at once (retry);
// it now holds it until it applies the growth (topicwait.go), so the
// produce is written where it was placed, and never answered a 400
// "invalid partition" that tells the client its request is wrong.
func TestAProduceToAGrownPartitionWaitsWhileItsOwnerCatchesUp(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	lagging := c.otherThan(leader)
	c.drop = func(env msg.Envelope) bool {
		_, raft := env.Message.(msg.RaftMessage)
		return raft && env.To == lagging
	}
	grow := 6
	require.NoError(t, c.do(leader, msg.AlterTopic{Name: "t", Partitions: &grow}).Err)
	owners := c.owners(leader, "t")
	require.Len(t, owners, 6)
	partition := -1
	for i := 3; i < 6; i++ {
		if owners[i] == lagging {
			partition = i
		}
	}
	require.GreaterOrEqual(t, partition, 3, "sanity: a new partition is placed on the lagging node: %v", owners)
	record, _ := c.nodes[lagging].meta.State().Topic("t")
	require.Len(t, record.Assignments, 3, "the owner has not applied the growth")
	keyed := c.send(leader, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: keyFor(t, 6, partition), Payload: []byte("k")}}})
	pinned := c.send(leader, producePinned("t", partition, "x"))
	c.settle()
	for _, id := range []msg.RequestID{keyed, pinned} {
		reply, answered := c.replies[id]
		require.False(t, answered, "the owner holds the part until it applies the growth; answered %v", reply.Err)
	}
	require.Equal(t, 1, c.nodes[lagging].Stats().HeldRequests, "both parts travel to the owner as one forward, held there")
	c.drop = nil
	for _, id := range []msg.RequestID{keyed, pinned} {
		reply := c.await(id, 100, 5)
		require.NoError(t, reply.Err, "written once the owner applied the growth")
		require.Equal(t, partition, reply.Result.(msg.ProduceResult).Records[0].Partition)
	}
}
