package lease

import "fmt"

// brokenInvariant panics with a message naming the invariant that broke and
// the values involved. It is this package's one assert helper. Callers test
// the invariant inline, as in
//
//	if e.heapIndex != -1 {
//		brokenInvariant("entry %d left its heap ...", e.offset)
//	}
//
// rather than through an assert(ok, format, args...) function, because the
// arguments of such a call are boxed on every call, failing or not, and
// these checks run on every reservation and ack.
func brokenInvariant(format string, args ...any) {
	panic(fmt.Sprintf("lease: invariant broken: "+format, args...))
}
