package route

import (
	"math"
	"slices"

	"narad/chaos"
	"narad/invariant"
)

// Forward is one request this node forwarded and waits to hear about.
type Forward[C any] struct {
	// To is the peer asked.
	To string
	// DeadlineMs is when the forward times out.
	DeadlineMs int64
	// Continuation is the node's handler of the answer.
	Continuation C
}

// Forwards is the table of outstanding forwards, and of the peers marked
// down. Only its own methods change it; the node owns it.
type Forwards[C any] struct {
	// outgoing holds the forwards awaiting a reply, by id.
	outgoing map[uint64]Forward[C]
	// lastID numbers forwards; only increases.
	lastID uint64
	// downUntilMs holds the peers marked down, until when.
	downUntilMs map[string]int64
	// dueFromMs is a time before which no outstanding forward is due: the
	// earliest deadline Due saw, lowered by each Start since (a forward
	// that goes leaves it low, which costs Due a look, never a miss).
	dueFromMs int64
}

// NewForwards returns an empty table whose ids start above base.
func NewForwards[C any](base uint64) *Forwards[C] {
	return &Forwards[C]{outgoing: map[uint64]Forward[C]{}, lastID: base, downUntilMs: map[string]int64{}}
}

// Renumber makes the next ids start above base: a node draws a new base
// at every start. Ids never go down.
func (f *Forwards[C]) Renumber(base uint64) {
	invariant.Check(base >= f.lastID, "route: forward ids would go back from %d to %d", f.lastID, base)
	f.lastID = base
}

// Start records a forward to peer to, due at deadlineMs, and returns its
// id.
func (f *Forwards[C]) Start(to string, deadlineMs int64, continuation C) uint64 {
	f.lastID++
	_, taken := f.outgoing[f.lastID]
	invariant.Check(!taken && to != "", "route: forward %d to %q is taken or has no peer", f.lastID, to)
	f.outgoing[f.lastID] = Forward[C]{To: to, DeadlineMs: deadlineMs, Continuation: continuation}
	f.dueFromMs = min(f.dueFromMs, deadlineMs)
	return f.lastID
}

// Answered takes the forward a reply from peer from answers: it is
// removed, and the peer's down mark cleared. A reply with an unknown id
// (answered, timed out, or of an earlier incarnation) or from another
// peer than the one asked is dropped: ok is false. So is one that fault
// site SiteRouteReplyDropped loses on the way (only in the simulator):
// its forward then times out.
func (f *Forwards[C]) Answered(from string, id uint64) (continuation C, ok bool) {
	forward, found := f.outgoing[id]
	if !found || forward.To != from || chaos.Buggify(chaos.SiteRouteReplyDropped) {
		return continuation, false
	}
	delete(f.outgoing, id)
	delete(f.downUntilMs, from)
	return forward.Continuation, true
}

// Due returns the ids of the forwards whose deadline is at or before
// nowMs, in increasing order. The node asks at every tick: before
// dueFromMs it looks at none of them.
func (f *Forwards[C]) Due(nowMs int64) []uint64 {
	if nowMs < f.dueFromMs {
		return nil
	}
	var due []uint64
	f.dueFromMs = math.MaxInt64
	for id, forward := range f.outgoing { //determinism:ok collected then sorted
		if forward.DeadlineMs <= nowMs {
			due = append(due, id)
		}
		f.dueFromMs = min(f.dueFromMs, forward.DeadlineMs)
	}
	slices.Sort(due)
	return due
}

// TimeOut removes a due forward and marks its peer down until
// nowMs+downForMs.
func (f *Forwards[C]) TimeOut(id uint64, nowMs, downForMs int64) Forward[C] {
	forward, found := f.outgoing[id]
	invariant.Check(found && forward.DeadlineMs <= nowMs, "route: forward %d times out at %d but is not due (found %t)", id, nowMs, found)
	delete(f.outgoing, id)
	f.downUntilMs[forward.To] = nowMs + downForMs
	return forward
}

// Unreachable marks peer down until nowMs+downForMs and removes the
// forwards waiting on it, which it returns in id order: they fail now
// instead of at their deadline.
func (f *Forwards[C]) Unreachable(peer string, nowMs, downForMs int64) []Forward[C] {
	f.downUntilMs[peer] = nowMs + downForMs
	var lost []uint64
	for id, forward := range f.outgoing { //determinism:ok collected then sorted
		if forward.To == peer {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	forwards := make([]Forward[C], 0, len(lost))
	for _, id := range lost {
		forwards = append(forwards, f.outgoing[id])
		delete(f.outgoing, id)
	}
	return forwards
}

// Heard clears peer's down mark: any message proves it is up again.
func (f *Forwards[C]) Heard(peer string) { delete(f.downUntilMs, peer) }

// Reachable reports whether forwards to peer may be tried at nowMs.
func (f *Forwards[C]) Reachable(peer string, nowMs int64) bool {
	until, down := f.downUntilMs[peer]
	return !down || until <= nowMs
}

// NextDeadline returns the earliest deadline of an outstanding forward.
func (f *Forwards[C]) NextDeadline() (int64, bool) {
	next, found := int64(0), false
	for _, forward := range f.outgoing { //determinism:ok a minimum does not depend on order
		if !found || forward.DeadlineMs < next {
			next, found = forward.DeadlineMs, true
		}
	}
	return next, found
}

// LastID is the id of the latest forward (the base before the first).
func (f *Forwards[C]) LastID() uint64 { return f.lastID }

// Pending returns the ids of the outstanding forwards, in increasing
// order.
func (f *Forwards[C]) Pending() []uint64 {
	ids := make([]uint64, 0, len(f.outgoing))
	for id := range f.outgoing { //determinism:ok sorted below
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
