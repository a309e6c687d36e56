// Package movedest is the destination side of a partition move: the
// session a node runs while it copies a partition from its current owner
// (the source) and takes it over. It is a pure data structure of the
// deterministic core: no goroutines, no clock (time arrives as NowMs in
// every input), no I/O. The node sends its requests, runs its jobs and
// proposes its metastore changes; the session only decides.
//
// # The protocol
//
// A session goes through four phases:
//
//   - CatchUp: ask the source for its state (Status), read the chunks the
//     copy is missing (Read), ask again; pass after pass while produce
//     flows. It ends when the copy is within LagBytes of the source, after
//     CatchUpPassesMax passes, or when the lag stopped shrinking.
//   - Handoff: ask the source to freeze (Freeze). Only an answer that says
//     Frozen moves on: the state it carries is final, since the source
//     accepts nothing more for the partition.
//   - Finalize: read what the copy still misses of the final state, then
//     record the state in the copy and have the node run the finalize job
//     (sync, install, verify, adopt).
//   - Flip: propose the guarded ownership flip, again every FlipRetryMs
//     (bounded by the proposal timeout) until the applied placement shows
//     it.
//
// Three guards run before every step of the first three phases. A source
// that is dead and whose last answer was a frozen state the copy holds
// entirely is replaced by the copy after ForcePromoteAfterMs (the flip is
// then proposed as a forced promotion); a state that was never frozen is
// never promoted, since the source may have acknowledged records after it.
// A dead source whose copy cannot be promoted gets the move aborted once
// it was silent for the longer of ForcePromoteAfterMs and StallTimeoutMs,
// so that the move does not hold a slot of the planner's bound for as
// long as the node stays down. A source that is alive but lets the
// session make no progress for StallTimeoutMs gets the move aborted,
// except in Finalize with a frozen state (the final tail is read). A
// session whose move was restarted RestartsMax times on its node
// (Restarted: a failure that recurs at every attempt) proposes the abort
// and copies nothing. An abort is proposed again every ProposalTimeoutMs
// until the move ends, as a proposal may be lost.
//
// # Inputs and outputs
//
// Inputs are method calls: Tick (the node's tick, for an idle session),
// Answered (the source's answer to the request in flight), JobDone (the
// finalize job ran) and Placement (the applied placement of the
// partition). Each of the first three returns an Output: notes of what
// happened, for the node's events and coverage marks, and at most one
// Action: a request to send, the finalize job to start, a flip or abort to
// propose, or a restart (the copy is thrown away; the node starts a new
// session at its next tick while the move still targets it). Placement
// returns whether the session ended, and how.
//
// # Invariants
//
//   - At most one request or job is in flight; its number is the last one
//     handed out, and an answer naming another number is ignored.
//   - The phase only moves forward: CatchUp, Handoff, Finalize, Flip.
//   - Finalize and Flip are reached only with a state the source reported
//     as frozen (by the freeze answer, or by the last answer before it
//     died).
//   - The bytes copied of a segment never exceed the source's size of it,
//     and a read asks for the bytes right after those already copied. A
//     state that holds less than the copy (copyAheadOf) restarts it
//     (NoteCopyAheadOfSource), so what Finalize installs ends at the
//     final state's bytes.
//   - NowMs never decreases from one input to the next (the node's clock
//     does not).
package movedest
