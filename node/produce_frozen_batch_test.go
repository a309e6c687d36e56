package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAKeyedRecordStaysOnItsPartitionWhenAnotherOfTheOwnersPartitionsIsFrozen:
// a batch carries a keyed record for partition a (frozen for a move at its
// owner) and a keyed record for partition b (same owner, not frozen). The
// record for a may move (its partition is frozen), but the record for b
// must stay on b: its live owner refused only partition a (api.md: "A
// keyed record goes elsewhere only off a frozen partition").
func TestAKeyedRecordStaysOnItsPartitionWhenAnotherOfTheOwnersPartitionsIsFrozen(t *testing.T) {
	c, a, b, at := frozenNeighbour(t)
	keyA, keyB := keyFor(t, 6, a), keyFor(t, 6, b)
	id := c.send(at, msg.Produce{Topic: "t", Batch: true, Records: []msg.ProduceRecord{
		{Partition: msg.PartitionNone, Key: keyA, Payload: []byte("to-a")},
		{Partition: msg.PartitionNone, Key: keyB, Payload: []byte("to-b")},
	}})
	reply := c.await(id, 100, 30)
	require.NoError(t, reply.Err)
	placements := reply.Result.(msg.ProduceResult).Records
	require.NotEqual(t, a, placements[0].Partition, "the frozen partition takes no record")
	require.Equal(t, b, placements[1].Partition,
		"key %q belongs to partition %d, whose live owner did not freeze it; it landed in %d", keyB, b, placements[1].Partition)
}

// TestAnotherClientsFrozenRecordDoesNotMoveMyKey: two clients'
// produces reach one node in one round and travel to the same owner in one
// forward: client 1 pins a record to partition a (frozen at the owner),
// client 2 sends a keyed record for partition b (same owner, not frozen).
// Client 1 gets its 503; client 2's record must land on b.
func TestAnotherClientsFrozenRecordDoesNotMoveMyKey(t *testing.T) {
	c, a, b, at := frozenNeighbour(t)
	keyB := keyFor(t, 6, b)
	pinned := c.send(at, producePinned("t", a, "pinned-to-a"))
	keyed := c.send(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: keyB, Payload: []byte("to-b")}}})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.await(pinned, 100, 30).Err))
	reply := c.await(keyed, 100, 30)
	require.NoError(t, reply.Err)
	require.Equal(t, b, reply.Result.(msg.ProduceResult).Records[0].Partition,
		"key %q belongs to partition %d, which nobody froze; another client's record for frozen partition %d moved it", keyB, b, a)
}

// frozenNeighbour: a three-node cluster with topic t of 6 partitions; a
// node owning partitions a and b holds a frozen for a move (its
// destination never copies) and b not; at is another live node.
func frozenNeighbour(t *testing.T) (c *clusterHarness, a, b int, at string) {
	c = newClusterHarness(t, 3)
	a, b, at = frozenNeighbourIn(t, c)
	return c, a, b, at
}

// frozenNeighbourIn is frozenNeighbour in a harness of the caller's.
func frozenNeighbourIn(t *testing.T, c *clusterHarness) (a, b int, at string) {
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	// a source owning two partitions, a target that is neither it nor the
	// leader, and a receiving node that is neither source nor target.
	var source string
	for _, id := range c.ids {
		var mine []int
		for i, o := range owners {
			if o == id {
				mine = append(mine, i)
			}
		}
		if len(mine) >= 2 {
			source, a, b = id, mine[0], mine[1]
			break
		}
	}
	require.NotEmpty(t, source)
	target := c.otherThan(source, leader)
	if target == "" || target == source {
		target = c.otherThan(source)
	}
	at = c.otherThan(source, target)
	require.NoError(t, c.do(source, producePinned("t", a, "x")).Err)
	require.NoError(t, c.do(source, producePinned("t", b, "y")).Err)

	c.drop = func(env msg.Envelope) bool { // the destination never copies: the source stays frozen
		forward, ok := env.Message.(msg.ForwardRequest)
		if !ok || env.From != target {
			return false
		}
		switch forward.Request.(type) {
		case msg.MoveStatus, msg.MoveRead, msg.MoveFreeze, msg.MoveSweepCheck:
			return true
		}
		return false
	}
	c.startMove(leader, "t", a, target)
	started, _ := c.nodes[source].meta.State().Assignment("t", a)
	c.nodes[source].moveFreeze(asForwarded(c.nodes[source], target), freezeOf(c.nodes[source], "t", a, target, started.MoveStartedAtMs))
	c.settle()
	require.True(t, c.nodes[source].partitions[partitionKey{"t", a}].freeze.Frozen())
	require.False(t, c.nodes[source].frozen(&topic{info: msg.TopicInfo{Name: "t", Partitions: 6}}, b))

	return a, b, at
}

// TestSustainedProduceToAFrozenPartitionSparesItsOwnersOtherPartitions:
// while partition a is frozen at its owner for a move, other clients keep
// producing to a through node `at`, a record for it in every round. A
// record pinned to b (same owner, not frozen) travels in a forward of its
// own, apart from a's records, which the owner refuses whole at their
// first: it is written, where sharing their forward it was refused round
// after round until its re-placements ran out (produce review).
func TestSustainedProduceToAFrozenPartitionSparesItsOwnersOtherPartitions(t *testing.T) {
	c, a, b, at := frozenNeighbour(t)
	victim := c.send(at, producePinned("t", b, "victim"))
	for i := 0; i < 40; i++ {
		if _, ok := c.replies[victim]; ok {
			break
		}
		for _, id := range c.ids { // one round of the cluster; at gets a record for a before each of its Readys
			n := c.nodes[id]
			if id == at {
				c.send(at, producePinned("t", a, fmt.Sprintf("noise-%d", i)))
			}
			if n.HasReady() {
				c.handle(n)
			}
		}
	}
	reply, ok := c.replies[victim]
	require.True(t, ok, "the record for b is answered")
	require.NoError(t, reply.Err, "a record pinned to live, unfrozen partition %d is written while %d is frozen", b, a)
	require.Equal(t, b, reply.Result.(msg.ProduceResult).Records[0].Partition)
}

// TestAPinnedRecordAtTheOwnerOfAFrozenPartitionIsToldOfTheFreeze: a record
// pinned to a partition frozen for a move, sent to its owner, gets the
// freeze's 503 ("frozen for a move"), not one that names the live owner
// as down (grow/drain audit: 448 such answers sent operators looking for a
// dead node during a decommission).
func TestAPinnedRecordAtTheOwnerOfAFrozenPartitionIsToldOfTheFreeze(t *testing.T) {
	c, a, _, _ := frozenNeighbour(t)
	source := ""
	for _, id := range c.ids {
		if c.nodes[id].frozen(&topic{info: msg.TopicInfo{Name: "t", Partitions: 6}}, a) {
			source = id
		}
	}
	require.NotEmpty(t, source)
	reply := c.await(c.send(source, producePinned("t", a, "pinned")), 100, 30)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))
	require.Contains(t, reply.Err.Error(), fmt.Sprintf("partition %d of t is frozen for a move; retry", a))
}

// TestACopyHeldBackByItsChildsMoveIsRoutine: a fan-out copy refused by the
// freeze of a child partition that moves is the routine event
// fanout-waits-for-move, not the warning fanout-stalled, which counted an
// operational error at every planned move of a child under load
// (grow/drain audit).
func TestACopyHeldBackByItsChildsMoveIsRoutine(t *testing.T) {
	c := newClusterHarness(t, 3)
	recorders := observeEach(c, func() *detailRecorder { return &detailRecorder{} })
	a, b, at := frozenNeighbourIn(t, c)
	require.True(t, c.nodes[at].childMoving("t", a), "the copies of parent partition %d go to the moving partition", a)
	require.False(t, c.nodes[at].childMoving("t", b), "those of %d to one that does not move: a refusal there is no move's", b)
	leader, ok := c.leader()
	require.True(t, ok)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "par", Partitions: 6}).Err)
	require.NoError(t, c.do(leader, msg.AttachChild{Parent: "par", Child: "t"}).Err)
	c.settle()
	require.NoError(t, c.do(at, producePinned("par", a, "copied later")).Err)
	for range 30 {
		c.tick(100)
	}
	var events []string
	for _, id := range c.ids {
		events = append(events, recorders[id].events...)
	}
	require.Positive(t, eventCount(events, "fanout-waits-for-move"), "%v", events)
	require.Zero(t, eventCount(events, "fanout-stalled"), "%v", events)
}
