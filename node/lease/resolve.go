package lease

import (
	"math"

	"narad/chaos"
	"narad/invariant"
)

// Ack acknowledges a live reservation. ErrAcked if offset is already
// resolved (Acknowledged), whatever the nonce: a retried ack whose first
// attempt landed learns that it did. Otherwise ErrStale unless offset is in
// flight under nonce with a deadline > nowMs. ErrAckedAheadFull if offset is above
// the frontier and the acked-ahead set already holds AckedAheadMax offsets;
// then nothing changes. Acking the frontier collapses the contiguous run of
// acked-ahead offsets above it.
func (t *Table) Ack(offset, nonce uint64, nowMs int64) error {
	if t.Acknowledged(offset) {
		t.observe(nowMs)
		return ErrAcked
	}
	e, err := t.liveReservation(offset, nonce, nowMs)
	if err != nil {
		return err
	}
	if offset != t.committed && len(t.ackedAhead) >= t.cfg.AckedAheadMax {
		return ErrAckedAheadFull
	}
	t.deadlines.remove(e)
	t.forget(e)
	t.resolve(offset)
	t.checkIfEnabled()
	return nil
}

// Extend renews a live reservation under the same handle until
// nowMs+visibilityMs and returns the new deadline. ErrStale as for Ack.
func (t *Table) Extend(offset, nonce uint64, nowMs, visibilityMs int64) (deadlineMs int64, err error) {
	if visibilityMs <= 0 {
		invariant.Broken("lease: visibility %d ms must be > 0", visibilityMs)
	}
	e, err := t.liveReservation(offset, nonce, nowMs)
	if err != nil {
		return 0, err
	}
	e.deadlineMs = deadlineAfter(t.lastNowMs, visibilityMs)
	t.deadlines.fix(e)
	t.checkIfEnabled()
	return e.deadlineMs, nil
}

// Nack releases a live reservation now, for redelivery. ErrStale as for
// Ack. The node wakes long-pollers itself.
func (t *Table) Nack(offset, nonce uint64, nowMs int64) error {
	e, err := t.liveReservation(offset, nonce, nowMs)
	if err != nil {
		return err
	}
	t.deadlines.remove(e)
	t.release(e)
	t.checkIfEnabled()
	return nil
}

// Return hands back a live reservation that never reached a consumer (the
// node reserved it for a poll that was answered meanwhile): released for
// redelivery like Nack, but its delivery is taken back, so it never
// exhausts the record, and the next reservation gets the count this one
// had. ErrStale as for Ack.
func (t *Table) Return(offset, nonce uint64, nowMs int64) error {
	e, err := t.liveReservation(offset, nonce, nowMs)
	if err != nil {
		return err
	}
	t.deadlines.remove(e)
	e.uncountDelivery()
	e.state = stateReleased
	t.released.add(e)
	t.checkIfEnabled()
	return nil
}

// liveReservation finds the in-flight entry a handle names, after applying
// expiry at nowMs.
func (t *Table) liveReservation(offset, nonce uint64, nowMs int64) (*entry, error) {
	t.observe(nowMs)
	e, ok := t.entries[offset]
	if !ok || e.state != stateInFlight || e.nonce != nonce && !chaos.Planted(chaos.BugStaleHandleAccepted) {
		return nil, ErrStale
	}
	if e.deadlineMs <= t.lastNowMs {
		invariant.Broken("lease: live reservation %d must have its deadline %d after now %d", offset, e.deadlineMs, t.lastNowMs)
	}
	return e, nil
}

// Skip resolves an offset without delivery (its record is unreadable): it
// behaves like an ack that ignores the caps, whatever the offset's state,
// and the frontier passes it. An offset below the frontier or already acked
// is left alone. Skip tells the table that offset exists (it raises the HWM
// seen to offset+1).
func (t *Table) Skip(offset uint64) {
	if offset == math.MaxUint64 {
		invariant.Broken("lease: skipped offset %d must leave room for the HWM above it", offset)
	}
	if _, acked := t.ackedAhead[offset]; acked || offset < t.committed {
		return
	}
	if e, ok := t.entries[offset]; ok {
		if e.state == stateDeadLettering {
			t.deadLettering--
		} else {
			t.heapOf(e).remove(e)
		}
		t.forget(e)
	}
	t.noteHighWatermark(offset + 1)
	t.ackedAheadCeiling = max(t.ackedAheadCeiling, len(t.ackedAhead)+1)
	t.resolve(offset)
	t.checkIfEnabled()
}

// heapOf is the heap an entry's state puts it in.
func (t *Table) heapOf(e *entry) *entryHeap {
	if e.state == stateInFlight {
		return &t.deadlines
	}
	if e.state == stateExhausted {
		return &t.exhausted
	}
	if e.state != stateReleased {
		invariant.Broken("lease: entry %d must be in flight, released or exhausted, not state %d", e.offset, e.state)
	}
	return &t.released
}

// forget drops an entry already taken out of its heap.
func (t *Table) forget(e *entry) {
	if e.heapIndex != -1 {
		invariant.Broken("lease: entry %d must leave its heap before it is forgotten", e.offset)
	}
	t.dropEntry(e.offset)
}

// resolve marks an unresolved offset at or above the frontier as done:
// the frontier moves past it, or it waits in the acked-ahead set.
func (t *Table) resolve(offset uint64) {
	if offset < t.committed {
		invariant.Broken("lease: resolved offset %d must be at or above the frontier %d", offset, t.committed)
	}
	if offset == t.committed {
		t.committed++
		t.collapse()
	} else {
		t.putAcked(offset)
	}
	if len(t.ackedAhead) > t.ackedAheadCeiling {
		invariant.Broken("lease: acked ahead %d must stay within ceiling %d (acked-ahead max %d)",
			len(t.ackedAhead), t.ackedAheadCeiling, t.cfg.AckedAheadMax)
	}
	t.settleCursor()
	t.relaxCeilings()
}

// collapse moves the frontier over the contiguous acked-ahead run at it.
func (t *Table) collapse() {
	for {
		if _, acked := t.ackedAhead[t.committed]; !acked {
			return
		}
		t.dropAcked(t.committed)
		t.committed++
	}
}

// AdvanceTo records that retention removed every offset below oldest: the
// frontier jumps there and the state below it is discarded (live handles
// there become stale). It returns how many offsets below oldest were
// dropped unacked (never delivered, in flight or released).
func (t *Table) AdvanceTo(oldest uint64) (dropped uint64) {
	if oldest <= t.committed {
		return 0
	}
	ackedBelow := t.dropAckedBelow(oldest)
	t.dropEntriesBelow(oldest)
	dropped = oldest - t.committed - ackedBelow
	t.committed = oldest
	t.noteHighWatermark(oldest)
	t.collapse()
	t.settleCursor()
	t.relaxCeilings()
	t.checkIfEnabled()
	return dropped
}

// dropAckedBelow removes acked-ahead offsets below oldest and counts them.
// The range over the map only deletes and counts, so its order cannot
// reach any output.
func (t *Table) dropAckedBelow(oldest uint64) (count uint64) {
	for offset := range t.ackedAhead { //determinism:ok only deletes and counts
		if offset < oldest {
			t.dropAcked(offset)
			count++
		}
	}
	return count
}

// dropEntriesBelow discards delivered entries below oldest.
func (t *Table) dropEntriesBelow(oldest uint64) {
	for t.released.Len() > 0 && t.released.top().offset < oldest {
		t.forget(t.released.popTop())
	}
	for t.exhausted.Len() > 0 && t.exhausted.top().offset < oldest {
		t.forget(t.exhausted.popTop())
	}
	t.dropDeadLetteringBelow(oldest)
	var doomed []*entry
	for _, e := range t.deadlines.entries {
		if e.offset < oldest {
			doomed = append(doomed, e)
		}
	}
	for _, e := range doomed {
		t.deadlines.remove(e)
		t.forget(e)
	}
}
