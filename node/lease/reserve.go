package lease

import (
	"math"

	"narad/chaos"
	"narad/invariant"
)

// Reserve reserves the lowest offset in [committed, hwm) that is neither in
// flight (with an unexpired deadline) nor acked nor skipped, until
// nowMs+visibilityMs. ok=false when none is available or a cap stops it:
// with InFlightMax reservations in flight nothing is reserved; with the
// acked-ahead set full only the frontier offset itself may be reserved.
// visibilityMs must be > 0.
func (t *Table) Reserve(nowMs int64, hwm uint64, visibilityMs int64) (Reservation, bool) {
	if visibilityMs <= 0 {
		invariant.Broken("lease: visibility %d ms must be > 0", visibilityMs)
	}
	now := t.observe(nowMs)
	t.noteHighWatermark(hwm)
	offset := t.lowestAvailable()
	if offset >= hwm || !t.mayReserve(offset) {
		return Reservation{}, false
	}
	e := t.takeForDelivery(offset)
	t.lease(e, now, visibilityMs)
	t.checkIfEnabled()
	return e.reservation(), true
}

// ReserveReleased is Reserve limited to offsets delivered before and
// released since (a lapse or a nack): it never takes an offset not yet
// delivered, so it adds nothing to Held. The node reserves this way at its
// lease budget, so that released records still go out and their acks
// bring the budget back.
func (t *Table) ReserveReleased(nowMs int64, hwm uint64, visibilityMs int64) (Reservation, bool) {
	t.observe(nowMs)
	if t.released.Len() == 0 {
		return Reservation{}, false
	}
	return t.Reserve(nowMs, hwm, visibilityMs)
}

// Deliverable reports whether Reserve would reserve a record now, with
// hwm the log's high watermark: one is available below it and no cap
// stops it. It changes nothing (expiry included: a deadline due counts
// only once Expire or Reserve applied it).
func (t *Table) Deliverable(hwm uint64) bool {
	offset := t.lowestAvailable()
	return offset < hwm && t.mayReserve(offset)
}

// lowestAvailable is the least offset a reservation could take: released
// offsets all lie below nextUndelivered, so the least released one wins.
func (t *Table) lowestAvailable() uint64 {
	if t.released.Len() > 0 {
		return t.released.top().offset
	}
	return t.nextUndelivered
}

// mayReserve applies the caps to the offset Reserve would take.
// Records on their way to the dead-letter topic (exhausted, or being
// dead-lettered) hold in-flight slots too: they are delivered and
// unresolved, and without them counted a new delivery could take the
// delivered set past InFlightMax (the lease model test found it).
func (t *Table) mayReserve(offset uint64) bool {
	if t.deadlines.Len()+t.exhausted.Len()+t.deadLettering >= t.cfg.InFlightMax {
		return false
	}
	return len(t.ackedAhead) < t.cfg.AckedAheadMax || offset == t.committed
}

// takeForDelivery removes offset from the available offsets: the least
// released entry, or a new entry at the cursor.
func (t *Table) takeForDelivery(offset uint64) *entry {
	if t.released.Len() > 0 {
		e := t.released.popTop()
		if e.offset != offset {
			invariant.Broken("lease: released top %d must be the offset reserved %d", e.offset, offset)
		}
		return e
	}
	if offset != t.nextUndelivered {
		invariant.Broken("lease: new delivery %d must be at the cursor %d", offset, t.nextUndelivered)
	}
	e := &entry{offset: offset}
	t.putEntry(e)
	t.nextUndelivered++
	t.settleCursor()
	if len(t.entries) > t.deliveredCeiling {
		invariant.Broken("lease: delivered entries %d must stay within ceiling %d (in-flight max %d)",
			len(t.entries), t.deliveredCeiling, t.cfg.InFlightMax)
	}
	return e
}

// lease puts an entry in flight under a fresh nonce.
func (t *Table) lease(e *entry, nowMs, visibilityMs int64) {
	e.countDelivery()
	e.nonce = t.nextNonce()
	e.deadlineMs = deadlineAfter(nowMs, visibilityMs)
	if chaos.Planted(chaos.BugLeaseOutlivesTimeout) {
		e.deadlineMs = deadlineAfter(nowMs, 2*visibilityMs)
	}
	if chaos.Planted(chaos.BugLeaseExpiresEarly) {
		e.deadlineMs = deadlineAfter(nowMs, max(1, visibilityMs/50))
	}
	e.state = stateInFlight
	t.deadlines.add(e)
	if e.deadlineMs <= t.lastNowMs {
		invariant.Broken("lease: new deadline %d must be after now %d", e.deadlineMs, t.lastNowMs)
	}
}

// nextNonce hands out the next receipt nonce, never 0.
func (t *Table) nextNonce() uint64 {
	t.lastNonce++
	if t.lastNonce == 0 {
		t.lastNonce = 1
	}
	return t.lastNonce
}

// deadlineAfter is nowMs+visibilityMs, saturating at the largest time
// instead of wrapping into the past.
func deadlineAfter(nowMs, visibilityMs int64) int64 {
	if nowMs > math.MaxInt64-visibilityMs {
		return math.MaxInt64
	}
	return nowMs + visibilityMs
}

// settleCursor keeps the cursor at or above the frontier and off offsets
// already acked ahead (skipped before they were ever delivered).
func (t *Table) settleCursor() {
	t.nextUndelivered = max(t.nextUndelivered, t.committed)
	for {
		if _, acked := t.ackedAhead[t.nextUndelivered]; !acked {
			break
		}
		t.nextUndelivered++
	}
	if t.nextUndelivered > t.highWatermarkSeen {
		invariant.Broken("lease: cursor %d must stay at most the highest HWM seen %d", t.nextUndelivered, t.highWatermarkSeen)
	}
}
