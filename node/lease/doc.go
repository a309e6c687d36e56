// Package lease is the consumer lease table of one partition: the queue
// state between the partition's committed consumer offset (the frontier) and
// its high-watermark (HWM). It is a pure data structure of the deterministic
// core: no goroutines, no clock (time arrives as nowMs arguments), no
// randomness, no I/O, and no map order ever reaches an output.
//
// # What it owns
//
// For every offset at or above the frontier the table knows one of five
// things: it was never delivered; it is in flight (reserved under a receipt
// nonce until a visibility deadline); it was released for redelivery (its
// lease expired or was nacked); it ran out of deliveries (with
// Config.MaxDeliveries set, its last reservation ended unacked at that
// count: it waits for TakeExhausted, then for the node to settle it with
// DeadLettered or DeadLetterFailed, and is never redelivered meanwhile);
// or it is acked ahead of the frontier (acked, skipped or dead-lettered
// while a lower offset is still unresolved). Delivered offsets
// also carry their delivery count (1 on first delivery). Receipt handles
// "partition:offset:nonce:tag" are formatted and parsed here too: the tag,
// an HMAC under a key the node's driver draws at every start, binds a
// handle to its topic and reservation, so that a handle cannot be guessed
// from the partition's numbering nor used on another topic (VerifyHandle
// turns a handle whose tag does not verify into nonce 0, which matches no
// reservation).
//
// # Inputs and outputs
//
// Inputs are the node's calls: Reserve (consume), Ack, Extend and Nack (the
// ack endpoint), Expire (the node's tick), Skip (an unreadable record),
// AdvanceTo (retention removed old segments), SetConfig (topic alter) and
// RestoreTable (a move installed the partition here). Outputs are the
// reservations and errors those calls return, the committed frontier the
// node persists, the earliest deadline it schedules a tick for, the
// Snapshot a move carries to the new owner, and the Tally a table moves by
// every change of its Held (CountInto), where the node sums its tables.
//
// # Invariants
//
//   - committed <= nextUndelivered <= highWatermarkSeen, and all three only
//     grow. Every offset below committed is acked or skipped; every offset
//     in [committed, nextUndelivered) is in flight, released or acked
//     ahead; no offset at or above nextUndelivered was ever delivered.
//   - Acked-ahead offsets are all > committed (acking the frontier collapses
//     the contiguous run above it).
//   - Every in-flight deadline is later than the latest nowMs seen: expiry
//     is applied, lazily, at the start of every call that takes nowMs, so a
//     deadline <= nowMs is expired whether or not Expire ran.
//   - Time never goes backwards for a table: an earlier nowMs than one
//     already seen is treated as the latest one seen.
//
// # Memory bound
//
// Delivered-but-unresolved offsets (in flight, released, exhausted and
// being dead-lettered) never exceed InFlightMax. Reserve takes the lowest
// available offset, and every released offset lies below nextUndelivered,
// so Reserve only delivers a new offset when nothing is released; at that
// moment the delivered set is the in-flight set with the exhausted and
// dead-lettering ones, which the cap keeps below InFlightMax (records on
// their way to the dead-letter topic hold in-flight slots). Between two such
// moments the delivered set never grows: expiry and nack only move offsets
// from in flight to released, and acks, skips and retention remove them.
// However many reservations expire at once, the released set is bounded by
// the in-flight set it came from.
//
// Acked-ahead offsets never exceed AckedAheadMax through Ack. Skip ignores
// the cap (an unreadable record must not stall the frontier), so the bound
// is AckedAheadMax plus the number of offsets skipped above the frontier;
// when the node skips only offsets it has reserved, that is at most
// AckedAheadMax + InFlightMax.
//
// Lowering a cap with SetConfig never drops state: the table simply stops
// new reservations (or out-of-order acks) until the counts fall below the
// new cap. The assertions track that ceiling.
//
// # Assertions
//
// Cheap checks run always and panic through invariant.Broken with the name
// of the broken invariant; they are written `if broken { ... }`, since the
// arguments of an assert(ok, ...) call are boxed on every call and these
// checks run on every reservation and ack. CheckInvariants does the full
// cross-structure check (used by the simulator's checker); built with the
// "invariants" tag, every mutating call runs it too (invariant.Costly).
package lease
