package meta

import "fmt"

// assert panics when an invariant is broken: a bug in meta or in its
// driver, never an expected condition (those are returned as errors). The
// message says what broke and with which values.
func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("meta: invariant broken: "+format, args...))
	}
}
