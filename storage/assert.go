package storage

import "fmt"

// assert panics when an invariant of this package is broken. The message
// must name what broke and the values involved, so that a panic in a test or
// in the simulator explains itself without a debugger. Expected conditions
// (a full disk, a corrupt frame, a bad argument from the network) are
// returned as errors instead and never come here.
func assert(condition bool, format string, args ...any) {
	if !condition {
		panic(fmt.Sprintf("storage: invariant broken: "+format, args...))
	}
}
