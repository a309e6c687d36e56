// Package chaos holds the fault-injection sites and coverage marks that the
// deterministic core calls, and the planted bugs that prove the simulator
// can fail.
//
//   - Reached(mark) records that a rare path ran ("sometimes" coverage, as
//     FoundationDB's CODE_PROBE). The simulator collects marks per run and a
//     long sweep fails if a mark it expects was never reached.
//   - Buggify(site) returns true when the simulator has switched fault
//     injection on for this run and the site fires (FoundationDB's BUGGIFY).
//   - Planted(bug) returns true only in a binary built with the
//     `plantedbugs` build tag, in which a test has planted that bug.
//     Production builds cannot plant bugs: the function is constant false.
//
// Outside the simulator nothing is switched on and each call is a load and
// a branch. The state is package-level because the core cannot be handed
// it without threading it through every call; the simulator runs one world
// at a time per process and resets it between runs (Reset).
package chaos
