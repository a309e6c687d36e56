// Package soak is the real-process chaos soak (docs/operations.md#the-soak).
// The simulator proves the protocol; this proves the binary, on real
// processes, files, sockets and clocks.
//
// What it owns: a run directory holding one data directory and one log per
// node, and the ledger (ledger.ndjson: one JSON line per record answered
// 202). It starts `narad serve` processes on loopback (through narad/proc,
// the harness it shares with e2e and `narad cluster up`), drives load
// through the HTTP API, injects a scripted and seeded scenario of faults,
// and audits the result. It imports narad/client to talk to the nodes, and
// narad/config only to read which variables and defaults the binary has.
//
// Inputs: Options (scenario, duration, seed, node count, the binary and
// the directory). `go test ./soak -run TestSoak` takes them as
// flags (-scenario, -duration, -seed, -nodes, -dir, -keep, -binary,
// -heartbeat-interval, -member-dead-after, -force-promote-after); `make
// soak DURATION=…` runs it, and `make test` runs the short version
// (-duration=0: one cycle, with short heartbeat, dead-after and
// force-promote timings).
//
// The load: producers send single records (half keyed) and NDJSON batches
// of keyless records to the hot topic through nodes drawn from the
// rotation, each request again (same records) until it is answered 202;
// consumers consume one message or a batch and ack it. Every payload
// starts with "soak:<id>;", so any record read back names itself. A cold
// topic is filled once before the faults and never written again. The
// hot topic has a fan-out child and a dead-letter topic (max_deliveries
// 4): its consumers never ack a fixed 2% of its records (poison, chosen
// by a hash of the id), half of them nacking such a record, half letting
// its lease lapse, so those records exhaust their deliveries and move to
// the dead-letter topic; one consumer each drains the child and the
// dead-letter topic. The moves of the scenario move the partitions of all
// four topics, fan-out cursors and delivery counts with them.
//
// The scenarios:
//   - full: cycles of kill -9 of a follower, kill -9 of the metadata
//     leader, a rolling restart (SIGTERM), a scale-up by a new node that
//     joins and receives partitions, a decommission under load, and forced
//     recovery (a second scale-up, then a decommission during which the
//     destination of one of the node's partitions is killed after the
//     node froze it, and the node itself is killed once the restarted
//     destination holds a complete copy of the frozen state; it stays
//     down until the destination force-promotes the copy; forced.go
//     explains why it takes two failures and how the instants are
//     found). Cycles repeat until Duration is spent; Duration 0 runs one
//     cycle with short pauses. A short run skips the
//     forced recovery when the binary does not read EnvHeartbeatInterval,
//     EnvMemberDeadAfter and EnvForcePromoteAfter, since the default
//     delays take minutes.
//   - decommission: steady load (for Duration), one decommission,
//     nothing else; any produce refused or unanswered fails the run.
//
// Outputs: a Report. At the end the consumers drain (every record
// answered 202 consumed, its copy consumed from the child, every poison
// or exhausted record consumed from the dead-letter topic), the placement
// settles, and the audit replays every partition of every topic from its
// oldest offset to its high watermark: every record answered 202 must be
// found ("audit: N of N records durable", then per topic), at the offset
// its 202 named. Per topic as well: every record of the hot topic
// answered 202 is in the child at least once, with its key (a copy is
// known by its payload), and the child holds nothing the hot topic does
// not; every record that exhausted its deliveries (a poison record, or
// one a consumer received at the limit and did not ack, or whose ack was
// answered with a failure, unless a later ack took it after a restart
// started its count over) is in the dead-letter topic, or still
// delivered from the hot topic after the load stopped;
// every dead letter's dead_letter origin names the place in the hot
// topic that holds the same record and key, with at least max_deliveries
// deliveries; and no dead letter is of a record that was neither poison
// nor received by a consumer at the limit.
// The report adds duplicates (ids stored more than once), records stored
// without a 202, produce requests refused (by status) and unanswered
// (those whose connect a node that was down refused counted apart),
// deliveries, moves by outcome and freeze durations (from the nodes' JSON
// logs), node events by kind, and each step's outcome.
//
// Invariants: every wait is bounded (limits.go); a node id is never
// reused (raft ids may not come back); a process stopped with SIGSTOP is
// always resumed or killed before the step ends; a broker process that
// exits without being asked to is a failure and is restarted. A failed
// run keeps its directory and prints where.
package soak
