package invariant

import "fmt"

// prefix starts every message of a broken invariant, so that a panic in a
// test or in the simulator is recognised as one.
const prefix = "invariant broken: "

// Check panics when ok is false. The message is format with args; by
// convention it starts with the package's name ("node: ...").
//
// The arguments are boxed on every call, failing or not: a check that runs
// once per record or per offset is written as `if broken { Broken(...) }`.
func Check(ok bool, format string, args ...any) {
	if !ok {
		Broken(format, args...)
	}
}

// Broken panics with the message of a broken invariant.
func Broken(format string, args ...any) {
	panic(fmt.Sprintf(prefix+format, args...))
}

// Costly runs check when the build has the "invariants" tag, and panics
// with its error if it returns one; otherwise it does nothing. Use it for
// checks that cost more than the operation they guard.
func Costly(check func() error) {
	if !Enabled {
		return
	}
	if err := check(); err != nil {
		Broken("%v", err)
	}
}
