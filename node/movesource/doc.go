// Package movesource is the source side of a partition move: the freeze
// of one partition its owner holds for a move. It is a pure data structure
// of the deterministic core: no goroutines, no clock (time arrives as
// nowMs arguments), no I/O. The node answers the move's requests from the
// partition's log, refuses writes while the partition is frozen, proposes
// the abort a freeze asks for, and answers the freeze requests that wait
// for a sync round; this package only keeps the freeze's state and
// decides.
//
// # The freeze
//
// A destination in Handoff asks the source to freeze the partition for
// its move (named by its target and its start time): from then on the
// source accepts no produce and no commit for it, and its state is final.
// The answer leaves once every record accepted before the freeze is
// durable: the requests wait here until the node's next sync round. A
// freeze asked for another move replaces the current one (a source that
// restarted may hold a freeze for a move its replica has not yet seen
// replaced). The freeze ends when the applied placement shows another
// move, or none (the move completed or was aborted), and asks once for the
// move's abort when it outlives its TTL.
//
// # Invariants
//
//   - A freeze has a target exactly while it holds; its start time and
//     the time it began are those of the latest Begin.
//   - The abort is asked for at most once per freeze.
//   - Waiting requests are answered (taken) in the order they came.
package movesource
