package movesource

import (
	"narad/invariant"
	"narad/msg"
)

// Freeze is the freeze of one partition on its source. The zero value is
// not frozen. Only its own methods change it; the node owns it as part of
// the partition's state.
type Freeze struct {
	// target is the destination of the move frozen for; "" when the
	// partition is not frozen.
	target string
	// moveStartedAtMs identifies the move frozen for (its start time): a
	// later move to the same target is another move.
	moveStartedAtMs int64
	// atMs is when the freeze began.
	atMs int64
	// abortAskedAtMs is when the abort of a freeze that outlived its TTL
	// was last asked for (0: not yet); a new freeze clears it. The ask is
	// repeated every retry interval while the freeze holds, since a leader
	// change may lose the proposal.
	abortAskedAtMs int64
	// waiting are the freeze requests to answer once the records accepted
	// before the freeze are durable, in arrival order.
	waiting []msg.RequestID
}

// Frozen reports whether the partition is frozen: it accepts no produce
// and no commit.
func (f *Freeze) Frozen() bool { return f.target != "" }

// Target is the destination of the move frozen for ("" when not frozen).
func (f *Freeze) Target() string { return f.target }

// MoveStartedAtMs is the start time of the move frozen for.
func (f *Freeze) MoveStartedAtMs() int64 { return f.moveStartedAtMs }

// For reports whether the partition is frozen for the move to target
// started at moveStartedAtMs: only then is its state final for that move.
func (f *Freeze) For(target string, moveStartedAtMs int64) bool {
	return f.target != "" && f.target == target && f.moveStartedAtMs == moveStartedAtMs
}

// Begin freezes the partition for the move to target started at
// moveStartedAtMs, at nowMs, unless it is frozen for that move already.
// It reports whether the freeze is new. (A target of "" is no move: the
// freeze then ends, as an applied placement without a target would end it.)
func (f *Freeze) Begin(target string, moveStartedAtMs, nowMs int64) bool {
	if f.target == target && f.moveStartedAtMs == moveStartedAtMs {
		return false
	}
	f.target, f.moveStartedAtMs, f.atMs, f.abortAskedAtMs = target, moveStartedAtMs, nowMs, 0
	return true
}

// Outdated reports whether the partition is frozen for another move than
// the applied one (target, started at moveStartedAtMs; "" for none): the
// freeze must end.
func (f *Freeze) Outdated(target string, moveStartedAtMs int64) bool {
	return f.target != "" && (target != f.target || moveStartedAtMs != f.moveStartedAtMs)
}

// End ends the freeze at nowMs and returns how long it held.
func (f *Freeze) End(nowMs int64) (heldMs int64) {
	invariant.Check(f.target != "" && f.atMs <= nowMs, "movesource: a freeze ends at %d that holds for %q since %d", nowMs, f.target, f.atMs)
	f.target, f.abortAskedAtMs = "", 0
	return nowMs - f.atMs
}

// Expire reports that the freeze held for ttlMs or more at nowMs, so the
// move's abort is due: the first time, then again every retryMs while the
// freeze holds (the abort proposal may be lost with a leader change; a
// repeat after the abort applied finds the freeze ended).
func (f *Freeze) Expire(nowMs, ttlMs, retryMs int64) bool {
	if f.target == "" || nowMs-f.atMs < ttlMs {
		return false
	}
	if f.abortAskedAtMs != 0 && nowMs-f.abortAskedAtMs < retryMs {
		return false
	}
	invariant.Check(f.atMs <= nowMs, "movesource: a freeze began at %d, after now %d", f.atMs, nowMs)
	f.abortAskedAtMs = nowMs
	return true
}

// AbortRefused records that the abort Expire asked for was refused at
// once (no metastore leader to propose it to): it is asked again soonMs
// from now instead of a whole retryMs, as a leader is usually known
// again within an election.
func (f *Freeze) AbortRefused(nowMs, soonMs, retryMs int64) {
	if f.abortAskedAtMs != 0 {
		f.abortAskedAtMs = min(f.abortAskedAtMs, nowMs+soonMs-retryMs)
	}
}

// Wait keeps a freeze request to answer after the next sync round.
func (f *Freeze) Wait(id msg.RequestID) {
	invariant.Check(id != 0, "movesource: a freeze request without an id waits")
	f.waiting = append(f.waiting, id)
}

// Waiting reports whether freeze requests wait for a sync round.
func (f *Freeze) Waiting() bool { return len(f.waiting) > 0 }

// TakeWaiting returns the waiting requests, in arrival order, and forgets
// them.
func (f *Freeze) TakeWaiting() []msg.RequestID {
	waiting := f.waiting
	f.waiting = nil
	return waiting
}
