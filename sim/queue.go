package sim

import "container/heap"

// event is something that happens at a simulated instant. seq is the
// insertion counter: equal times pop in insertion order, so the order of
// events depends only on the seed.
type event struct {
	atMs int64
	seq  uint64
	run  func()
}

type eventQueue struct {
	items   eventHeap
	nextSeq uint64
}

func (q *eventQueue) push(atMs int64, run func()) {
	q.nextSeq++
	heap.Push(&q.items, &event{atMs: atMs, seq: q.nextSeq, run: run})
}

func (q *eventQueue) pop() *event { return heap.Pop(&q.items).(*event) }
func (q *eventQueue) len() int    { return len(q.items) }
func (q *eventQueue) peekMs() int64 {
	return q.items[0].atMs
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].atMs != h[j].atMs {
		return h[i].atMs < h[j].atMs
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
