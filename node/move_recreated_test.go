package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// TestASessionOfADeletedTopicDoesNotCompleteIntoItsRecreation: a move's
// destination sits in flip (its copy installed, its flip not applied)
// while the topic is deleted and created again under the same name, the
// new partition placed on the destination; the destination, cut off
// meanwhile, applies the delete and the create in one batch. The old
// move's session must end as aborted: the new partition is not its move's
// completion. Taken for a completion, the session hands the old
// partition's queue state (committed offset 5) to the new, empty
// partition, and the first five records produced to the new topic are
// never delivered to a consumer.
func TestASessionOfADeletedTopicDoesNotCompleteIntoItsRecreation(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	// target owns a partition of "t" and is not the leader; the partition
	// moves away and back, so that a re-created "t" (placed as the first
	// one was) puts that partition on target again.
	partition := slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner != leader })
	target := c.owners(leader, "t")[partition]
	source := c.otherThan(target)
	c.startMove(leader, "t", partition, source)
	c.tickUntil(100, 100, func() bool {
		return c.owners(leader, "t")[partition] == source && c.owners(source, "t")[partition] == source
	})
	c.tick(100)
	for i := range 10 {
		require.NoError(t, c.do(source, producePinned("t", partition, fmt.Sprintf("old-%d", i))).Err)
	}
	got := c.do(source, msg.Consume{Topic: "t", Partition: partition, Max: 5})
	require.NoError(t, got.Err)
	var handles []string
	for _, m := range got.Result.(msg.ConsumeResult).Messages {
		handles = append(handles, m.ReceiptHandle)
	}
	require.Len(t, handles, 5)
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: handles, Action: msg.AckCommit, Batch: true}).Err)

	c.drop = func(env msg.Envelope) bool { // the target's flip never reaches the leader
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.From == target && raft.Message.GetType() == raftpb.MsgProp
	}
	c.startMove(leader, "t", partition, target)
	require.Equal(t, "flip", c.nodes[target].MoveSessions()[0].Phase, "installed; the flip is held back")

	c.cut[target] = true // the destination misses the delete and the create
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	owners := c.owners(leader, "t")
	require.Equal(t, target, owners[partition], "the new partition is placed on the old destination")
	c.cut[target] = false
	c.drop = nil
	c.tickUntil(100, 50, func() bool {
		record, ok := c.nodes[target].meta.State().Topic("t")
		return ok && record.Partitions == 3 && c.owners(target, "t")[partition] == target
	})
	c.tick(100)

	for i := range 7 {
		require.NoError(t, c.do(target, producePinned("t", partition, fmt.Sprintf("new-%d", i))).Err)
	}
	reply := c.do(target, msg.Consume{Topic: "t", Partition: partition})
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.NotEmpty(t, messages)
	require.Equal(t, uint64(0), messages[0].Offset, "the new topic's first record is delivered first")
	require.Equal(t, "new-0", string(messages[0].Payload))
}
