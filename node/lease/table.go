package lease

import (
	"errors"
	"math"

	"narad/invariant"
)

var (
	// ErrStale: the handle does not name a live reservation (it expired,
	// was re-reserved under a new nonce, was nacked, fell to retention, or
	// belongs to another incarnation), or, for Extend and Nack, its offset
	// is already acked or skipped.
	ErrStale = errors.New("lease: receipt handle is stale")
	// ErrAcked: Ack of an offset that is already resolved (below the
	// frontier or acked ahead of it). Nothing changed. The nonce is not
	// checked: the state that would tell is gone once an offset resolves,
	// and whichever handle resolved it, the record will not be delivered
	// again.
	ErrAcked = errors.New("lease: offset already acknowledged")
	// ErrAckedAheadFull: acking this offset above the frontier would exceed
	// AckedAheadMax; nothing changed and the reservation stays live.
	ErrAckedAheadFull = errors.New("lease: acked-ahead set is full")
)

// Reservation is one delivery handed to a consumer.
type Reservation struct {
	Offset        uint64
	Nonce         uint64 // > 0; the handle is live while this nonce is current
	DeliveryCount uint32 // 1 on first delivery, +1 per redelivery
	DeadlineMs    int64  // the reservation lapses when nowMs reaches it
}

// Table is the lease table of one partition. It is not safe for concurrent
// use; the node's loop owns it. All fields are changed only by the methods
// named in their comments.
type Table struct {
	// cfg holds the caps. Invariant: cfg.Validate() == nil. SetConfig.
	cfg Config
	// committed is the frontier: every offset below it is acked or skipped.
	// Invariant: only grows. Ack, Skip, AdvanceTo.
	committed uint64
	// nextUndelivered is the cursor of offsets never delivered. Invariant:
	// committed <= nextUndelivered <= highWatermarkSeen; it is not acked
	// ahead; offsets below it and at or above committed are all entries or
	// acked ahead. Reserve advances it; the frontier pushes it.
	nextUndelivered uint64
	// highWatermarkSeen is the largest HWM the table has been told of (by
	// Reserve, or implied by New, Skip and AdvanceTo). Only grows.
	highWatermarkSeen uint64
	// entries are the delivered, unresolved offsets. Invariant: each is in
	// deadlines (in flight) or released, as its state says, and nowhere
	// else; len(entries) <= deliveredCeiling. Reserve adds; Ack, Skip,
	// AdvanceTo remove.
	entries map[uint64]*entry
	// deadlines holds the in-flight entries by (deadline, offset).
	// Invariant: every deadline > lastNowMs after each call taking nowMs.
	deadlines entryHeap
	// released holds entries waiting for redelivery, by offset.
	released entryHeap
	// exhausted holds entries that ran out of deliveries, waiting for
	// TakeExhausted, by offset. Only release (through the config's
	// MaxDeliveries), RestoreTable and ReturnExhausted add; TakeExhausted,
	// SetConfig and the removals of entries take out.
	exhausted entryHeap
	// exhaustedHook, when set (OnExhausted), is called each time release
	// adds to exhausted.
	exhaustedHook func()
	// deadLettering counts the entries TakeExhausted handed out and the
	// node has not settled: in entries, in no heap. TakeExhausted adds;
	// DeadLettered, DeadLetterFailed, Skip and AdvanceTo take off.
	deadLettering int
	// ackedAhead holds acked or skipped offsets above the frontier.
	// Invariant: all > committed, none in entries, len <= ackedAheadCeiling.
	// Ack and Skip add; the frontier and AdvanceTo remove.
	ackedAhead map[uint64]struct{}
	// lastNonce is the last receipt nonce handed out (nonceBase at first).
	// Reserve advances it, skipping 0.
	lastNonce uint64
	// lastNowMs is the latest nowMs seen; math.MinInt64 before any.
	lastNowMs int64
	// lapsedUnreported counts reservations that lapsed since the last
	// Expire call, so Expire reports lapses found lazily by other calls.
	lapsedUnreported int
	// deliveredCeiling bounds len(entries): cfg.InFlightMax, or more while
	// a lowered cap (or a restored snapshot) leaves more entries than that;
	// it falls back as they resolve. relaxCeilings, SetConfig.
	deliveredCeiling int
	// ackedAheadCeiling bounds len(ackedAhead) the same way; Skip raises
	// it because skips ignore the cap.
	ackedAheadCeiling int
	// tally is where the table counts its Held (nil: nowhere). Invariant:
	// it holds Held of this table; every change of entries or ackedAhead
	// moves it (putEntry, dropEntry, putAcked, dropAcked). CountInto.
	tally *Tally
}

// Tally sums Held over the tables that count into it (CountInto): each
// table moves it by every change of its own Held as the change happens,
// so the sum is exact at every moment without a walk of the tables (the
// node's lease budget, over thousands of partitions). The zero value is
// an empty tally.
type Tally struct {
	// held is the sum of Held over the tables counting into the tally.
	// Invariant: >= 0.
	held int
}

// Held is the sum of Held over the tables that count into the tally.
func (y *Tally) Held() int { return y.held }

// add moves the tally by delta; a nil tally counts nothing.
func (y *Tally) add(delta int) {
	if y == nil {
		return
	}
	y.held += delta
	if y.held < 0 {
		invariant.Broken("lease: a tally of held offsets must not fall below 0 (%d after %d)", y.held, delta)
	}
}

// CountInto makes the table count its Held into tally from now on (nil:
// into none): what it holds leaves the tally it counted into before and
// joins the new one. A table its owner drops leaves its tally first.
func (t *Table) CountInto(tally *Tally) {
	t.tally.add(-t.Held())
	t.tally = tally
	t.tally.add(t.Held())
}

// The maps behind Held change only through the four below, which move
// the tally by what they change.

func (t *Table) putEntry(e *entry) {
	before := len(t.entries)
	t.entries[e.offset] = e
	t.tally.add(len(t.entries) - before)
}

func (t *Table) dropEntry(offset uint64) {
	before := len(t.entries)
	delete(t.entries, offset)
	t.tally.add(len(t.entries) - before)
}

func (t *Table) putAcked(offset uint64) {
	before := len(t.ackedAhead)
	t.ackedAhead[offset] = struct{}{}
	t.tally.add(len(t.ackedAhead) - before)
}

func (t *Table) dropAcked(offset uint64) {
	before := len(t.ackedAhead)
	delete(t.ackedAhead, offset)
	t.tally.add(len(t.ackedAhead) - before)
}

// HighWatermarkSeen is the largest HWM the table has been told of: it
// may hold state (deliveries, acks, the frontier) for offsets below it,
// never at or above it.
func (t *Table) HighWatermarkSeen() uint64 { return t.highWatermarkSeen }

// LastNonce is the last receipt nonce the table handed out (its nonce
// base before the first). A later table of the same partition on this
// node must start above it, or its handles would name reservations of
// the new table.
func (t *Table) LastNonce() uint64 { return t.lastNonce }

// New starts a table at a committed frontier. nonceBase makes receipt
// nonces of this table differ from those of an earlier incarnation of the
// partition (the node passes something like its start time): nonces handed
// out are nonceBase+1, nonceBase+2, ..., skipping 0 if the sum wraps, so they
// are always > 0. cfg must be valid.
func New(committed uint64, nonceBase uint64, cfg Config) *Table {
	if err := cfg.Validate(); err != nil {
		invariant.Broken("lease: config must be valid: %v", err)
	}
	return &Table{
		cfg:               cfg,
		committed:         committed,
		nextUndelivered:   committed,
		highWatermarkSeen: committed,
		entries:           make(map[uint64]*entry),
		deadlines:         entryHeap{less: byDeadline},
		released:          entryHeap{less: byOffset},
		exhausted:         entryHeap{less: byOffset},
		ackedAhead:        make(map[uint64]struct{}),
		lastNonce:         nonceBase,
		lastNowMs:         math.MinInt64,
		deliveredCeiling:  cfg.InFlightMax,
		ackedAheadCeiling: cfg.AckedAheadMax,
	}
}

// Committed is the frontier: every offset below it is acked or skipped.
func (t *Table) Committed() uint64 { return t.committed }

// Acknowledged reports whether offset is resolved: below the frontier
// (acked, skipped or passed by AdvanceTo) or acked ahead of it.
func (t *Table) Acknowledged(offset uint64) bool {
	_, ahead := t.ackedAhead[offset]
	return ahead || offset < t.committed
}

// InFlight counts unexpired reservations as of the last call that took
// nowMs.
func (t *Table) InFlight() int { return t.deadlines.Len() }

// AckedAhead counts acked or skipped offsets above the frontier.
func (t *Table) AckedAhead() int { return len(t.ackedAhead) }

// Held counts the offsets the table holds state for, in memory: the
// delivered and unresolved ones (in flight, released, exhausted) and the
// acked ones above the frontier. Only a reservation of an offset never
// delivered and a skip add to it.
func (t *Table) Held() int { return len(t.entries) + len(t.ackedAhead) }

// SetConfig changes the caps (a topic alter). It applies to the next calls;
// lowering a cap below a current count drops nothing, it only stops new
// reservations (or out-of-order acks) until the count falls below it.
// Config is the table's current configuration.
func (t *Table) Config() Config { return t.cfg }

func (t *Table) SetConfig(cfg Config) {
	if err := cfg.Validate(); err != nil {
		invariant.Broken("lease: config must be valid: %v", err)
	}
	t.cfg = cfg
	t.deliveredCeiling = max(cfg.InFlightMax, len(t.entries))
	t.ackedAheadCeiling = max(cfg.AckedAheadMax, len(t.ackedAhead))
	t.reconsiderExhausted()
	t.checkIfEnabled()
}

// NextDeadline is the earliest deadline of a live reservation, for the
// node's tick scheduling; ok=false when nothing is in flight.
func (t *Table) NextDeadline() (deadlineMs int64, ok bool) {
	if t.deadlines.Len() == 0 {
		return 0, false
	}
	return t.deadlines.top().deadlineMs, true
}

// Expire releases every reservation whose deadline <= nowMs and returns how
// many reservations lapsed since the previous Expire call: those released
// now plus those other calls found lapsed lazily in between. The node wakes
// long-pollers when it is > 0.
func (t *Table) Expire(nowMs int64) int {
	t.observe(nowMs)
	lapsed := t.lapsedUnreported
	t.lapsedUnreported = 0
	t.checkIfEnabled()
	return lapsed
}

// observe moves the table's clock to nowMs (never backwards) and releases
// every reservation that lapsed by then. It returns the table's now.
func (t *Table) observe(nowMs int64) int64 {
	t.lastNowMs = max(t.lastNowMs, nowMs)
	for t.deadlines.Len() > 0 && t.deadlines.top().deadlineMs <= t.lastNowMs {
		t.release(t.deadlines.popTop())
		t.lapsedUnreported++
	}
	return t.lastNowMs
}

// release makes an entry just taken out of deadlines available again,
// or exhausted when its deliveries reached Config.MaxDeliveries.
func (t *Table) release(e *entry) {
	if e.state != stateInFlight {
		invariant.Broken("lease: only an in-flight entry is released (offset %d, state %d)", e.offset, e.state)
	}
	if t.exhausts(e) {
		e.state = stateExhausted
		t.exhausted.add(e)
		if t.exhaustedHook != nil {
			t.exhaustedHook()
		}
		return
	}
	e.state = stateReleased
	t.released.add(e)
}

// noteHighWatermark records that offsets below hwm exist.
func (t *Table) noteHighWatermark(hwm uint64) {
	t.highWatermarkSeen = max(t.highWatermarkSeen, hwm)
}

// relaxCeilings lets the ceilings fall back toward the caps as counts fall
// below a ceiling raised by SetConfig, RestoreTable or Skip.
func (t *Table) relaxCeilings() {
	t.deliveredCeiling = max(t.cfg.InFlightMax, min(t.deliveredCeiling, len(t.entries)))
	t.ackedAheadCeiling = max(t.cfg.AckedAheadMax, min(t.ackedAheadCeiling, len(t.ackedAhead)))
}
