package node

import (
	"container/heap"
	"slices"

	"narad/invariant"
)

// wakeWalk hands a wake the parked polls of a topic it may serve, oldest
// first across the groups it walks (the order of serving: waiterSet).
// A poll not served (it found nothing) takes its group out of the walk:
// the polls after it in the group ask for the same partitions and would
// find nothing either, as serving a poll only takes records. So a wake
// costs one look per group that found nothing, not one per poll, and
// the groups it does not walk cost nothing at all.
type wakeWalk struct {
	set *waiterSet
	// heads holds, for each group still in the walk, its oldest waiter
	// not handed out yet, ordered by arrival.
	heads arrivalHeap
	// current is the waiter next returned last; nil before the first and
	// once served.
	current *waiter
}

// wakeAll walks the topic's unpinned polls and those pinned to any of
// its partitions: a wake whose cause names no partition.
func (s *waiterSet) wakeAll(name string) wakeWalk {
	walk := wakeWalk{set: s}
	topicSet := s.byTopic[name]
	if topicSet == nil {
		return walk
	}
	walk.heads = make(arrivalHeap, 0, len(topicSet.pinned)+1)
	if topicSet.unpinned.oldest != nil {
		walk.heads = append(walk.heads, topicSet.unpinned.oldest)
	}
	for _, group := range topicSet.pinned { //determinism:ok the heap orders the heads by arrival, unique
		walk.heads = append(walk.heads, group.oldest)
	}
	heap.Init(&walk.heads) // in linear time: a push per group was a twentieth of a wake of 107 groups
	return walk
}

// wakeOf walks the topic's unpinned polls and those pinned to the given
// partitions (a partition named twice is walked once): a wake for
// records that became servable there and nowhere else.
func (s *waiterSet) wakeOf(name string, partitions []int) wakeWalk {
	walk := wakeWalk{set: s}
	topicSet := s.byTopic[name]
	if topicSet == nil {
		return walk
	}
	walk.start(topicSet.unpinned.oldest)
	for _, partition := range slices.Compact(slices.Sorted(slices.Values(partitions))) {
		if group := topicSet.pinned[partition]; group != nil {
			walk.start(group.oldest)
		}
	}
	return walk
}

// start adds a group to the walk by its oldest waiter (nil: an empty
// group, left out).
func (k *wakeWalk) start(oldest *waiter) {
	if oldest != nil {
		heap.Push(&k.heads, oldest)
	}
}

// next returns the oldest waiter of the groups still in the walk; ok is
// false once none is left. Unless served is called before the next call,
// the waiter's group leaves the walk.
func (k *wakeWalk) next() (w *waiter, ok bool) {
	if len(k.heads) == 0 {
		k.current = nil
		return nil, false
	}
	w = heap.Pop(&k.heads).(*waiter)
	invariant.Check(k.set.byID[w.id] == w, "node: a wake walked to request %d, no longer parked", w.id)
	k.current = w
	return w, true
}

// served removes the waiter next returned last from the set (the caller
// answers it), and the group goes on with the waiter after it.
func (k *wakeWalk) served() {
	w := k.current
	invariant.Check(w != nil, "node: a wake served no waiter")
	later := w.later
	k.set.remove(w.id)
	k.current = nil
	k.start(later)
}

// arrivalHeap orders waiters by arrival, oldest first.
type arrivalHeap []*waiter

func (h arrivalHeap) Len() int           { return len(h) }
func (h arrivalHeap) Less(i, j int) bool { return h[i].arrival < h[j].arrival }
func (h arrivalHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *arrivalHeap) Push(x any)        { *h = append(*h, x.(*waiter)) }
func (h *arrivalHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
