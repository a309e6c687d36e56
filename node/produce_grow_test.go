package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAProduceToAGrownPartitionIsRetryableWhileItsOwnerCatchesUp:
// a topic grows from 3 to 6 partitions; the leader has applied the growth,
// the owner of a new partition has not yet (its raft messages are late). A
// keyed or pinned produce for that new partition, taken by the leader, is valid: the
// answer must be a 202 or a retryable 503, not a 400 "invalid partition"
// that tells the client its request is wrong.
func TestAProduceToAGrownPartitionIsRetryableWhileItsOwnerCatchesUp(t *testing.T) {
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
	if partition < 0 {
		t.Skipf("no new partition placed on the lagging node: %v", owners)
	}
	record, _ := c.nodes[lagging].meta.State().Topic("t")
	require.Len(t, record.Assignments, 3, "the owner has not applied the growth")
	keyed := c.do(leader, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: keyFor(t, 6, partition), Payload: []byte("k")}}})
	require.NotEqual(t, msg.CodeInvalid, msg.CodeOf(keyed.Err), "a valid keyed produce answered %v", keyed.Err)
	pinned := c.do(leader, producePinned("t", partition, "x"))
	require.NotEqual(t, msg.CodeInvalid, msg.CodeOf(pinned.Err), "a valid pinned produce answered %v", pinned.Err)
}
