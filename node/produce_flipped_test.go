package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAKeyedRecordRefusedByAnOwnerThatMovedItsPartitionAwayStaysOnIt: a
// node behind on the metastore forwards a keyed record to the partition's
// old owner, which has flipped it to a new owner meanwhile and answers
// "not the owner". By the time the answer arrives, the forwarding node has
// applied the flip: the partition is neither frozen nor refused by its
// owner (the new one, live, never saw the record), so the record must go
// to that owner, on its key's partition, not move on to another partition.
func TestAKeyedRecordRefusedByAnOwnerThatMovedItsPartitionAwayStaysOnIt(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	at := c.otherThan(leader)
	owners := c.owners(leader, "t")
	index := slices.IndexFunc(owners, func(owner string) bool { return owner != at })
	source := owners[index]
	target := c.otherThan(source, at)

	behind := true
	var held []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		if _, raft := env.Message.(msg.RaftMessage); raft && env.To == at && behind {
			return true
		}
		if _, reply := env.Message.(msg.ForwardReply); reply && env.From == source && env.To == at {
			held = append(held, env)
			return true
		}
		return false
	}
	c.startMove(leader, "t", index, target)
	c.tickUntil(100, 100, func() bool { return c.owners(source, "t")[index] == target })
	require.Equal(t, source, c.owners(at, "t")[index], "sanity: the forwarding node has not applied the move")

	key := keyFor(t, 3, index)
	id := c.send(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: key, Payload: []byte("k")}}})
	c.settle()
	require.Len(t, held, 1, "sanity: the old owner answered")

	behind = false
	c.tickUntil(10, 50, func() bool { return c.owners(at, "t")[index] == target })
	a, _ := c.nodes[at].meta.State().Assignment("t", index)
	require.Empty(t, a.Target, "sanity: the move is over in the forwarding node's view")
	c.drop = nil
	c.deliver(held)
	reply := c.await(id, 10, 300)
	require.NoError(t, reply.Err)
	require.Equal(t, index, reply.Result.(msg.ProduceResult).Records[0].Partition, "the key's records stay on its partition")
}
