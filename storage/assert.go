package storage

import "narad/invariant"

// assert panics when an invariant of this package is broken, through the
// core's one helper (package invariant) with the package's name first. The
// message must name what broke and the values involved, so that a panic in
// a test or in the simulator explains itself without a debugger. Expected
// conditions (a full disk, a corrupt frame, a bad argument from the
// network) are returned as errors instead and never come here.
func assert(condition bool, format string, args ...any) {
	if !condition {
		invariant.Broken("storage: "+format, args...)
	}
}
