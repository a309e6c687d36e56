package node

import (
	"container/heap"
	"fmt"
	"math"
)

// leaseDue orders the partitions whose lease tables hold a reservation
// deadline by a lower bound of their earliest one (partition.leaseDueMs),
// so that lease expiry walks only the partitions that are due: a topic
// with a visibility timeout of a millisecond made the single floor due at
// every tick, and every tick then walked every partition's table.
// It is a binary min-heap by (leaseDueMs, key): ties fall in key order,
// whatever the order of the notes that built it.
type leaseDue struct {
	// heap holds each partition at most once, at index p.leaseDueSlot-1;
	// every tracked partition whose table holds a deadline is in it, and
	// every partition in it is tracked (removePartition takes it out).
	heap []*partition
	// taken is takeDue's answer, its array reused from call to call (a
	// tick due at every millisecond allocates nothing); the caller is
	// done with it before the next call.
	taken []*partition
}

// note lowers p's due time to deadlineMs, putting p in the heap if it is
// not there. A due time only comes down here: acks and lapses leave it
// low, which costs p one look that finds nothing.
func (d *leaseDue) note(p *partition, deadlineMs int64) {
	switch {
	case p.leaseDueSlot == 0:
		p.leaseDueMs = deadlineMs
		heap.Push(d, p)
	case deadlineMs < p.leaseDueMs:
		p.leaseDueMs = deadlineMs
		heap.Fix(d, p.leaseDueSlot-1)
	}
}

// remove takes p out of the heap, if it is there.
func (d *leaseDue) remove(p *partition) {
	if p.leaseDueSlot != 0 {
		heap.Remove(d, p.leaseDueSlot-1)
	}
}

// nextMs is the earliest due time (math.MaxInt64: none).
func (d *leaseDue) nextMs() int64 {
	if len(d.heap) == 0 {
		return math.MaxInt64
	}
	return d.heap[0].leaseDueMs
}

// takeDue takes the partitions due by nowMs out of the heap, earliest
// first. The slice is valid until the next call.
func (d *leaseDue) takeDue(nowMs int64) []*partition {
	clear(d.taken) // keeps no partition of the last call alive
	d.taken = d.taken[:0]
	for len(d.heap) > 0 && d.heap[0].leaseDueMs <= nowMs {
		d.taken = append(d.taken, heap.Pop(d).(*partition))
	}
	return d.taken
}

// check verifies the heap's order and slots.
func (d *leaseDue) check() error {
	for i, p := range d.heap {
		if p.leaseDueSlot != i+1 {
			return fmt.Errorf("node: %s is at %d of the lease due heap, its slot says %d", p.dir, i, p.leaseDueSlot-1)
		}
		if i > 0 && d.Less(i, (i-1)/2) {
			return fmt.Errorf("node: %s is due before its parent in the lease due heap", p.dir)
		}
	}
	return nil
}

// Len, Less, Swap, Push and Pop are heap.Interface; only leaseDue's
// methods call the heap package.
func (d *leaseDue) Len() int { return len(d.heap) }

func (d *leaseDue) Less(i, j int) bool {
	a, b := d.heap[i], d.heap[j]
	if a.leaseDueMs != b.leaseDueMs {
		return a.leaseDueMs < b.leaseDueMs
	}
	return compareKeys(a.key, b.key) < 0
}

func (d *leaseDue) Swap(i, j int) {
	d.heap[i], d.heap[j] = d.heap[j], d.heap[i]
	d.heap[i].leaseDueSlot, d.heap[j].leaseDueSlot = i+1, j+1
}

func (d *leaseDue) Push(x any) {
	p := x.(*partition)
	d.heap = append(d.heap, p)
	p.leaseDueSlot = len(d.heap)
}

func (d *leaseDue) Pop() any {
	last := len(d.heap) - 1
	p := d.heap[last]
	d.heap[last] = nil // keeps no removed partition alive
	d.heap = d.heap[:last]
	p.leaseDueSlot = 0
	return p
}
