package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// withDeadLetters sets a create's dead-letter setting.
func withDeadLetters(maxDeliveries int, deadLetterTopic string) func(*msg.CreateTopic) {
	return func(r *msg.CreateTopic) { r.MaxDeliveries, r.DeadLetterTopic = maxDeliveries, deadLetterTopic }
}

// nackAll consumes one message of topicName and nacks it.
func (h *harness) consumeAndNack(topicName string) msg.Message {
	h.t.Helper()
	message, ok := h.consume(topicName)
	require.True(h.t, ok, "a message of %s to nack", topicName)
	require.NoError(h.t, h.ackHandle(topicName, message.ReceiptHandle, msg.AckNack))
	return message
}

// TestExhaustedRecordMovesToTheDeadLetterTopic: a record nacked at its
// max_deliveries-th delivery is not delivered again; its copy goes to the
// dead-letter topic with its key, payload and origin, and the source
// acknowledges it only at the Advance of the round that made the copy
// durable.
func TestExhaustedRecordMovesToTheDeadLetterTopic(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(2, "dead"))
	h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k"), Partition: 1, Payload: []byte("poison")}}})
	require.Equal(t, uint32(1), h.consumeAndNack("orders").DeliveryCount)
	message, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, uint32(2), message.DeliveryCount)

	h.node.Handle(900, msg.Ack{Topic: "orders", Handles: []string{message.ReceiptHandle}, Action: msg.AckNack})
	rd := h.node.Ready() // the nack's reply and the copy's sync round
	require.Len(t, rd.Syncs, 1, "the copy rides the dead-letter partition's sync round")
	require.Equal(t, "dead", topicOfDir(rd.Syncs[0].Dir))
	source := h.node.partitions[partitionKey{"orders", 1}]
	require.Zero(t, source.leases.Committed(), "not acknowledged before its copy is durable")
	require.NoError(t, rd.Syncs[0].Run())
	require.Zero(t, source.leases.Committed(), "nor before the round's Advance")
	h.node.Advance(rd)
	require.Equal(t, uint64(1), source.leases.Committed(), "acknowledged once the copy is durable")
	h.flush()

	_, again := h.consume("orders")
	require.False(t, again, "an exhausted record is not delivered again")
	copied, ok := h.consume("dead")
	require.True(t, ok, "the copy is in the dead-letter topic")
	require.Equal(t, "poison", string(copied.Payload))
	require.Equal(t, "k", string(copied.Key))
	require.Equal(t, &msg.DeadLetterOrigin{Topic: "orders", Partition: 1, Offset: 0, DeliveryCount: 2}, copied.DeadLetter)
	replayed := h.ok(msg.Replay{Topic: "dead", Partition: copied.Partition, Offset: copied.Offset}).(msg.ReplayResult)
	require.Equal(t, copied.DeadLetter, replayed.Message.DeadLetter, "replay shows the origin too")
}

// TestExpiredReservationExhaustsToo: a lease that lapses at the maximum
// exhausts its record like a nack; the next tick sends it.
func TestExpiredReservationExhaustsToo(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(1, "dead"), func(r *msg.CreateTopic) { r.VisibilityTimeoutMs = 1_000 })
	h.produce("orders", 0, "slow")
	_, ok := h.consume("orders")
	require.True(t, ok)
	h.tick(1_000)
	_, again := h.consume("orders")
	require.False(t, again, "not redelivered after its only delivery lapsed")
	copied, ok := h.consume("dead")
	require.True(t, ok)
	require.Equal(t, uint32(1), copied.DeadLetter.DeliveryCount)
	require.Equal(t, uint64(1), h.stats("orders", 0).Committed)
}

// TestUnwritableDeadLetterTopicStallsOnlyItsRecords: when the dead-letter
// topic's owner does not answer, the exhausted record stays in its source
// and is reservable again, and the source's produce is untouched; once
// the owner answers, the next exhaustion moves it.
func TestUnwritableDeadLetterTopicStallsOnlyItsRecords(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("dead", 3)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "orders", Partitions: 3, MaxDeliveries: 1, DeadLetterTopic: "dead"}).Err)
	c.tick(100)
	owners := c.owners(leader, "orders")
	at := owners[0]
	deadOwners := c.owners(leader, "dead")
	silent := c.otherThan(at)
	partition := slices.Index(deadOwners, silent)
	require.GreaterOrEqual(t, partition, 0)
	key := keyFor(t, 3, partition)

	require.NoError(t, c.do(at, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: key, Partition: 0, Payload: []byte("poison")}}}).Err)
	c.cut[silent] = true
	nack := func() {
		reply := c.do(at, msg.Consume{Topic: "orders", Partition: 0})
		require.NoError(t, reply.Err)
		message := reply.Result.(msg.ConsumeResult).Messages[0]
		require.NoError(t, c.do(at, msg.Ack{Topic: "orders", Handles: []string{message.ReceiptHandle}, Action: msg.AckNack}).Err)
	}
	nack()
	for range 30 {
		c.tick(100)
	}
	require.Zero(t, c.nodes[at].partitions[partitionKey{"orders", 0}].leases.Committed(), "the write failed: not acknowledged")
	require.NoError(t, c.do(at, producePinned("orders", 0, "still flowing")).Err, "the source's produce is not stalled")

	delete(c.cut, silent)
	c.tick(3_000) // the silent owner is reachable again
	nack()
	for range 10 {
		c.tick(100)
	}
	require.Equal(t, uint64(1), c.nodes[at].partitions[partitionKey{"orders", 0}].leases.Committed(), "moved once the dead-letter topic took it")
}

// oneOpenLogWithDeadLetters is a node with room for one open log, a
// topic "orders" whose records are dead-lettered into "dead" after one
// delivery: a dead letter's append closes its source's log.
func oneOpenLogWithDeadLetters(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.cfg.OpenLogsMax = 1
	h.restart()
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(1, "dead"))
	return h
}

// TestDeadLettersReopenTheirSourceLog: with room for one open log, a
// dead letter's append to the dead-letter topic closes the source's log;
// the next exhausted record reopens it (seed 1 of the single-node world
// with dead letters once read a closed log and panicked).
func TestDeadLettersReopenTheirSourceLog(t *testing.T) {
	h := oneOpenLogWithDeadLetters(t)
	h.ok(msg.Produce{Topic: "orders", Batch: true, Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("a")}, {Partition: 0, Payload: []byte("b")}}})
	h.consumeAndNack("orders")
	h.flush()
	require.Equal(t, uint64(1), h.stats("orders", 0).Committed, "the first record moved to the dead-letter topic")
	h.tick(h.cfg.CommitPersistIntervalMs) // the source's committed offset is persisted: its log may close
	h.consumeAndNack("orders")
	h.tick(h.cfg.CommitPersistIntervalMs)
	require.Equal(t, uint64(2), h.stats("orders", 0).Committed, "both records moved to the dead-letter topic")
}

// TestDeadLettersTravelInBatches: the records a batch nack exhausts in
// one partition go to the dead-letter topic as one write (one relay in
// flight), each with its own origin; with room for one relay, a second
// partition's dead letters wait for it, then follow.
func TestDeadLettersTravelInBatches(t *testing.T) {
	h := newHarness(t)
	h.cfg.RelaysInFlightMax = 1
	h.restart()
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(1, "dead"))
	var records []msg.ProduceRecord
	for i := range 4 {
		records = append(records, msg.ProduceRecord{Partition: i / 3, Payload: []byte{'a' + byte(i)}})
	}
	h.ok(msg.Produce{Topic: "orders", Batch: true, Records: records})
	var handles []string
	for partition := range 2 {
		result := h.ok(msg.Consume{Topic: "orders", Partition: partition, Max: 3}).(msg.ConsumeResult)
		for _, message := range result.Messages {
			handles = append(handles, message.ReceiptHandle)
		}
	}
	require.Len(t, handles, 4)
	h.node.Handle(900, msg.Ack{Topic: "orders", Handles: handles, Action: msg.AckNack, Batch: true})
	require.Equal(t, 1, h.node.RelaysInFlight(), "partition 0's three dead letters in one relay; partition 1's waits")
	require.Len(t, h.node.deadLettersDue, 1, "partition 1 stays due")
	h.flush()
	h.tick(1)
	require.Equal(t, uint64(3), h.stats("orders", 0).Committed)
	require.Equal(t, uint64(1), h.stats("orders", 1).Committed, "sent once the relay was free")
	require.Empty(t, h.node.deadLettersDue, "nothing due: a tick looks at no partition")
	offsets := map[uint64]bool{}
	for range 4 {
		copied, ok := h.consume("dead")
		require.True(t, ok)
		offsets[uint64(copied.DeadLetter.Partition)*10+copied.DeadLetter.Offset] = true
	}
	require.Equal(t, map[uint64]bool{0: true, 1: true, 2: true, 10: true}, offsets, "each copy names its own origin")
}

// A dead letter whose copy becomes durable while its source partition's
// log is closed (the relay's own append evicted it at OpenLogsMax) moves
// the log's committed offset as well as the lease table's frontier: it was
// persisted by nothing, not even a graceful Close, and after the restart
// the record, acknowledged in its topic long before, was delivered again
// (review finding).
func TestADeadLetterSettledWhileItsLogIsClosedStaysAcknowledged(t *testing.T) {
	h := oneOpenLogWithDeadLetters(t)
	h.produce("orders", 0, "poison")
	h.consumeAndNack("orders") // its only delivery ends unacked: it goes to "dead"
	h.flush()
	for range 10 { // a second of commit-persist ticks
		h.tick(h.cfg.CommitPersistIntervalMs)
	}
	source := h.node.partitions[partitionKey{"orders", 0}]
	require.Equal(t, uint64(1), source.leases.Committed(), "acknowledged in its topic once the copy was durable")
	require.False(t, source.frontierUnsaved)
	h.crash() // the commit-persist ticks made it durable
	again, delivered := h.consume("orders")
	require.False(t, delivered, "the dead-lettered record came back after a crash: offset %d, delivery %d",
		again.Offset, again.DeliveryCount)
	h.restart()
	again, delivered = h.consume("orders")
	require.False(t, delivered, "the dead-lettered record came back after a graceful restart: offset %d, delivery %d",
		again.Offset, again.DeliveryCount)
}

// TestADeadLetterTopicsChildKeepsTheOrigin: a fan-out child of a
// dead-letter topic receives each dead letter with its origin, as the
// dead-letter topic serves it: a second group reading dead letters
// through a child can tell where each came from.
func TestADeadLetterTopicsChildKeepsTheOrigin(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dead")
	h.createTopic("dead-audit")
	h.ok(msg.AttachChild{Parent: "dead", Child: "dead-audit"})
	h.createTopic("orders", withDeadLetters(1, "dead"))
	h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k"), Partition: 1, Payload: []byte("poison")}}})
	h.consumeAndNack("orders")
	h.flush()
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(h.cfg.Fanout.LingerMs)
	copied, ok := h.consume("dead-audit")
	require.True(t, ok, "the dead letter reached the child")
	require.Equal(t, "poison", string(copied.Payload))
	require.Equal(t, &msg.DeadLetterOrigin{Topic: "orders", Partition: 1, Offset: 0, DeliveryCount: 1}, copied.DeadLetter)
}

// TestExhaustedRecordsPastTheRelayBytesWaitForRoom: docs/api.md#dead-letters
// says a record whose reservation ends unacked at max_deliveries is not
// delivered again, and that past the relay bound exhausted records wait;
// Config.RelayBytesInFlightMax says a relay past it is refused and retried
// later. Nine records of about 1 MiB exhausted at once make three
// batches: the third finds the first two holding the relay bytes. It
// (With the default bound of 64 MiB it takes seventeen such batches.) It
// used to be put back in the queue (DeadLetterFailed, as if the
// dead-letter topic had refused it), so the poison record was delivered
// again, past its max_deliveries of 1, instead of following the others a
// round later.
func TestExhaustedRecordsPastTheRelayBytesWaitForRoom(t *testing.T) {
	h := newHarness(t)
	h.cfg.RelayBytesInFlightMax = msg.ProduceBatchBytesMax // its least: two full batches of dead letters
	h.restart()
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(1, "dead"))
	const records = 9
	payload := make([]byte, msg.MessageBytesMax-16)
	for range records {
		h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: payload}}})
	}
	var handles []string
	for len(handles) < records {
		result := h.ok(msg.Consume{Topic: "orders", Partition: 0, Max: records}).(msg.ConsumeResult)
		require.NotEmpty(t, result.Messages)
		for _, message := range result.Messages {
			handles = append(handles, message.ReceiptHandle)
		}
	}
	reply := h.do(msg.Ack{Topic: "orders", Handles: handles, Action: msg.AckNack, Batch: true})
	require.NoError(t, reply.Err)
	for _, item := range reply.Result.(msg.AckResult).Results {
		require.NoError(t, item.Err)
	}

	again, delivered := h.consume("orders")
	require.False(t, delivered, "an exhausted record was delivered again: offset %d, delivery %d (max_deliveries 1)",
		again.Offset, again.DeliveryCount)
	for range 5 {
		h.tick(1)
	}
	require.Equal(t, uint64(records), h.stats("orders", 0).Committed, "every exhausted record moved to the dead-letter topic")
	copied := map[uint64]uint32{}
	for range records {
		message, ok := h.consume("dead")
		require.True(t, ok)
		copied[message.DeadLetter.Offset] = message.DeadLetter.DeliveryCount
	}
	for offset := range uint64(records) {
		require.Equal(t, uint32(1), copied[offset], "the copy of offset %d, after its one delivery", offset)
	}
}

// TestADeadLetterSettledWhileFrozenIsNotDeliveredAgain: a dead letter
// whose copy becomes durable while its source partition is frozen for a
// move cannot be acknowledged (the commit belongs to the move), but the
// record still ran out of deliveries: docs/api.md#dead-letters says it is
// not delivered again. It used to go back in the queue as if the
// dead-letter topic had refused it, so once the move ended without a flip
// (aborted) the poison record was delivered a second time, past its
// max_deliveries of 1, though its copy was durable. It waits exhausted
// instead, as the partition's other exhausted records wait out a freeze,
// and is written again after it (a copy may be written twice).
func TestADeadLetterSettledWhileFrozenIsNotDeliveredAgain(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dead")
	h.createTopic("orders", withDeadLetters(1, "dead"))
	h.produce("orders", 0, "poison")
	message, ok := h.consume("orders")
	require.True(t, ok)

	h.nextID++
	h.node.Handle(h.nextID, msg.Ack{Topic: "orders", Handles: []string{message.ReceiptHandle}, Action: msg.AckNack})
	source := h.node.partitions[partitionKey{"orders", 0}]
	require.True(t, h.node.beginFreeze(source, "elsewhere", 1), "a move freezes the source while its dead letter is written")
	h.flush() // the copy is durable: it settles on a frozen partition
	require.NoError(t, h.replies[h.nextID].Err)
	require.Zero(t, source.leases.Committed(), "not acknowledged while frozen")
	h.node.endFreeze(source) // the move ended without a flip

	again, delivered := h.consume("orders")
	require.False(t, delivered, "the exhausted record was delivered again: offset %d, delivery %d (max_deliveries 1)",
		again.Offset, again.DeliveryCount)
	h.tick(1)
	require.Equal(t, uint64(1), h.stats("orders", 0).Committed, "written to the dead-letter topic once unfrozen")
}

// TestDeadLettersAlongAFanoutLinkConflict: a child whose dead-letter
// topic is its own parent would get each dead letter back, with every
// sibling, without end; a parent whose dead-letter topic is its child
// would deliver each dead letter there twice. Both are 409 on create,
// alter and attach, and change nothing.
func TestDeadLettersAlongAFanoutLinkConflict(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	e := h.fail(msg.CreateTopic{Name: "audit", Parent: "orders", MaxDeliveries: 2, DeadLetterTopic: "orders"}, msg.CodeConflict)
	require.Contains(t, e.Message, `topic "audit" cannot send its dead letters to its fan-out parent "orders"`)
	h.fail(msg.GetTopic{Name: "audit", Partition: msg.PartitionNone}, msg.CodeNotFound)

	h.createTopic("audit", func(r *msg.CreateTopic) { r.Parent = "orders" })
	h.fail(msg.AlterTopic{Name: "audit", MaxDeliveries: new(2), DeadLetterTopic: new("orders")}, msg.CodeConflict)
	e = h.fail(msg.AlterTopic{Name: "orders", MaxDeliveries: new(2), DeadLetterTopic: new("audit")}, msg.CodeConflict)
	require.Contains(t, e.Message, `topic "orders" cannot send its dead letters to its fan-out child "audit"`)
	require.Empty(t, h.ok(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}).(msg.TopicDetail).DeadLetterTopic)

	h.createTopic("billing", withDeadLetters(2, "orders"))
	h.fail(msg.AttachChild{Parent: "orders", Child: "billing"}, msg.CodeConflict)
	h.createTopic("dead")
	h.ok(msg.AlterTopic{Name: "orders", MaxDeliveries: new(2), DeadLetterTopic: new("dead")})
	h.fail(msg.AttachChild{Parent: "orders", Child: "dead"}, msg.CodeConflict)
	h.ok(msg.AlterTopic{Name: "audit", MaxDeliveries: new(2), DeadLetterTopic: new("dead")}) // another chain: allowed
	require.Equal(t, []string{"audit"}, h.ok(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}).(msg.TopicDetail).Children,
		"the refused attaches linked nothing")
}
