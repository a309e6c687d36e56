package auth

import (
	"container/heap"
	"net/netip"
	"time"
)

// ipv6SourcePrefixBits is the part of an IPv6 address that names a
// source: one host is commonly handed a whole /64, so counting single
// addresses would give it 2^64 fresh buckets.
const ipv6SourcePrefixBits = 64

// Source is the client address that failed credential checks count
// against (docs/api.md#authentication): an IPv4 address, or the /64
// prefix of an IPv6 one. It comes from the connection, never from a
// header such as X-Forwarded-For, which any client can write.
type Source struct {
	// prefix is an IPv4 /32 or an IPv6 /64, masked, without a zone; the
	// zero Prefix for every address that could not be read, which then
	// share one bucket.
	prefix netip.Prefix
}

// SourceOf returns the source of a connection's remote address, as
// net.Conn.RemoteAddr().String() and http.Request.RemoteAddr give it
// ("192.0.2.1:1234", "[2001:db8::1]:1234").
func SourceOf(remoteAddr string) Source {
	addrPort, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return Source{}
	}
	return SourceOfAddr(addrPort.Addr())
}

// SourceOfAddr returns the source of a client's IP address; an IPv4
// address mapped into IPv6 counts as the IPv4 one.
func SourceOfAddr(addr netip.Addr) Source {
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = ipv6SourcePrefixBits
	}
	prefix, err := addr.Prefix(bits)
	if err != nil { // the zero Addr
		return Source{}
	}
	return Source{prefix: prefix}
}

// String is the address or prefix, or "unknown".
func (s Source) String() string {
	if !s.prefix.IsValid() {
		return "unknown"
	}
	if s.prefix.Addr().Is4() {
		return s.prefix.Addr().String()
	}
	return s.prefix.String()
}

// sourceBuckets are the buckets of failed attempts of the sources whose
// bucket is not full; a source absent has a full one. A bucket is kept as
// the time it will be full again: with burst b and one token back every
// r, it holds b - (fullAt - now)/r tokens at now, at most b. Ordered by
// that time the buckets are ordered by their tokens at any instant, so a
// min-heap on it has the fullest on top: the first to drop when full
// (Config.SourcesMax), since it failed least lately. Not safe for
// concurrent use (Authenticator.mu guards it).
type sourceBuckets struct {
	// burst (> 0) is the tokens of a full bucket.
	burst int
	// refill (> 0) is the time one token takes to come back.
	refill time.Duration
	// sourcesMax (> 0) bounds len(bySource).
	sourcesMax int
	// bySource maps each source of byFullAt to its bucket; the same
	// buckets as byFullAt.
	bySource map[Source]*sourceBucket
	// byFullAt is a min-heap of the buckets on fullAt.
	byFullAt sourceHeap
}

// sourceBucket is the bucket of source, full again at fullAt.
type sourceBucket struct {
	source Source
	fullAt time.Time
	// index is the bucket's position in sourceBuckets.byFullAt.
	index int
}

func newSourceBuckets(burst int, refill time.Duration, sourcesMax int) *sourceBuckets {
	return &sourceBuckets{burst: burst, refill: refill, sourcesMax: sourcesMax, bySource: map[Source]*sourceBucket{}}
}

// take takes a token from the bucket of source; false when it holds
// none. A source new to a full table takes the place of the fullest
// bucket: the table never grows past sourcesMax, and a new address is
// never refused for want of room.
func (s *sourceBuckets) take(source Source, now time.Time) bool {
	s.dropFull(now)
	b, present := s.bySource[source]
	if !present {
		if len(s.bySource) >= s.sourcesMax {
			s.remove(s.byFullAt[0])
		}
		b = &sourceBucket{source: source, fullAt: now}
		s.bySource[source] = b
		heap.Push(&s.byFullAt, b)
	}
	if !s.holdsToken(b, now) {
		return false
	}
	b.fullAt = later(b.fullAt, now).Add(s.refill)
	heap.Fix(&s.byFullAt, b.index)
	return true
}

// allows reports whether the bucket of source holds a token, taking none.
func (s *sourceBuckets) allows(source Source, now time.Time) bool {
	b, present := s.bySource[source]
	return !present || s.holdsToken(b, now)
}

// holdsToken: a bucket full again at fullAt holds a token while it is
// at most burst-1 refills from full.
func (s *sourceBuckets) holdsToken(b *sourceBucket, now time.Time) bool {
	return later(b.fullAt, now).Sub(now) <= time.Duration(s.burst-1)*s.refill
}

func later(t, u time.Time) time.Time {
	if t.After(u) {
		return t
	}
	return u
}

// refund gives back the token of an attempt that did not fail.
func (s *sourceBuckets) refund(source Source, now time.Time) {
	b, present := s.bySource[source]
	if !present {
		return // dropped to make room: as full as it gets
	}
	b.fullAt = b.fullAt.Add(-s.refill)
	if !b.fullAt.After(now) {
		s.remove(b) // full: the same as absent
		return
	}
	heap.Fix(&s.byFullAt, b.index)
}

// dropFull drops the buckets that are full again.
func (s *sourceBuckets) dropFull(now time.Time) {
	for len(s.byFullAt) > 0 && !s.byFullAt[0].fullAt.After(now) {
		s.remove(s.byFullAt[0])
	}
}

func (s *sourceBuckets) remove(b *sourceBucket) {
	heap.Remove(&s.byFullAt, b.index)
	delete(s.bySource, b.source)
}

// tokens is what the bucket of source holds at now.
func (s *sourceBuckets) tokens(source Source, now time.Time) float64 {
	b, present := s.bySource[source]
	if !present || !b.fullAt.After(now) {
		return float64(s.burst)
	}
	return float64(s.burst) - b.fullAt.Sub(now).Seconds()/s.refill.Seconds()
}

func (s *sourceBuckets) len() int { return len(s.bySource) }

// sourceHeap implements heap.Interface on fullAt, keeping each bucket's
// index.
type sourceHeap []*sourceBucket

func (h sourceHeap) Len() int           { return len(h) }
func (h sourceHeap) Less(i, j int) bool { return h[i].fullAt.Before(h[j].fullAt) }
func (h sourceHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *sourceHeap) Push(x any) {
	b := x.(*sourceBucket)
	b.index = len(*h)
	*h = append(*h, b)
}

func (h *sourceHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return b
}
