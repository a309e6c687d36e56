package lease

import "narad/invariant"

// Exhausted is a record whose deliveries ran out, handed to the node to
// write to the dead-letter topic.
type Exhausted struct {
	Offset        uint64
	DeliveryCount uint32
}

// exhausts reports whether an entry that leaves flight unacked has run
// out of deliveries under the current config.
func (t *Table) exhausts(e *entry) bool {
	return t.cfg.MaxDeliveries > 0 && uint64(e.deliveriesSeen()) >= uint64(t.cfg.MaxDeliveries)
}

// ExhaustedPending counts the exhausted records not yet taken, as of the
// last call that took nowMs (expiry found since then is counted by the
// next such call).
func (t *Table) ExhaustedPending() int { return t.exhausted.Len() }

// TakeExhausted applies expiry at nowMs and hands out up to limit
// exhausted records, lowest offset first. Each stays unresolved and is
// never redelivered until the node settles it: DeadLettered once its copy
// is durable in the dead-letter topic, DeadLetterFailed otherwise.
func (t *Table) TakeExhausted(nowMs int64, limit int) []Exhausted {
	t.observe(nowMs)
	var out []Exhausted
	for len(out) < limit && t.exhausted.Len() > 0 {
		e := t.exhausted.popTop()
		e.state = stateDeadLettering
		t.deadLettering++
		out = append(out, Exhausted{Offset: e.offset, DeliveryCount: e.deliveryCount})
	}
	t.checkIfEnabled()
	return out
}

// DeadLettered resolves a record TakeExhausted handed out, now that its
// copy is durable in the dead-letter topic: like Skip, it ignores the
// acked-ahead cap (the copy exists; refusing would only duplicate it).
// It reports false, changing nothing, when the offset is no longer being
// dead-lettered (retention dropped it meanwhile).
func (t *Table) DeadLettered(offset uint64) bool {
	e, ok := t.entries[offset]
	if !ok || e.state != stateDeadLettering {
		return false
	}
	t.forget(e)
	t.deadLettering--
	t.ackedAheadCeiling = max(t.ackedAheadCeiling, len(t.ackedAhead)+1)
	t.resolve(offset)
	t.checkIfEnabled()
	return true
}

// OnExhausted sets a function called each time a reservation's end
// exhausts its record (the node keeps the set of partitions whose dead
// letters are due with it). A restored table's exhausted records are
// counted by ExhaustedPending, not announced.
func (t *Table) OnExhausted(hook func()) { t.exhaustedHook = hook }

// ReturnExhausted puts a record TakeExhausted handed out back among the
// exhausted, as it was, to be taken again later: the node took more than
// its batch could carry, or could not write or settle the batch now (its
// relays full, the partition frozen for a move). A record that no longer
// exhausts under the current config (dead letters turned off, or a
// higher MaxDeliveries, while it was out) goes back in the queue instead,
// as SetConfig does with the exhausted ones. It reports false, changing
// nothing, when the offset is no longer being dead-lettered.
func (t *Table) ReturnExhausted(offset uint64) bool {
	e, ok := t.takeDeadLettering(offset)
	if !ok {
		return false
	}
	if !t.exhausts(e) {
		e.state = stateReleased
		t.released.add(e)
		t.lapsedUnreported++
		t.checkIfEnabled()
		return true
	}
	e.state = stateExhausted
	t.exhausted.add(e)
	t.checkIfEnabled()
	return true
}

// DeadLetterFailed puts a record TakeExhausted handed out back in the
// queue: the dead-letter topic did not take it, so it is reservable again
// (and exhausts again when that reservation ends unacked). It reports
// false, changing nothing, when the offset is no longer being
// dead-lettered.
func (t *Table) DeadLetterFailed(offset uint64) bool {
	e, ok := t.takeDeadLettering(offset)
	if !ok {
		return false
	}
	e.state = stateReleased
	t.released.add(e)
	t.lapsedUnreported++ // the next Expire reports it, so pollers wake
	t.checkIfEnabled()
	return true
}

// takeDeadLettering returns the entry of offset if it is being
// dead-lettered, no longer counting it so; the caller gives it its next
// state.
func (t *Table) takeDeadLettering(offset uint64) (*entry, bool) {
	e, ok := t.entries[offset]
	if !ok || e.state != stateDeadLettering {
		return nil, false
	}
	t.deadLettering--
	return e, true
}

// reconsiderExhausted returns to the queue the exhausted records that no
// longer exhaust under a changed config (dead letters turned off, or a
// higher MaxDeliveries).
func (t *Table) reconsiderExhausted() {
	var back []*entry
	for _, e := range t.exhausted.entries {
		if !t.exhausts(e) {
			back = append(back, e)
		}
	}
	for _, e := range back {
		t.exhausted.remove(e)
		e.state = stateReleased
		t.released.add(e)
		t.lapsedUnreported++
	}
}

// dropDeadLetteringBelow forgets the records being dead-lettered below
// oldest (retention removed them); the node's settle finds them gone.
func (t *Table) dropDeadLetteringBelow(oldest uint64) {
	var doomed []uint64
	for offset, e := range t.entries { //determinism:ok only deletes
		if offset < oldest && e.state == stateDeadLettering {
			doomed = append(doomed, offset)
		}
	}
	for _, offset := range doomed {
		if t.entries[offset].heapIndex != -1 {
			invariant.Broken("lease: entry %d being dead-lettered must be in no heap", offset)
		}
		t.dropEntry(offset)
		t.deadLettering--
	}
}
