// Package host is the production driver of a node: it runs the
// deterministic node state machine on real goroutines, files, sockets and
// the wall clock.
//
// Concurrency is confined here. The goroutines are:
//   - the loop: the only goroutine that touches the node. It gathers
//     inputs (requests and cancels from HTTP handlers, clock ticks), feeds
//     them to the node, and handles each Ready in the contract's order:
//     persist (the Ready's Syncs, in parallel across partitions), then
//     deliver replies, then Advance;
//   - the HTTP server's goroutines, which only decode requests, hand them
//     to the loop through a bounded inbox, and wait for their reply;
//   - short-lived sync workers, one per partition of a Ready, joined
//     before the loop goes on.
//
// Every goroutine starts through Host.goFunc, registered with a WaitGroup,
// so shutdown can wait for all of them.
//
// Group commit: while the loop persists one Ready, new requests queue in
// the inbox; the next iteration handles all of them (up to
// inputsPerRoundMax) before the next Ready, so they share one sync round
// per partition.
//
// A failed fsync ends the node: replies of that Ready are not sent,
// waiting requests get 503, and Run returns the error so the process exits
// and restarts from what is really on disk (node package doc).
package host
