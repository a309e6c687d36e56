package route

import "narad/invariant"

// Served is the table of the requests this node serves on behalf of a
// request elsewhere: those a peer forwarded here (kept with their origin,
// where the reply goes) and the parts of its own split requests (kept
// with their continuation). One counter numbers both, so a number is
// never given twice. Only its own methods change it.
type Served[O, C any] struct {
	// lastNumber numbers the requests; only increases.
	lastNumber uint64
	// origins holds the forwarded requests not yet answered, by number.
	origins map[uint64]O
	// continuations holds the parts not yet answered, by number.
	continuations map[uint64]C
}

// NewServed returns an empty table.
func NewServed[O, C any]() *Served[O, C] {
	return &Served[O, C]{origins: map[uint64]O{}, continuations: map[uint64]C{}}
}

// Forwarded numbers a request a peer forwarded, to answer at origin.
func (s *Served[O, C]) Forwarded(origin O) uint64 {
	s.lastNumber++
	_, taken := s.origins[s.lastNumber]
	invariant.Check(!taken, "route: served request %d is taken", s.lastNumber)
	s.origins[s.lastNumber] = origin
	return s.lastNumber
}

// Part numbers a part of one of this node's own requests, whose reply
// goes to continuation.
func (s *Served[O, C]) Part(continuation C) uint64 {
	s.lastNumber++
	_, taken := s.continuations[s.lastNumber]
	invariant.Check(!taken, "route: served part %d is taken", s.lastNumber)
	s.continuations[s.lastNumber] = continuation
	return s.lastNumber
}

// TakeOrigin returns and forgets the origin of forwarded request number.
func (s *Served[O, C]) TakeOrigin(number uint64) (O, bool) {
	origin, ok := s.origins[number]
	delete(s.origins, number)
	return origin, ok
}

// TakeContinuation returns and forgets the continuation of part number.
func (s *Served[O, C]) TakeContinuation(number uint64) (C, bool) {
	continuation, ok := s.continuations[number]
	delete(s.continuations, number)
	return continuation, ok
}

// Empty reports whether no served request waits for its reply.
func (s *Served[O, C]) Empty() bool { return len(s.origins) == 0 && len(s.continuations) == 0 }
