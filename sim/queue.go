package sim

// event is something that happens at a simulated instant. seq is the
// insertion counter: equal times pop in insertion order, so the order of
// events depends only on the seed.
type event struct {
	atMs int64
	seq  uint64
	run  func()
}

// before is the queue's order: by time, then by insertion.
func (e *event) before(other *event) bool {
	if e.atMs != other.atMs {
		return e.atMs < other.atMs
	}
	return e.seq < other.seq
}

// eventQueue is a binary min-heap of events by value, in the order of
// before: a run pushes and pops an event for every message and tick, so
// it neither allocates an event nor goes through container/heap's
// interface. Invariant: items[i] is not after either of its children
// items[2i+1] and items[2i+2].
type eventQueue struct {
	items   []event
	nextSeq uint64
}

func (q *eventQueue) push(atMs int64, run func()) {
	q.nextSeq++
	q.items = append(q.items, event{atMs: atMs, seq: q.nextSeq, run: run})
	q.up(len(q.items) - 1)
}

// pop removes and returns the first event.
func (q *eventQueue) pop() event {
	first := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items[last] = event{} // drop the closure for the collector
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return first
}

func (q *eventQueue) len() int { return len(q.items) }

func (q *eventQueue) peekMs() int64 { return q.items[0].atMs }

// up moves items[i] towards the root until its parent is before it. The
// moving event is held aside and written once, where it stops: the
// parents it passes each move down one level, instead of a swap each.
func (q *eventQueue) up(i int) {
	moving := q.items[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !moving.before(&q.items[parent]) {
			break
		}
		q.items[i] = q.items[parent]
		i = parent
	}
	q.items[i] = moving
}

// down moves items[i] towards the leaves until it is before its children,
// held aside as up does.
func (q *eventQueue) down(i int) {
	n := len(q.items)
	moving := q.items[i]
	for {
		first := 2*i + 1
		if first >= n {
			break
		}
		if right := first + 1; right < n && q.items[right].before(&q.items[first]) {
			first = right
		}
		if !q.items[first].before(&moving) {
			break
		}
		q.items[i] = q.items[first]
		i = first
	}
	q.items[i] = moving
}
