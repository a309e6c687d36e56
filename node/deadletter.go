package node

import (
	"errors"
	"fmt"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

// checkDeadLetters checks a topic's dead-letter setting before it is
// proposed (docs/api.md#dead-letters). Whether the dead-letter topic
// exists is left to the metastore (ErrDeadLetterTopicNotFound, a 404 when
// the entry applies): this replica may lag behind a create just answered
// on another node (seed 200 of the three-node moves world with dead
// letters was refused so).
func (n *Node) checkDeadLetters(info msg.TopicInfo) error {
	switch {
	case info.MaxDeliveries < 0 || info.MaxDeliveries > msg.MaxDeliveriesMax:
		return msg.Invalid("max_deliveries must be between 0 (off) and %d, got %d", msg.MaxDeliveriesMax, info.MaxDeliveries)
	case info.MaxDeliveries > 0 && info.DeadLetterTopic == "":
		return msg.Invalid("max_deliveries needs a dead_letter_topic")
	case info.DeadLetterTopic == "":
		return nil
	case info.DeadLetterTopic == info.Name:
		return msg.Invalid("topic %q cannot be its own dead_letter_topic", info.Name)
	}
	if err := validTopicName(info.DeadLetterTopic); err != nil {
		return msg.Invalid("invalid dead_letter_topic: %v", err)
	}
	return nil // a delay child, the parent or a child as the dead-letter topic is refused by the metastore (409)
}

// storageOrigin and messageOrigin translate a dead letter's origin
// between the request vocabulary and the log's record envelope.
func storageOrigin(o *msg.DeadLetterOrigin) *storage.Origin {
	if o == nil {
		return nil
	}
	return &storage.Origin{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, DeliveryCount: o.DeliveryCount}
}

func messageOrigin(o *storage.Origin) *msg.DeadLetterOrigin {
	if o == nil {
		return nil
	}
	return &msg.DeadLetterOrigin{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, DeliveryCount: o.DeliveryCount}
}

// Bounds of one dead-letter batch: exhausted records of one source
// partition relayed together into its dead-letter topic, as one produce.
// A batch takes at least one record, and one record fits any batch
// (msg.MessageBytesMax + msg.KeyBytesMax < deadLetterBatchBytesMax).
const (
	deadLetterBatchRecordsMax = 100
	deadLetterBatchBytesMax   = 4 << 20
)

// The batch bounds must fit a produce: this fails to compile otherwise.
const (
	_ = uint(msg.ProduceBatchRecordsMax - deadLetterBatchRecordsMax)
	_ = uint(msg.ProduceBatchBytesMax - deadLetterBatchBytesMax)
	_ = uint(deadLetterBatchBytesMax - msg.MessageBytesMax - msg.KeyBytesMax)
)

// deadLetterBatch is one batch of dead letters in flight.
type deadLetterBatch struct {
	key   partitionKey
	table *lease.Table
	topic string
	// origins are where each record of the batch comes from, in the
	// order of the produce's records (and of its placements).
	origins []msg.DeadLetterOrigin
}

// watchExhausted makes the partition's lease table report the records it
// exhausts into the set of partitions whose dead letters are due, and
// puts the partition there if it holds some already (a restored table).
func (n *Node) watchExhausted(p *partition) {
	key := p.key
	p.leases.OnExhausted(func() { n.deadLettersDue[key] = struct{}{} })
	if p.leases.ExhaustedPending() > 0 {
		n.deadLettersDue[key] = struct{}{}
	}
}

// sendDeadLetters starts the dead letters of the partitions that have
// exhausted records, while relays have room (docs/api.md#dead-letters).
// It looks only at the partitions in the due set: a tick with nothing due
// costs nothing.
func (n *Node) sendDeadLetters() {
	if len(n.deadLettersDue) == 0 {
		return // the common case on every tick
	}
	keys := make([]partitionKey, 0, len(n.deadLettersDue))
	for key := range n.deadLettersDue { //determinism:ok collected then sorted
		keys = append(keys, key)
	}
	sortKeys(keys)
	for _, key := range keys {
		due, relaysFull := n.sendPartitionDeadLetters(key)
		if !due {
			delete(n.deadLettersDue, key)
		}
		if relaysFull {
			return // the relays refused a batch for its bytes: the partitions after it stay due, unread, for a later tick
		}
	}
}

// sendPartitionDeadLetters relays the partition's exhausted records in
// batches to its topic's dead-letter topic, and reports whether some
// still wait (the partition stays due). A frozen partition waits: its
// commit belongs to the move, and the new owner exhausts the records
// again. A partition that left this node, or whose topic has no
// dead-letter topic, is no longer due. relaysFull reports that the
// relays refused a batch for its bytes: no other partition tries now.
func (n *Node) sendPartitionDeadLetters(key partitionKey) (due, relaysFull bool) {
	p, ok := n.partitions[key]
	t, known := n.lookupTopic(key.topic)
	if !ok || !known || p.leases == nil || p.leases.ExhaustedPending() == 0 || t.info.DeadLetterTopic == "" || !n.ownedHere(t, key.index) {
		return false, false
	}
	if !n.deadLettersAllowed(t) {
		return true, false // they wait, exhausted, for the owner's grant or another setting
	}
	for !p.freeze.Frozen() && p.leases.ExhaustedPending() > 0 {
		if n.relays.inFlight >= n.cfg.RelaysInFlightMax {
			chaos.Reached(chaos.MarkNodeDeadLettersWaitForRelays)
			return true, false
		}
		read, relayed := n.sendDeadLetterBatch(t, p)
		if !read || !relayed {
			return true, !relayed
		}
	}
	return p.leases.ExhaustedPending() > 0, false
}

// sendDeadLetterBatch takes up to a batch of exhausted records, reads
// them and relays their copies, with their origins, in one write. It
// reports read false when the log cannot be opened or a record cannot be
// read now (a disk error, not corruption), and relayed false when the
// node's relays refused the write for their bound of bytes: the records
// not relayed wait, exhausted, for a later tick. An unreadable (corrupt
// or aged out) record is skipped as a consume would; one that cannot be
// read now stays exhausted, never delivered again (put back in the queue,
// it was delivered past its max_deliveries once the disk read again),
// while the others of the batch go; records past the batch's bytes go
// back among the exhausted for the next batch. The log is opened for each
// batch: a relay's own append may have closed it to make room for the
// dead-letter partition's log (seed 1 of -deadletters).
func (n *Node) sendDeadLetterBatch(t *topic, p *partition) (read, relayed bool) {
	log, err := n.openLog(t, p)
	if err != nil {
		return false, true
	}
	batch := &deadLetterBatch{key: p.key, table: p.leases, topic: t.info.DeadLetterTopic}
	var records []msg.ProduceRecord
	bytes := 0
	read = true
	taken := p.leases.TakeExhausted(n.nowMs, deadLetterBatchRecordsMax)
	for i, exhausted := range taken {
		record, err := log.Read(exhausted.Offset)
		switch {
		case errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrAgedOut):
			n.skipUnreadable(t, p, log, exhausted.Offset, err)
			continue
		case err != nil:
			p.leases.ReturnExhausted(exhausted.Offset)
			read = false
			continue
		}
		size := len(record.Key) + len(record.Payload)
		if len(records) > 0 && bytes+size > deadLetterBatchBytesMax {
			n.returnExhausted(p.leases, taken[i:])
			break
		}
		bytes += size
		origin := msg.DeadLetterOrigin{Topic: t.info.Name, Partition: p.key.index, Offset: exhausted.Offset, DeliveryCount: exhausted.DeliveryCount}
		batch.origins = append(batch.origins, origin)
		records = append(records, msg.ProduceRecord{Key: record.Key, Partition: msg.PartitionNone, Payload: record.Payload, Origin: &origin})
	}
	if len(records) > 0 && !n.relayDeadLetters(batch, records) {
		return read, false
	}
	return read, true
}

// returnExhausted puts records taken beyond a batch back among the
// exhausted.
func (n *Node) returnExhausted(table *lease.Table, rest []lease.Exhausted) {
	for _, exhausted := range rest {
		table.ReturnExhausted(exhausted.Offset)
	}
}

// relayDeadLetters writes a batch into the dead-letter topic and reports
// whether the relay took it. A relay refused at once (the node's relays
// hold their bound of bytes: fan-out copies, other dead letters) is this
// node's own flow control, not a dead-letter topic that cannot take the
// copies: the records go back among the exhausted, never delivered
// again, and the next tick sends them (Config.RelayBytesInFlightMax:
// refused and retried later). Putting them back in the queue delivered a
// poison record past its max_deliveries whenever the relays were busy.
func (n *Node) relayDeadLetters(batch *deadLetterBatch, records []msg.ProduceRecord) bool {
	if err := n.relay(batch.topic, 0, records, func(reply msg.Reply) { n.deadLettersSettled(batch, reply) }); err != nil {
		for _, origin := range batch.origins {
			batch.table.ReturnExhausted(origin.Offset)
		}
		return false
	}
	return true
}

// deadLettersSettled ends a batch of dead letters: once the copies are
// durable in the dead-letter topic each record is acknowledged in its
// source; if the write failed, the records are reservable again (and
// exhaust again). The lease table they came from must still be the
// partition's. A partition frozen for a move meanwhile cannot commit (the
// commit belongs to the move): its records go back among the exhausted,
// never delivered again, and are written again once the freeze ends
// without a flip (a copy may be written twice), or exhausted again at
// the new owner, which the move's counts tell.
func (n *Node) deadLettersSettled(batch *deadLetterBatch, reply msg.Reply) {
	p, ok := n.partitions[batch.key]
	if !ok || p.leases != batch.table {
		chaos.Reached(chaos.MarkNodeDeadLetterOrphaned) // the partition was dropped or moved meanwhile
		return
	}
	if p.freeze.Frozen() {
		chaos.Reached(chaos.MarkNodeDeadLetterFailed)
		n.observer.Event("dead-letter-frozen", fmt.Sprintf("%s offsets %d.. (%d records) to %s: %v; the partition froze for a move meanwhile: the records wait, exhausted",
			p.dir, batch.origins[0].Offset, len(batch.origins), batch.topic, reply.Err))
		for _, origin := range batch.origins {
			batch.table.ReturnExhausted(origin.Offset)
		}
		n.deadLettersDue[batch.key] = struct{}{} // sent again at a tick once unfrozen (the unfreeze wakes the polls)
		return
	}
	if reply.Err != nil {
		chaos.Reached(chaos.MarkNodeDeadLetterFailed)
		n.observer.Event("dead-letter-failed", fmt.Sprintf("%s offsets %d.. (%d records) to %s: %v; the records stay in their topic",
			p.dir, batch.origins[0].Offset, len(batch.origins), batch.topic, reply.Err))
		for _, origin := range batch.origins {
			batch.table.DeadLetterFailed(origin.Offset)
		}
		n.tellPollsOf(batch.key.topic, []int{batch.key.index}) // reservable again: polls parked here or elsewhere may take them
		return
	}
	result, _ := reply.Result.(msg.ProduceResult)
	for i, origin := range batch.origins {
		if !batch.table.DeadLettered(origin.Offset) {
			continue // retention dropped it meanwhile
		}
		chaos.Reached(chaos.MarkNodeDeadLettered)
		if i < len(result.Records) {
			n.deadLetterObserver.DeadLettered(origin, batch.topic, result.Records[i])
		}
	}
	n.noteFrontier(p)
	n.tellPollsOf(batch.key.topic, []int{batch.key.index}) // a freed in-flight slot may serve a poll parked here or elsewhere
}

// deadLettersAllowed reports whether t's dead letters may be written into
// its dead-letter topic now. With EnforceGrants, a topic with an owner
// needs that owner to hold produce there, as the users stand: naming a
// dead-letter topic needed the grant (the HTTP layer checks it), but a
// grant revoked later let the owner go on writing into that topic,
// producing records to its own topic and nacking them (security audit).
// Until the grant is back or the setting changes, the dead letters wait,
// exhausted, never delivered again; the topic is named once in a
// dead-letters-unauthorised warning, and a dead-letters-authorised event
// says when they go again. A topic without an owner (made with security
// off, or whose owner was deleted) is an admin's, which needs no grant.
func (n *Node) deadLettersAllowed(t *topic) bool {
	owner := t.info.Owner
	allowed := true
	if n.cfg.EnforceGrants && owner != "" {
		user, found := n.meta.State().User(owner)
		allowed = found && (user.Root || meta.GrantsAllow(user.Grants, meta.GrantProduce, t.info.DeadLetterTopic))
	}
	_, blocked := n.deadLettersBlocked[t.info.Name]
	switch {
	case !allowed && !blocked:
		if n.deadLettersBlocked == nil {
			n.deadLettersBlocked = map[string]struct{}{}
		}
		n.deadLettersBlocked[t.info.Name] = struct{}{}
		n.observer.Event("dead-letters-unauthorised", fmt.Sprintf("topic %s: its owner %q holds no produce grant on its dead-letter topic %s; its exhausted records wait until it does or the setting changes",
			t.info.Name, owner, t.info.DeadLetterTopic))
	case allowed && blocked:
		delete(n.deadLettersBlocked, t.info.Name)
		n.observer.Event("dead-letters-authorised", fmt.Sprintf("topic %s: its dead letters go to %s again", t.info.Name, t.info.DeadLetterTopic))
	}
	return allowed
}
