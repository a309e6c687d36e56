// Package sim is the deterministic simulator: a whole Narad world — nodes
// running the real node code, clients speaking HTTP through httpapi's
// decoder and encoder, a network, crash-model disks and a clock — in one
// goroutine, driven by one seed.
//
// # The world
//
// Events (request arrivals, replies, ticks, sync completions, faults) sit
// in one queue ordered by simulated time, ties broken by insertion order,
// so a seed always replays the same way. The simulator is the node's
// second driver (host is the first): it handles each Ready in the
// contract's order — persist, then send replies, then Advance — but lets a
// sync round take simulated time, during which requests queue at the node
// (group commit, as in production) and a crash can land.
//
// Faults are drawn from the seed by profile (-faults): node crashes (the
// node is dropped and its disk loses unsynced writes, possibly tearing the
// last one), restarts, graceful stops, fsync and write failures, and lost
// or slow client messages. A run has a safety phase (faults on) and a
// liveness phase (every node up, faults off, producers stopped, consumers
// draining), as TigerBeetle's VOPR does.
//
// # What it checks
//
//   - After every step, an omniscient state checker: a partition's visible
//     high-watermark never exceeds what is durable and never falls below
//     it; the committed consumer offset never falls below what was
//     persisted and never passes the high-watermark; an acknowledged
//     produce is durable when its 202 leaves.
//   - At the end, Jepsen-style accounting over unique message ids: lost
//     (answered 202, never consumed), unexpected (consumed, never
//     produced), duplicated and recovered.
//   - Log consistency with porcupine over every append and replay read of
//     each partition: an offset once read always holds the same record,
//     and a partition's visible prefix never shrinks.
//   - Liveness: once faults stop, requests succeed again and the backlog
//     drains.
//
// `go test ./sim -seed=N` runs one seed and prints its trace hash;
// `-seeds=K` sweeps; a failure prints the seed, the checker, the last
// events, and the command that reproduces it.
package sim
