package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// A delete and a re-create of a topic that reach a node together (two
// clients) apply in one Ready, within one millisecond of its clock: the
// re-created topic starts empty all the same. A topic's identity is its
// incarnation in the metastore, not its creator's clock reading (topic
// review).
func TestADeleteAndRecreateInOneRoundStartsEmpty(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	h.produce("orders", 0, "old-record")

	h.nextID++
	deleteID := h.nextID
	h.node.Handle(deleteID, msg.DeleteTopic{Name: "orders"})
	h.nextID++
	createID := h.nextID
	h.node.Handle(createID, msg.CreateTopic{Name: "orders", Partitions: 3})
	h.flush()
	require.NoError(t, h.replies[deleteID].Err)
	require.NoError(t, h.replies[createID].Err)

	m, ok := h.consume("orders")
	require.False(t, ok, "the re-created topic serves the deleted topic's record %q", m.Payload)
}

// The same with a smaller topic and dead letters: the old partition 5
// must not outlive its topic, or its lapsed lease asks the new
// three-partition topic for the owner of partition 5 (a broken
// invariant: the node's loop panicked).
func TestASmallerTopicCreatedInTheSameRoundForgetsTheOldPartitions(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dlq")
	withDeadLetters := func(partitions int) func(*msg.CreateTopic) {
		return func(r *msg.CreateTopic) {
			r.Partitions, r.MaxDeliveries, r.DeadLetterTopic, r.VisibilityTimeoutMs = partitions, 1, "dlq", 1000
		}
	}
	h.createTopic("orders", withDeadLetters(10))
	h.produce("orders", 5, "old-record")
	result := h.ok(msg.Consume{Topic: "orders", Partition: 5}).(msg.ConsumeResult)
	require.Len(t, result.Messages, 1)

	h.nextID++
	h.node.Handle(h.nextID, msg.DeleteTopic{Name: "orders"})
	h.nextID++
	create := msg.CreateTopic{Name: "orders"}
	withDeadLetters(3)(&create)
	h.node.Handle(h.nextID, create)
	h.flush()

	require.NotPanics(t, func() { h.tick(2000) }, "the lease of the old partition 5 lapses")
	_, ok := h.consume("dlq")
	require.False(t, ok, "the deleted topic's record is not dead-lettered either")
}

// A deleted topic's directory whose removal failed (an I/O error, no
// crash) is removed again at the next ticks; until then no partition of
// a topic created again under the name opens, so none serves the deleted
// topic's files (topic review).
func TestAFailedTopicRemovalIsRetriedBeforeANamesakeOpens(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	h.produce("orders", 0, "old-record")
	h.fs.FailNext(storage.FaultSyncDir, storage.ErrIO, 1) // the removal is not made durable
	h.ok(msg.DeleteTopic{Name: "orders"})
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	refused := h.fail(producePinned("orders", 0, "new-record"), msg.CodeUnavailable)
	require.Contains(t, refused.Message, "still being removed")

	h.tick(1_000)
	h.produce("orders", 0, "new-record")
	m, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, "new-record", string(m.Payload), "the namesake starts empty")
}

// Property: a consume or replay another node routed here for another
// creation of the topic (the identity it carries differs from this
// node's topic: one of the two has not applied a delete and re-create
// yet) is refused retryably, 503, never served: a restarted owner whose
// replica still held the deleted creation served its record to the new
// creation's reader (nightly seed 7516619). A client's request carries
// no identity and is served as before, and so is one routed for this
// node's own creation.
func TestAConsumeOrReplayRoutedForAnotherCreationIsRefused(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	h.produce("orders", 0, "a")
	topic, ok := h.node.lookupTopic("orders")
	require.True(t, ok)
	own := topic.identity
	other := own
	other.Incarnation++

	refused := h.do(msg.Replay{Topic: "orders", Partition: 0, TopicIncarnation: other.Incarnation, TopicCreatedAtMs: other.CreatedAtMs})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "%v", refused.Err)
	refused = h.do(msg.Consume{Topic: "orders", Partition: 0, TopicIncarnation: other.Incarnation, TopicCreatedAtMs: other.CreatedAtMs})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "%v", refused.Err)
	require.Contains(t, refused.Err.Error(), "deleted and created again")

	replayed := h.ok(msg.Replay{Topic: "orders", Partition: 0, TopicIncarnation: own.Incarnation, TopicCreatedAtMs: own.CreatedAtMs}).(msg.ReplayResult)
	require.Equal(t, "a", string(replayed.Message.Payload), "routed for this creation: served")
	consumed := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult)
	require.Len(t, consumed.Messages, 1, "a client's consume carries no identity: served")
}
