package node

import "fmt"

// assert panics when an invariant is broken: a bug, never an expected
// condition (those are returned as errors).
func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("invariant broken: "+format, args...))
	}
}
