// Package proc is the harness for real `narad serve` processes that the
// end-to-end tests (e2e), the soak (soak) and `narad cluster up` share.
//
// What it offers:
//   - Build compiles the binary; FreeAddr hands out loopback addresses on
//     ports outside the kernel's ephemeral range, never the same one twice
//     in a process, so a port the harness picked is not taken meanwhile by
//     an outgoing connection of a busy machine.
//   - Process is one node: its identity, addresses, data directory and log
//     stay the same across restarts; Start, WaitReady, Kill (SIGKILL),
//     Terminate (SIGTERM, bounded), Pause and Resume change its process.
//     An exit nobody asked for is recorded as a crash. A start that failed
//     because a port was taken is reported as ErrAddrInUse, so that the
//     caller can plan new ports and try again.
//   - Leader finds the one node that reports leading the metadata group.
//   - Scrape reads a node's /metrics page with the Prometheus text parser
//     (Metrics); ReadLog and ScanLog read a node's JSON log (LogRecord).
//   - Percentile and SleepContext are the small helpers the three callers
//     each had a copy of.
//
// It keeps no state across calls except the ports it handed out (so that
// it never hands one out twice) and the state of each Process. Every wait
// is bounded by its caller's context or by a bound named in bounds.go.
package proc
