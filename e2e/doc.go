// Package e2e holds tests that run the real narad binary as separate
// processes on loopback: crash recovery of one node with kill -9, graceful
// shutdown, a three-process cluster that loses a follower and then its
// metadata leader to kill -9 under load (every record answered 202 must
// still be consumed; the metadata failover time is logged), a cluster
// that grows by a fourth node and then decommissions one under load (no
// produce refused, every record consumed and found by replay where its
// 202 said; the moves' freezes, copy rate and phase times are logged), a
// decommissioned node's readiness, a schema change made through one node
// that every node enforces as soon as it applied it (forwarded partitions
// included), a fan-out parent whose partition's owner is decommissioned
// (every record reaches the children, the delay child no earlier than
// due), dead letters across a decommission of their source partition's
// owner (a record's delivery count moves with the partition; each
// exhausted record reaches the dead-letter topic once, with its origin),
// and `narad cluster up`. The move of
// one large partition (make move-bench) runs only when NARAD_MOVE_BENCH
// is set. Every test bounds its run time and the number of requests it
// sends, and talks to 127.0.0.1 only. A failed cluster test keeps its
// nodes' data directories and logs and prints where they are.
//
// The processes are started, probed, killed and restarted through
// narad/proc, which also reads their /metrics (Prometheus text, parsed
// with expfmt) and their JSON logs; the tests here only say what to start
// and what to check.
package e2e
