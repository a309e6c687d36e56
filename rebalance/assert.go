package rebalance

import "fmt"

// assert panics when an invariant of the planner is broken: a bug in move,
// never a property of its input (Validate returns those as errors). The
// message says what broke and with which values.
//
// The arguments are boxed before the call whether or not ok holds, so a
// check that runs once per partition is written as `if broken {
// panicBroken(...) }` instead, which allocates only when it fires.
func assert(ok bool, format string, args ...any) {
	if !ok {
		panicBroken(format, args...)
	}
}

// panicBroken panics with the message of a broken invariant.
func panicBroken(format string, args ...any) {
	panic(fmt.Sprintf("rebalance: invariant broken: "+format, args...))
}
