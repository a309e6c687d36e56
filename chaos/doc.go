// Package chaos holds what the deterministic core calls to be tested by
// the simulator: coverage marks, fault-injection sites, and the planted
// bugs that prove the simulator can fail.
//
//   - Reached(mark) records that a rare path ran ("sometimes" coverage, as
//     FoundationDB's CODE_PROBE). Every mark of the core is a constant of
//     type Mark declared in marks.go with what reaching it means, and
//     listed in Registered; the lint test refuses a call of Reached in the
//     core that names anything else. The simulator collects marks per run,
//     a long sweep fails if a mark it requires was never reached, and a
//     test of the simulator checks that every registered mark is required
//     by a sweep or excused with a reason.
//   - Buggify(site) returns true when the simulator has switched fault
//     injection on for this run and the site fires (FoundationDB's
//     BUGGIFY). Every site is a constant of type Site declared in
//     sites.go with the fault it injects (a delay, a loss or a duplicate
//     the real world could produce), and listed by Sites; the lint test
//     refuses a site of the core made up from a string, and a registered
//     site no core code names. The simulator reads the firings with Fired.
//   - Planted(bug) returns true only in a binary built with the
//     `plantedbugs` build tag, in which a test has planted that bug.
//     Production builds cannot plant bugs: the function is constant false.
//
// Outside the simulator nothing is switched on and each call is a load and
// a branch. The state is package-level because the core cannot be handed
// it without threading it through every call; the simulator runs one world
// at a time per process and resets it between runs (Reset).
package chaos
