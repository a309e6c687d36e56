package node

import (
	"errors"
	"fmt"

	"narad/chaos"
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
	return nil // a delay child as the dead-letter topic is refused by the metastore (409)
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

// deadLetterDue reports whether some partition holds exhausted records
// waiting to be written to their dead-letter topic.
func (n *Node) deadLetterDue() bool {
	for _, p := range n.partitions { //determinism:ok an existence test does not depend on order
		if p.leases != nil && p.leases.ExhaustedPending() > 0 {
			return true
		}
	}
	return false
}

// sendDeadLetters starts the dead letters of every partition that has
// exhausted records, while relays have room (docs/api.md#dead-letters).
func (n *Node) sendDeadLetters() {
	if !n.deadLetterDue() {
		return // the common case on every tick
	}
	for _, p := range n.sortedPartitions() {
		if t, ok := n.lookupTopic(p.key.topic); ok && p.leases != nil && p.leases.ExhaustedPending() > 0 {
			n.sendPartitionDeadLetters(t, p)
		}
	}
}

// sendPartitionDeadLetters relays p's exhausted records, one relay each,
// to the topic's dead-letter topic. A frozen partition waits: its commit
// belongs to the move, and the new owner exhausts the records again.
func (n *Node) sendPartitionDeadLetters(t *topic, p *partition) {
	if p.freeze.Frozen() || !n.ownedHere(t, p.key.index) || t.info.DeadLetterTopic == "" {
		return
	}
	room := n.cfg.RelaysInFlightMax - n.relays.inFlight
	if room <= 0 {
		chaos.Reached(chaos.MarkNodeDeadLettersWaitForRelays)
		return
	}
	for _, exhausted := range p.leases.TakeExhausted(n.nowMs, room) {
		n.sendDeadLetter(t, p, exhausted)
	}
}

// sendDeadLetter reads one exhausted record and relays its copy, with its
// origin; an unreadable record is skipped as a consume would, and one
// that cannot be read now goes back to the queue. The log is opened for
// each record: a relay's own append may have closed it to make room for
// the dead-letter partition's log (seed 1 of -deadletters).
func (n *Node) sendDeadLetter(t *topic, p *partition, exhausted lease.Exhausted) {
	log, err := n.openLog(t, p)
	if err != nil {
		p.leases.DeadLetterFailed(exhausted.Offset)
		return
	}
	record, err := log.Read(exhausted.Offset)
	if errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrAgedOut) {
		n.skipUnreadable(t, p, log, exhausted.Offset, err)
		return
	}
	if err != nil {
		p.leases.DeadLetterFailed(exhausted.Offset)
		return
	}
	origin := &msg.DeadLetterOrigin{Topic: t.info.Name, Partition: p.key.index, Offset: exhausted.Offset, DeliveryCount: exhausted.DeliveryCount}
	copied := msg.ProduceRecord{Key: record.Key, Partition: msg.PartitionNone, Payload: record.Payload, Origin: origin}
	table, deadLetterTopic := p.leases, t.info.DeadLetterTopic
	done := func(reply msg.Reply) { n.deadLetterSettled(p.key, table, deadLetterTopic, *origin, reply) }
	if err := n.relay(deadLetterTopic, []msg.ProduceRecord{copied}, done); err != nil {
		table.DeadLetterFailed(exhausted.Offset) // no room after all: reservable again
	}
}

// deadLetterSettled ends one dead letter: once its copy is durable in
// the dead-letter topic the record is acknowledged in its source; if the
// write failed, the record is reservable again (and exhausts again). The
// lease table it came from must still be the partition's, unfrozen.
func (n *Node) deadLetterSettled(key partitionKey, table *lease.Table, deadLetterTopic string, origin msg.DeadLetterOrigin, reply msg.Reply) {
	p, ok := n.partitions[key]
	if !ok || p.leases != table {
		chaos.Reached(chaos.MarkNodeDeadLetterOrphaned) // the partition was dropped or moved meanwhile
		return
	}
	if reply.Err != nil || p.freeze.Frozen() {
		chaos.Reached(chaos.MarkNodeDeadLetterFailed)
		n.observer.Event("dead-letter-failed", fmt.Sprintf("%s offset %d to %s: %v (frozen %t); the record stays in its topic",
			p.dir, origin.Offset, deadLetterTopic, reply.Err, p.freeze.Frozen()))
		table.DeadLetterFailed(origin.Offset)
		n.wake(key.topic)
		return
	}
	if !table.DeadLettered(origin.Offset) {
		return // retention dropped it meanwhile
	}
	chaos.Reached(chaos.MarkNodeDeadLettered)
	if result, ok := reply.Result.(msg.ProduceResult); ok && len(result.Records) == 1 {
		n.deadLetterObserver.DeadLettered(origin, deadLetterTopic, result.Records[0])
	}
	if p.log != nil {
		n.noteCommitted(p, p.log)
	}
	n.wake(key.topic) // a freed in-flight slot may serve a parked poll
}
