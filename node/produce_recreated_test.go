package node

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// dropRaftOf makes the harness drop every Raft message to or from id: its
// replica stops applying while it still forwards data requests.
func (c *clusterHarness) dropRaftOf(id string) {
	c.drop = func(env msg.Envelope) bool {
		_, isRaft := env.Message.(msg.RaftMessage)
		return isRaft && (env.To == id || env.From == id)
	}
}

// TestAForwardedProduceMeetsTheSchemaOfATopicCreatedAgain: a topic without
// a schema is deleted and created again under its name with one. A node
// whose replica has not applied that yet takes a client's produce (no
// schema in its view) and forwards it to the partition's owner, which
// has: the part names the topic it was placed for and the schema it was
// validated against, and the owner refuses it, as it refuses the same
// record produced to it directly (topic review, medium).
func TestAForwardedProduceMeetsTheSchemaOfATopicCreatedAgain(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("orders", 3)
	follower, partition, owner := "", -1, ""
	for _, f := range c.except(leader) {
		for p, o := range c.owners(leader, "orders") {
			if o != f && partition < 0 {
				follower, partition, owner = f, p, o
			}
		}
	}
	require.GreaterOrEqual(t, partition, 0, "a follower with a partition owned elsewhere")

	c.dropRaftOf(follower)
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "orders"}).Err)
	schema := json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "orders", Partitions: 3, Schema: schema}).Err)
	require.Equal(t, owner, c.owners(leader, "orders")[partition], "the namesake is placed as the topic was")
	require.Error(t, c.do(owner, producePinned("orders", partition, "not json at all")).Err, "the owner refuses it from a client")

	reply := c.do(follower, producePinned("orders", partition, "not json at all"))
	require.Error(t, reply.Err, "a record the new schema refuses is not written into the topic (placed at %+v)", reply.Result)
	require.Contains(t, reply.Err.Error(), "retry")
	c.drop = nil
	c.settle()
	replay := c.do(owner, msg.Replay{Topic: "orders", Partition: partition, Offset: 0})
	require.NoError(t, replay.Err)
	require.Nil(t, replay.Result.(msg.ReplayResult).Message, "nothing was written")
}

// TestAProducePartPlacedForADeletedTopicIsNotPlacedAgainInItsNamesake: a
// keyed record of t (6 partitions) is forwarded to the owner of its
// partition p >= 3, which does not answer; meanwhile t is deleted and
// created again with 3 partitions. When the forward times out, the
// record is not placed again in the namesake (its placement named
// partition p of the deleted topic: the node's loop panicked asking the
// new topic for its owner); the client gets a retryable refusal
// (produce review, medium).
func TestAProducePartPlacedForADeletedTopicIsNotPlacedAgainInItsNamesake(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	p := -1
	for i := 3; i < 6 && p < 0; i++ {
		if owners[i] != leader {
			p = i
		}
	}
	require.GreaterOrEqual(t, p, 3, "a partition >= 3 owned by a follower")
	owner := owners[p]
	c.drop = func(env msg.Envelope) bool { // the owner never sees the produce part
		forward, ok := env.Message.(msg.ForwardRequest)
		if !ok || env.To != owner {
			return false
		}
		_, produce := forward.Request.(msg.Produce)
		return produce
	}
	id := c.send(leader, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: keyFor(t, 6, p), Payload: []byte("x")}}})
	c.settle()
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	require.NotPanics(t, func() { c.await(id, 100, 30) }, "the forward's timeout finds the topic created again")
	reply := c.replies[id]
	require.Error(t, reply.Err)
	require.Contains(t, reply.Err.Error(), "deleted and created again")
}

// TestAForwardThatFailedBeforeItLeftIsNotSent: a produce forward whose
// owner is found unreachable before the Ready carrying it is taken fails
// its parts (placed again elsewhere when they may move; here a pinned
// record, answered 503); the forward itself must not leave too, or the
// owner writes records that were placed again a second time (produce
// review).
func TestAForwardThatFailedBeforeItLeftIsNotSent(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	at := c.except(leader)[0]
	owners := c.owners(at, "t")
	away := slices.IndexFunc(owners, func(owner string) bool { return owner != at })
	owner := owners[away]
	n := c.nodes[at]
	id := c.send(at, producePinned("t", away, "once"))
	require.Len(t, n.produceForwards, 1, "the part waits for the Ready")

	n.PeerUnreachable(owner)
	rd := n.Ready()
	require.Empty(t, rd.ProduceForwards, "the forward that failed before it left is not sent")
	c.finish(n, rd)
	require.Error(t, c.await(id, 100, 30).Err, "a pinned record whose owner is unreachable is refused")
	c.settle()
	replay := c.do(owner, msg.Replay{Topic: "t", Partition: away, Offset: 0})
	require.NoError(t, replay.Err)
	require.Nil(t, replay.Result.(msg.ReplayResult).Message, "the owner never got the record")
}

// TestAFullForwardThatFailedBeforeItLeftIsNotSent: as above, with two
// forwards to the owner in the Ready, the first full and replaced by the
// second as the one that takes parts: neither leaves (diff review).
func TestAFullForwardThatFailedBeforeItLeftIsNotSent(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	at := c.except(leader)[0]
	owners := c.owners(at, "t")
	away := slices.IndexFunc(owners, func(owner string) bool { return owner != at })
	n := c.nodes[at]
	batch := func(tag string) msg.Produce {
		records := make([]msg.ProduceRecord, msg.ProduceBatchRecordsMax/2+1)
		for i := range records {
			records[i] = msg.ProduceRecord{Partition: away, Payload: []byte(fmt.Sprintf("%s-%d", tag, i))}
		}
		return msg.Produce{Topic: "t", Records: records, Batch: true}
	}
	first, second := c.send(at, batch("a")), c.send(at, batch("b"))
	require.Len(t, n.produceForwards, 2, "the second batch did not fit the first forward")
	n.PeerUnreachable(owners[away])
	rd := n.Ready()
	require.Empty(t, rd.ProduceForwards, "no forward that failed before it left is sent")
	c.finish(n, rd)
	require.Error(t, c.await(first, 100, 30).Err)
	require.Error(t, c.await(second, 100, 30).Err)
}
