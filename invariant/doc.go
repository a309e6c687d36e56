// Package invariant is the one assertion helper of the deterministic core
// (node and its sub-packages, meta, rebalance, storage). An assertion
// states a property the code relies on; when it does not hold the program
// has a bug, so the check panics with a message that names what broke and
// with which values. Expected conditions (a full disk, a bad request, a
// peer that does not answer) are errors, never assertions.
//
// There are two forms:
//
//   - Check (and Broken, for the `if broken { ... }` form of hot paths,
//     which boxes its arguments only when it fires) is cheap and always
//     on: a comparison or two, run in production too.
//   - Costly is for checks that walk whole structures. Its function runs
//     only in a build with the "invariants" tag (the simulator's sweeps
//     and `go test -tags invariants`); otherwise it is not called at all.
//     Enabled reports which build this is, for callers that gate a loop.
//
// The package imports nothing of this module, so every package may use it.
package invariant
