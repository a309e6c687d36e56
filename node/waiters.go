package node

import (
	"cmp"
	"container/heap"
	"slices"
	"sort"

	"narad/invariant"
	"narad/msg"
)

// waiter is a parked long poll.
type waiter struct {
	id         msg.RequestID
	request    msg.Consume
	parkedAtMs int64
	deadlineMs int64
	// heapIndex is the waiter's position in waiterSet.byDeadline.
	heapIndex int
	// probeOwners are the other nodes still to ask in this waiter's
	// current probe round; probing is the node asked now ("" when none).
	// Only route_consume.go changes them.
	probeOwners []string
	probing     string
	// noWait marks a consume that asked not to wait: it is parked only
	// while its probes of other owners are in flight.
	noWait bool
	// capped marks a noWait waiter that asked to wait but found the long
	// polls at WaitersMax: if its probes find nothing it is refused
	// (refuseWait), not answered empty.
	capped bool
	// remoteFirst marks a consume that asked the other owners before this
	// node's partitions (remoteTurn); how its first round ends is
	// recorded (remoteRoundEnded).
	remoteFirst bool
	// arrival is the waiter's place in the order the set's waiters were
	// added: a later one has a larger arrival, and none share one.
	arrival uint64
	// earlier and later are the waiters before and after this one in its
	// group (waiterGroup), oldest first: nil at the group's ends and once
	// the waiter left the set.
	earlier, later *waiter
}

// waiterSet holds the parked long polls: by id, by topic in groups (who
// is served first), and by deadline (who times out first).
//
// The order of serving: a wake (wakeWalk) asks the polls it may serve
// oldest first, by the order they parked in (arrival), across every group
// it walks: an unpinned poll and a poll pinned to a partition that both
// could take a record of that partition are asked in the order they
// parked, so the earliest parked is served first. A wake walks the
// topic's unpinned polls and the polls pinned to the partitions that
// changed (every partition when the cause does not say which): polls
// pinned to another partition could take nothing it made servable, and
// are not looked at.
type waiterSet struct {
	byID map[msg.RequestID]*waiter
	// byTopic groups each topic's waiters; a topic has an entry only
	// while it has a waiter.
	byTopic    map[string]*topicWaiters
	byDeadline waiterHeap
	// waiting counts the waiters that wait (not noWait): the long polls
	// WaitersMax bounds, which the parked-polls metric shows.
	waiting int
	// arrivals is the arrival of the last waiter added; it only grows.
	arrivals uint64
}

// topicWaiters are the waiters of one topic, in the groups a wake asks
// alike: the unpinned polls, and the polls pinned to each partition.
type topicWaiters struct {
	unpinned waiterGroup
	// pinned holds the group of each partition that polls are pinned to;
	// a partition has an entry only while its group is not empty.
	pinned map[int]*waiterGroup
	// count is the number of waiters of all the groups, never zero while
	// the topic is in waiterSet.byTopic.
	count int
}

// waiterGroup lists waiters oldest first, linked through the waiters
// (earlier, later), so that one leaves it in constant time.
type waiterGroup struct {
	// oldest and newest are the ends of the list: both nil when empty.
	oldest, newest *waiter
}

func newWaiterSet() *waiterSet {
	return &waiterSet{byID: map[msg.RequestID]*waiter{}, byTopic: map[string]*topicWaiters{}}
}

func (s *waiterSet) len() int { return len(s.byID) }

// parked is how many long polls wait now: the consumes that asked not to
// wait, held only while their probes are in flight, are not counted.
func (s *waiterSet) parked() int { return s.waiting }

func (s *waiterSet) get(id msg.RequestID) (*waiter, bool) {
	w, ok := s.byID[id]
	return w, ok
}

func (s *waiterSet) add(w *waiter) {
	invariant.Check(s.byID[w.id] == nil, "node: request %d parked twice", w.id)
	s.byID[w.id] = w
	s.arrivals++
	w.arrival = s.arrivals
	topicSet := s.byTopic[w.request.Topic]
	if topicSet == nil {
		topicSet = &topicWaiters{pinned: map[int]*waiterGroup{}}
		s.byTopic[w.request.Topic] = topicSet
	}
	topicSet.groupOf(w.request.Partition, true).append(w)
	topicSet.count++
	heap.Push(&s.byDeadline, w)
	if !w.noWait {
		s.waiting++
	}
}

// remove drops a waiter; it reports whether it was parked. It takes
// constant time but for the deadline heap's logarithm.
func (s *waiterSet) remove(id msg.RequestID) bool {
	w, ok := s.byID[id]
	if !ok {
		return false
	}
	delete(s.byID, id)
	if !w.noWait {
		s.waiting--
	}
	heap.Remove(&s.byDeadline, w.heapIndex)
	topicSet := s.byTopic[w.request.Topic]
	group := topicSet.groupOf(w.request.Partition, false)
	group.unlink(w)
	if group.oldest == nil && w.request.Partition != msg.PartitionNone {
		delete(topicSet.pinned, w.request.Partition)
	}
	topicSet.count--
	if topicSet.count == 0 {
		delete(s.byTopic, w.request.Topic)
	}
	return true
}

// topic returns a copy of the topic's waiters in arrival order.
func (s *waiterSet) topic(name string) []*waiter {
	topicSet := s.byTopic[name]
	if topicSet == nil {
		return nil
	}
	all := topicSet.unpinned.appendTo(make([]*waiter, 0, topicSet.count))
	for _, group := range topicSet.pinned { //determinism:ok sorted by arrival below
		all = group.appendTo(all)
	}
	slices.SortFunc(all, func(a, b *waiter) int { return cmp.Compare(a.arrival, b.arrival) })
	return all
}

// unpinned returns a copy of the topic's unpinned waiters in arrival
// order.
func (s *waiterSet) unpinned(name string) []*waiter {
	if topicSet := s.byTopic[name]; topicSet != nil {
		return topicSet.unpinned.appendTo(nil)
	}
	return nil
}

// firstUnpinned returns the oldest unpinned waiter of the topic that
// matches, nil when none does.
func (s *waiterSet) firstUnpinned(name string, match func(*waiter) bool) *waiter {
	topicSet := s.byTopic[name]
	if topicSet == nil {
		return nil
	}
	for w := topicSet.unpinned.oldest; w != nil; w = w.later {
		if match(w) {
			return w
		}
	}
	return nil
}

// pinnedTo returns a copy of the waiters pinned to a partition of the
// topic, in arrival order.
func (s *waiterSet) pinnedTo(name string, partition int) []*waiter {
	if topicSet := s.byTopic[name]; topicSet != nil {
		if group := topicSet.pinned[partition]; group != nil {
			return group.appendTo(nil)
		}
	}
	return nil
}

// topicNames lists the topics with parked polls, sorted.
func (s *waiterSet) topicNames() []string {
	names := make([]string, 0, len(s.byTopic))
	for name := range s.byTopic { //determinism:ok sorted below
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// removeTopic drops every waiter of a topic and returns their ids in
// arrival order.
func (s *waiterSet) removeTopic(name string) []msg.RequestID {
	var ids []msg.RequestID
	for _, w := range s.topic(name) {
		s.remove(w.id)
		ids = append(ids, w.id)
	}
	return ids
}

// popExpired removes and returns the waiters whose deadline is <= nowMs,
// earliest first.
func (s *waiterSet) popExpired(nowMs int64) []*waiter {
	var out []*waiter
	for len(s.byDeadline) > 0 && s.byDeadline[0].deadlineMs <= nowMs {
		w := s.byDeadline[0]
		s.remove(w.id)
		out = append(out, w)
	}
	return out
}

func (s *waiterSet) nextDeadline() (int64, bool) {
	if len(s.byDeadline) == 0 {
		return 0, false
	}
	return s.byDeadline[0].deadlineMs, true
}

// waiterHeap orders waiters by deadline, then by id so ties are
// deterministic.
type waiterHeap []*waiter

func (h waiterHeap) Len() int { return len(h) }
func (h waiterHeap) Less(i, j int) bool {
	if h[i].deadlineMs != h[j].deadlineMs {
		return h[i].deadlineMs < h[j].deadlineMs
	}
	return h[i].id < h[j].id
}
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.heapIndex = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

// groupOf returns the group of the unpinned polls, or of those pinned to
// partition; a pinned partition's group is made when create is set, and
// must exist otherwise.
func (t *topicWaiters) groupOf(partition int, create bool) *waiterGroup {
	if partition == msg.PartitionNone {
		return &t.unpinned
	}
	group := t.pinned[partition]
	if group == nil {
		invariant.Check(create, "node: no group of polls pinned to partition %d", partition)
		group = &waiterGroup{}
		t.pinned[partition] = group
	}
	return group
}

// append adds w as the group's newest.
func (g *waiterGroup) append(w *waiter) {
	w.earlier, w.later = g.newest, nil
	if g.newest == nil {
		g.oldest = w
	} else {
		g.newest.later = w
	}
	g.newest = w
}

// unlink takes w, which the group holds, out of it.
func (g *waiterGroup) unlink(w *waiter) {
	if w.earlier == nil {
		g.oldest = w.later
	} else {
		w.earlier.later = w.later
	}
	if w.later == nil {
		g.newest = w.earlier
	} else {
		w.later.earlier = w.earlier
	}
	w.earlier, w.later = nil, nil
}

// appendTo appends the group's waiters to out, oldest first.
func (g *waiterGroup) appendTo(out []*waiter) []*waiter {
	for w := g.oldest; w != nil; w = w.later {
		out = append(out, w)
	}
	return out
}
