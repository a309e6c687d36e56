package lease

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"narad/invariant"
)

// EntryState is the state of an offset above the frontier in a Snapshot.
type EntryState uint8

const (
	// EntryInFlight: reserved at the source when the snapshot was taken.
	EntryInFlight EntryState = iota + 1
	// EntryReleased: delivered before, waiting for redelivery.
	EntryReleased
	// EntryAcked: acked or skipped ahead of the frontier.
	EntryAcked
)

func (s EntryState) String() string {
	switch s {
	case EntryInFlight:
		return "in-flight"
	case EntryReleased:
		return "released"
	case EntryAcked:
		return "acked"
	}
	return fmt.Sprintf("EntryState(%d)", uint8(s))
}

// SnapshotEntry is one offset above the frontier that is not plain
// "never delivered".
type SnapshotEntry struct {
	Offset uint64
	State  EntryState
	// DeliveryCount is how often the offset was delivered: >= 1 for
	// in-flight and released entries, 0 for acked ones (no longer kept).
	DeliveryCount uint32
	// ReturnedUnseen: a released entry whose one reservation was handed
	// back before a consumer saw it (Table.Return at count 1); its count
	// of 1 is then no delivery a consumer saw, and the next reservation
	// does not add one. Only with EntryReleased and DeliveryCount 1.
	ReturnedUnseen bool
}

// Snapshot is the queue state a move carries to the new owner with the
// rest of the partition: the frontier, the cursor, and every offset above
// the frontier that was delivered or acked, sorted by offset. Nonces and
// deadlines are not carried: the new owner's handles differ and its
// reservations start over. Validate states the invariants.
type Snapshot struct {
	// Committed is the frontier: every offset below it is resolved.
	Committed uint64
	// NextUndelivered: no offset at or above it, other than acked entries,
	// was ever delivered. Committed <= NextUndelivered.
	NextUndelivered uint64
	// Entries are strictly increasing by offset and cover every offset in
	// [Committed, NextUndelivered).
	Entries []SnapshotEntry
}

// ErrBadSnapshot is wrapped by every problem Snapshot.Validate reports.
var ErrBadSnapshot = errors.New("lease: bad snapshot")

// Snapshot returns the table's queue state, sorted by offset.
func (t *Table) Snapshot() Snapshot {
	entries := make([]SnapshotEntry, 0, len(t.entries)+len(t.ackedAhead))
	for _, e := range t.deadlines.entries {
		entries = append(entries, SnapshotEntry{Offset: e.offset, State: EntryInFlight, DeliveryCount: e.deliveryCount})
	}
	for _, e := range t.released.entries {
		entries = append(entries, SnapshotEntry{Offset: e.offset, State: EntryReleased, DeliveryCount: e.deliveryCount,
			ReturnedUnseen: e.returnedUnseen})
	}
	// Exhausted records, and those being dead-lettered, travel as released
	// with their counts: RestoreTable exhausts them again, and the new
	// owner writes them to the dead-letter topic (a copy written here
	// meanwhile stays: at least once).
	for _, e := range t.entries { //determinism:ok sorted below
		if e.state == stateExhausted || e.state == stateDeadLettering {
			entries = append(entries, SnapshotEntry{Offset: e.offset, State: EntryReleased, DeliveryCount: e.deliveryCount})
		}
	}
	for offset := range t.ackedAhead { //determinism:ok sorted below
		entries = append(entries, SnapshotEntry{Offset: offset, State: EntryAcked})
	}
	slices.SortFunc(entries, func(a, b SnapshotEntry) int { return cmp.Compare(a.Offset, b.Offset) })
	return Snapshot{Committed: t.committed, NextUndelivered: t.nextUndelivered, Entries: entries}
}

// Validate checks a snapshot received from elsewhere (a move) before it is
// restored: offsets strictly increasing; delivered entries in [Committed,
// NextUndelivered) with a delivery count, at most CapMax of them; acked
// entries above Committed; and every offset in [Committed,
// NextUndelivered) accounted for.
func (s Snapshot) Validate() error {
	if s.Committed > s.NextUndelivered {
		return fmt.Errorf("%w: committed %d above next undelivered %d", ErrBadSnapshot, s.Committed, s.NextUndelivered)
	}
	var covered uint64
	delivered := 0
	for i, e := range s.Entries {
		if i > 0 && e.Offset <= s.Entries[i-1].Offset {
			return fmt.Errorf("%w: offset %d not above offset %d before it", ErrBadSnapshot, e.Offset, s.Entries[i-1].Offset)
		}
		if err := s.validateEntry(e); err != nil {
			return err
		}
		if e.State != EntryAcked {
			delivered++
		}
		if e.Offset < s.NextUndelivered {
			covered++
		}
	}
	return s.validateCounts(covered, delivered)
}

// validateEntry checks one entry against the frontier and the cursor.
func (s Snapshot) validateEntry(e SnapshotEntry) error {
	switch e.State {
	case EntryAcked:
		if e.Offset <= s.Committed || e.Offset == math.MaxUint64 || e.DeliveryCount != 0 || e.ReturnedUnseen {
			return fmt.Errorf("%w: acked offset %d must lie in (%d, max uint64) with no delivery count",
				ErrBadSnapshot, e.Offset, s.Committed)
		}
	case EntryInFlight, EntryReleased:
		if e.Offset < s.Committed || e.Offset >= s.NextUndelivered || e.DeliveryCount == 0 {
			return fmt.Errorf("%w: delivered offset %d must lie in [%d, %d) with a delivery count",
				ErrBadSnapshot, e.Offset, s.Committed, s.NextUndelivered)
		}
		if e.ReturnedUnseen && (e.State != EntryReleased || e.DeliveryCount != 1) {
			return fmt.Errorf("%w: offset %d returned unseen must be released at delivery count 1, not %s at %d",
				ErrBadSnapshot, e.Offset, e.State, e.DeliveryCount)
		}
	default:
		return fmt.Errorf("%w: offset %d has unknown state %d", ErrBadSnapshot, e.Offset, e.State)
	}
	return nil
}

// validateCounts checks that [Committed, NextUndelivered) is fully covered
// and that the delivered entries fit the largest cap.
func (s Snapshot) validateCounts(covered uint64, delivered int) error {
	if covered != s.NextUndelivered-s.Committed {
		return fmt.Errorf("%w: %d entries cover [%d, %d)", ErrBadSnapshot, covered, s.Committed, s.NextUndelivered)
	}
	if delivered > CapMax {
		return fmt.Errorf("%w: %d delivered entries above cap max %d", ErrBadSnapshot, delivered, CapMax)
	}
	return nil
}

// RestoreTable rebuilds a table from a snapshot (the new owner of a moved
// partition). The snapshot must be valid (Validate). Offsets that were in
// flight at the source become available immediately, since their holders'
// handles are stale here, and the first Expire reports them so the node
// wakes long-pollers; delivery counts are kept.
func RestoreTable(s Snapshot, nonceBase uint64, cfg Config) *Table {
	if err := s.Validate(); err != nil {
		invariant.Broken("lease: restored snapshot must be valid: %v", err)
	}
	t := New(s.Committed, nonceBase, cfg)
	t.nextUndelivered = s.NextUndelivered
	t.highWatermarkSeen = s.NextUndelivered
	for _, se := range s.Entries {
		t.restoreEntry(se)
	}
	t.settleCursor()
	t.deliveredCeiling = max(cfg.InFlightMax, len(t.entries))
	t.ackedAheadCeiling = max(cfg.AckedAheadMax, len(t.ackedAhead))
	t.checkIfEnabled()
	return t
}

// restoreEntry installs one snapshot entry; entries come in offset order.
func (t *Table) restoreEntry(se SnapshotEntry) {
	if se.State == EntryAcked {
		t.putAcked(se.Offset)
		t.noteHighWatermark(se.Offset + 1)
		return
	}
	e := &entry{offset: se.Offset, deliveryCount: se.DeliveryCount, returnedUnseen: se.ReturnedUnseen, state: stateReleased}
	t.putEntry(e)
	if t.exhausts(e) { // it ran out of deliveries at the source: dead letters take it
		e.state = stateExhausted
		t.exhausted.add(e)
	} else {
		t.released.add(e)
	}
	if se.State == EntryInFlight {
		t.lapsedUnreported++
	}
}
