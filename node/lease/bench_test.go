package lease_test

import (
	"testing"

	"narad/node/lease"
)

// BenchmarkReserveAck measures one Reserve plus one Ack. "in-order" keeps
// one reservation in flight and acks it at once, so the frontier moves
// every time. "scattered-1024" keeps 1024 reservations in flight over an
// HWM far ahead and acks a pseudo-random one each time, so acks land ahead
// of the frontier and collapse later; when the acked-ahead cap stops a
// reservation, the frontier offset is acked first.
func BenchmarkReserveAck(b *testing.B) {
	b.Run("in-order", benchmarkInOrder)
	b.Run("scattered-1024", benchmarkScattered)
}

const benchmarkVisibilityMs = 30_000

func benchmarkInOrder(b *testing.B) {
	table := lease.New(0, 0, lease.Config{InFlightMax: 1024, AckedAheadMax: 1024})
	b.ReportAllocs()
	var hwm uint64
	for i := int64(0); b.Loop(); i++ {
		hwm++
		r, ok := table.Reserve(i, hwm, benchmarkVisibilityMs)
		if !ok {
			b.Fatal("reserve failed")
		}
		if err := table.Ack(r.Offset, r.Nonce, i); err != nil {
			b.Fatal(err)
		}
	}
}

// heldReservations is the benchmark's consumer: the reservations it holds.
type heldReservations struct {
	table    *lease.Table
	held     []lease.Reservation
	xorshift uint64 // deterministic pseudo-random state
}

func (h *heldReservations) reserve() bool {
	r, ok := h.table.Reserve(0, 1<<62, 1<<40)
	if ok {
		h.held = append(h.held, r)
	}
	return ok
}

func (h *heldReservations) ack(b *testing.B, index int) {
	if err := h.table.Ack(h.held[index].Offset, h.held[index].Nonce, 0); err != nil {
		b.Fatal(err)
	}
	h.held[index] = h.held[len(h.held)-1]
	h.held = h.held[:len(h.held)-1]
}

func (h *heldReservations) randomIndex() int {
	h.xorshift ^= h.xorshift << 13
	h.xorshift ^= h.xorshift >> 7
	h.xorshift ^= h.xorshift << 17
	return int(h.xorshift % uint64(len(h.held)))
}

// frontierIndex finds the reservation at the frontier (a linear scan, run
// only when the acked-ahead cap stops the benchmark).
func (h *heldReservations) frontierIndex() int {
	lowest := 0
	for i := range h.held {
		if h.held[i].Offset < h.held[lowest].Offset {
			lowest = i
		}
	}
	return lowest
}

func benchmarkScattered(b *testing.B) {
	const inFlightMax = 1024
	h := &heldReservations{
		table:    lease.New(0, 0, lease.Config{InFlightMax: inFlightMax, AckedAheadMax: 1024}),
		xorshift: 88172645463325252,
	}
	for h.reserve() {
	}
	b.ReportAllocs()
	for b.Loop() {
		if h.table.AckedAhead() == 1024 {
			h.ack(b, h.frontierIndex())
		} else {
			h.ack(b, h.randomIndex())
		}
		for !h.reserve() {
			h.ack(b, h.frontierIndex())
		}
	}
}

// BenchmarkHandle formats one receipt handle and verifies it, as a
// consume and its ack do, with the Handles of one key (as the node).
func BenchmarkHandle(b *testing.B) {
	handles := lease.NewHandles(make([]byte, lease.HandleKeyBytes))
	b.ReportAllocs()
	for i := uint64(1); b.Loop(); i++ {
		handle := handles.Format("orders", 3, i, i)
		if _, _, nonce, err := handles.Verify("orders", handle); err != nil || nonce != i {
			b.Fatalf("handle %q: nonce %d, %v", handle, nonce, err)
		}
	}
}
