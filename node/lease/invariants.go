package lease

import (
	"fmt"
	"slices"

	"narad/invariant"
)

// checkIfEnabled runs the full check after a mutating call when the
// package is built with the "invariants" tag; otherwise it compiles away.
func (t *Table) checkIfEnabled() {
	invariant.Costly(t.CheckInvariants)
}

// CheckInvariants checks every invariant of the table across all its
// structures and returns the first one broken (nil if none). It costs
// O(n log n) in the entries held; the simulator's checker calls it.
func (t *Table) CheckInvariants() error {
	checks := []func() error{
		t.checkConfig,
		t.checkCursor,
		func() error { return t.checkHeap(&t.deadlines, stateInFlight) },
		func() error { return t.checkHeap(&t.released, stateReleased) },
		func() error { return t.checkHeap(&t.exhausted, stateExhausted) },
		t.checkExhausted,
		t.checkInFlight,
		t.checkAckedAhead,
		t.checkCoverage,
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("lease: invariant broken: %w", err)
		}
	}
	return nil
}

func (t *Table) checkConfig() error {
	if err := t.cfg.Validate(); err != nil {
		return err
	}
	if t.deliveredCeiling < t.cfg.InFlightMax || t.ackedAheadCeiling < t.cfg.AckedAheadMax {
		return fmt.Errorf("ceilings %d/%d below caps %+v", t.deliveredCeiling, t.ackedAheadCeiling, t.cfg)
	}
	return nil
}

func (t *Table) checkCursor() error {
	if t.committed > t.nextUndelivered || t.nextUndelivered > t.highWatermarkSeen {
		return fmt.Errorf("want committed %d <= next undelivered %d <= highest HWM seen %d",
			t.committed, t.nextUndelivered, t.highWatermarkSeen)
	}
	if _, acked := t.ackedAhead[t.nextUndelivered]; acked {
		return fmt.Errorf("next undelivered %d is acked ahead", t.nextUndelivered)
	}
	return nil
}

// checkHeap checks one heap: indexes, heap order, entry states and ranges.
func (t *Table) checkHeap(h *entryHeap, state entryState) error {
	for i, e := range h.entries {
		if e.heapIndex != i || e.state != state || t.entries[e.offset] != e {
			return fmt.Errorf("entry %d at heap index %d: index %d, state %d, want state %d and listed in entries",
				e.offset, i, e.heapIndex, e.state, state)
		}
		if i > 0 && h.less(e, h.entries[(i-1)/2]) {
			return fmt.Errorf("entry %d at heap index %d orders before its parent", e.offset, i)
		}
		if e.offset < t.committed || e.offset >= t.nextUndelivered || e.deliveryCount == 0 {
			return fmt.Errorf("delivered entry %d (count %d) outside [%d, %d) or never counted",
				e.offset, e.deliveryCount, t.committed, t.nextUndelivered)
		}
	}
	return nil
}

// checkInFlight checks the sizes, the deadlines and the nonces.
func (t *Table) checkInFlight() error {
	if len(t.entries) != t.deadlines.Len()+t.released.Len()+t.exhausted.Len()+t.deadLettering || len(t.entries) > t.deliveredCeiling {
		return fmt.Errorf("entries %d: want in flight %d + released %d + exhausted %d + dead-lettering %d, at most ceiling %d (in-flight max %d)",
			len(t.entries), t.deadlines.Len(), t.released.Len(), t.exhausted.Len(), t.deadLettering, t.deliveredCeiling, t.cfg.InFlightMax)
	}
	nonces := make(map[uint64]bool, t.deadlines.Len())
	for _, e := range t.deadlines.entries {
		if e.deadlineMs <= t.lastNowMs || e.nonce == 0 || nonces[e.nonce] {
			return fmt.Errorf("in-flight entry %d: deadline %d not after now %d, or nonce %d zero or shared",
				e.offset, e.deadlineMs, t.lastNowMs, e.nonce)
		}
		nonces[e.nonce] = true
	}
	return nil
}

// checkAckedAhead checks the acked-ahead set, in offset order so the first
// problem reported is the same on every run.
func (t *Table) checkAckedAhead() error {
	if len(t.ackedAhead) > t.ackedAheadCeiling {
		return fmt.Errorf("acked ahead %d above ceiling %d (acked-ahead max %d)",
			len(t.ackedAhead), t.ackedAheadCeiling, t.cfg.AckedAheadMax)
	}
	for _, offset := range t.sortedAckedAhead() {
		if _, delivered := t.entries[offset]; offset <= t.committed || offset >= t.highWatermarkSeen || delivered {
			return fmt.Errorf("acked-ahead offset %d must lie in (%d, %d) and not be delivered",
				offset, t.committed, t.highWatermarkSeen)
		}
	}
	return nil
}

// checkCoverage checks that every offset in [committed, nextUndelivered)
// is delivered or acked ahead: the entries and acked offsets there, all
// distinct, must number exactly the width of the range.
func (t *Table) checkCoverage() error {
	covered := uint64(len(t.entries))
	for _, offset := range t.sortedAckedAhead() {
		if offset < t.nextUndelivered {
			covered++
		}
	}
	if covered != t.nextUndelivered-t.committed {
		return fmt.Errorf("%d offsets delivered or acked in [%d, %d)", covered, t.committed, t.nextUndelivered)
	}
	return nil
}

// checkExhausted checks that exhausted entries ran out of deliveries and
// that entries being dead-lettered are in no heap.
func (t *Table) checkExhausted() error {
	for _, e := range t.exhausted.entries {
		if !t.exhausts(e) {
			return fmt.Errorf("exhausted entry %d has %d deliveries, max %d", e.offset, e.deliveryCount, t.cfg.MaxDeliveries)
		}
	}
	for offset, e := range t.entries { //determinism:ok the first problem found is reported, any will do
		if e.returnedUnseen && (e.state != stateReleased || e.deliveryCount != 1) {
			return fmt.Errorf("entry %d returned unseen is in state %d at delivery count %d, not released at 1", offset, e.state, e.deliveryCount)
		}
		if e.state == stateDeadLettering && (e.heapIndex != -1 || e.offset < t.committed || e.offset >= t.nextUndelivered) {
			return fmt.Errorf("entry %d being dead-lettered is in a heap or outside [%d, %d)", offset, t.committed, t.nextUndelivered)
		}
	}
	if counted := t.countDeadLettering(); counted != t.deadLettering {
		return fmt.Errorf("%d entries are being dead-lettered, counted %d", counted, t.deadLettering)
	}
	return nil
}

// countDeadLettering counts the entries being dead-lettered.
func (t *Table) countDeadLettering() int {
	count := 0
	for _, e := range t.entries { //determinism:ok a count
		if e.state == stateDeadLettering {
			count++
		}
	}
	return count
}

func (t *Table) sortedAckedAhead() []uint64 {
	offsets := make([]uint64, 0, len(t.ackedAhead))
	for offset := range t.ackedAhead { //determinism:ok sorted below
		offsets = append(offsets, offset)
	}
	slices.Sort(offsets)
	return offsets
}
