package meta

import "narad/invariant"

// assert panics when an invariant is broken: a bug in meta or in its
// driver, never an expected condition (those are returned as errors). It
// goes through the core's one helper (package invariant) with the
// package's name first; the message says what broke and with which values.
func assert(ok bool, format string, args ...any) {
	if !ok {
		invariant.Broken("meta: "+format, args...)
	}
}
