package lease

import (
	"container/heap"
	"math"

	"narad/invariant"
)

// entryState says which heap of the table holds a delivered entry.
type entryState uint8

const (
	// stateInFlight: reserved under nonce until deadlineMs; held by
	// Table.deadlines.
	stateInFlight entryState = iota + 1
	// stateReleased: waiting for redelivery; held by Table.released.
	stateReleased
	// stateExhausted: its last reservation ended unacked at
	// Config.MaxDeliveries deliveries; waiting for TakeExhausted, never
	// redelivered; held by Table.exhausted.
	stateExhausted
	// stateDeadLettering: handed out by TakeExhausted, being written to
	// the dead-letter topic; in no heap (heapIndex -1), never redelivered
	// until DeadLetterFailed.
	stateDeadLettering
)

// entry is one delivered offset that is not yet resolved (acked, skipped
// or discarded by retention). Only the Table that owns it changes it.
type entry struct {
	// offset is the partition offset. Invariant: committed <= offset <
	// nextUndelivered of the owning table. Never changes.
	offset uint64
	// deliveryCount counts deliveries of offset so far. Invariant: >= 1.
	// Incremented on each reservation (saturating), except the one after
	// a reservation returned unseen at count 1 (see returnedUnseen);
	// decremented by a Return at count 2 or more.
	deliveryCount uint32
	// returnedUnseen is set when a reservation at count 1 was returned
	// (Table.Return): it reached no consumer, but the count stays >= 1,
	// so the next reservation does not add one, and the entry does not
	// exhaust. Carried by a snapshot (SnapshotEntry.ReturnedUnseen).
	returnedUnseen bool
	// state selects the heap that holds the entry.
	state entryState
	// nonce is the receipt nonce of the current reservation; meaningful
	// only in flight. Invariant: > 0 once delivered.
	nonce uint64
	// deadlineMs is when the current reservation lapses; meaningful only in
	// flight. Invariant: in flight ⇒ deadlineMs > the table's lastNowMs.
	deadlineMs int64
	// heapIndex is the entry's position in the heap its state selects,
	// maintained by entryHeap.
	heapIndex int
}

// reservation is the caller's view of an in-flight entry.
func (e *entry) reservation() Reservation {
	return Reservation{Offset: e.offset, Nonce: e.nonce, DeliveryCount: e.deliveryCount, DeadlineMs: e.deadlineMs}
}

// uncountDelivery takes back the delivery of a reservation returned
// unseen, keeping the count >= 1.
func (e *entry) uncountDelivery() {
	if e.deliveryCount > 1 {
		e.deliveryCount--
		return
	}
	e.returnedUnseen = true
}

// deliveriesSeen is the deliveries that reached a consumer: the count,
// less the one a return at count 1 took back.
func (e *entry) deliveriesSeen() uint32 {
	if e.returnedUnseen {
		return e.deliveryCount - 1
	}
	return e.deliveryCount
}

// countDelivery adds one delivery, saturating instead of wrapping to 0;
// after a return at count 1 the count already holds this one.
func (e *entry) countDelivery() {
	if e.returnedUnseen {
		e.returnedUnseen = false
		return
	}
	if e.deliveryCount < math.MaxUint32 {
		e.deliveryCount++
	}
}

// byDeadline orders in-flight entries by deadline, then offset, a total
// order, so the heap's pops are the same whatever its layout.
func byDeadline(a, b *entry) bool {
	if a.deadlineMs != b.deadlineMs {
		return a.deadlineMs < b.deadlineMs
	}
	return a.offset < b.offset
}

// byOffset orders released entries by offset.
func byOffset(a, b *entry) bool { return a.offset < b.offset }

// entryHeap is an indexed min-heap of entries: each entry records its
// position so it can be removed or re-ordered in O(log n).
type entryHeap struct {
	// entries is the heap array. Invariant: entries[i].heapIndex == i and
	// the heap property holds under less.
	entries []*entry
	// less is byDeadline or byOffset; fixed at construction.
	less func(a, b *entry) bool
}

func (h *entryHeap) Len() int           { return len(h.entries) }
func (h *entryHeap) Less(i, j int) bool { return h.less(h.entries[i], h.entries[j]) }

func (h *entryHeap) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.entries[i].heapIndex = i
	h.entries[j].heapIndex = j
}

// Push is for container/heap only; use add.
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.heapIndex = len(h.entries)
	h.entries = append(h.entries, e)
}

// Pop is for container/heap only; use remove or popTop.
func (h *entryHeap) Pop() any {
	last := len(h.entries) - 1
	e := h.entries[last]
	h.entries[last] = nil
	h.entries = h.entries[:last]
	e.heapIndex = -1
	return e
}

func (h *entryHeap) add(e *entry) { heap.Push(h, e) }

// top is the least entry; the heap must not be empty.
func (h *entryHeap) top() *entry { return h.entries[0] }

func (h *entryHeap) popTop() *entry { return heap.Pop(h).(*entry) }

func (h *entryHeap) remove(e *entry) {
	if e.heapIndex < 0 || e.heapIndex >= len(h.entries) || h.entries[e.heapIndex] != e {
		invariant.Broken("lease: entry at offset %d must be at its heap index %d", e.offset, e.heapIndex)
	}
	heap.Remove(h, e.heapIndex)
}

func (h *entryHeap) fix(e *entry) { heap.Fix(h, e.heapIndex) }
