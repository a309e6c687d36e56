package node

import (
	"container/heap"
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
}

// waiterSet holds the parked long polls: by id, by topic in arrival order
// (who is served first), and by deadline (who times out first).
type waiterSet struct {
	byID       map[msg.RequestID]*waiter
	byTopic    map[string][]*waiter
	byDeadline waiterHeap
	// waiting counts the waiters that wait (not noWait): the long polls
	// WaitersMax bounds, which the parked-polls metric shows.
	waiting int
}

func newWaiterSet() *waiterSet {
	return &waiterSet{byID: map[msg.RequestID]*waiter{}, byTopic: map[string][]*waiter{}}
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
	s.byTopic[w.request.Topic] = append(s.byTopic[w.request.Topic], w)
	heap.Push(&s.byDeadline, w)
	if !w.noWait {
		s.waiting++
	}
}

// remove drops a waiter; it reports whether it was parked.
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
	list := s.byTopic[w.request.Topic]
	for i, other := range list {
		if other == w {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.byTopic, w.request.Topic)
	} else {
		s.byTopic[w.request.Topic] = list
	}
	return true
}

// topic returns a copy of the topic's waiters in arrival order.
func (s *waiterSet) topic(name string) []*waiter {
	return append([]*waiter(nil), s.byTopic[name]...)
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
