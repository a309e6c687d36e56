package movedest

import (
	"narad/chaos"
	"narad/invariant"
)

// step takes the session's next step: the guards first, then the phase's
// work. It adds at most one action to out.
func (s *Session) step(seen Seen, out *Output) {
	invariant.Check(!s.Busy() && out.Action.Kind == ActionNone,
		"movedest: %s/%d stepped with %d in flight or an action taken", s.move.Topic, s.move.Partition, s.pending)
	if s.givesUp(seen, out) {
		return
	}
	switch s.phase {
	case PhaseCatchUp:
		s.copyThen(out, ActionStatus)
	case PhaseHandoff:
		s.send(out, Action{Kind: ActionFreeze})
	case PhaseFinalize:
		s.copyThen(out, ActionFinalize)
	case PhaseFlip:
		s.proposeFlip(seen, out)
	default:
		invariant.Broken("movedest: %s/%d is in unknown phase %d", s.move.Topic, s.move.Partition, s.phase)
	}
}

// copyThen reads the next missing chunk of the source's last state, or
// takes then when the copy holds all of it (a status request before the
// first state).
func (s *Session) copyThen(out *Output, then ActionKind) {
	if !s.haveState {
		s.send(out, Action{Kind: ActionStatus})
		return
	}
	for _, segment := range s.state.Segments {
		if copied := s.copied[segment.Base]; copied < segment.Size {
			s.send(out, Action{Kind: ActionRead, Base: segment.Base, Position: copied})
			return
		}
	}
	if then == ActionFinalize {
		s.send(out, s.finalize())
		return
	}
	s.send(out, Action{Kind: then})
}

// finalize is the finalize of the source's last state.
func (s *Session) finalize() Action {
	return Action{Kind: ActionFinalize, HWM: s.state.HWM, Committed: s.state.Committed, Corruption: s.state.Corruption}
}

// send puts a request or job in flight under the next number.
func (s *Session) send(out *Output, action Action) {
	invariant.Check(action.Kind != ActionFinalize || s.state.Frozen || s.forced,
		"movedest: %s/%d finalizes a state the source never froze", s.move.Topic, s.move.Partition)
	s.pendingRequest++
	s.pending, s.pendingBase = action.Kind, action.Base
	action.Request = s.pendingRequest
	out.Action = action
}

// lagBytes is how far the copy is behind the source's last state.
func (s *Session) lagBytes() int64 {
	var lag int64
	for _, segment := range s.state.Segments {
		lag += max(segment.Size-s.copied[segment.Base], 0)
	}
	return lag
}

// statusAnswered ends a CatchUp pass: hand off once the lag is small, the
// passes are used up, or the lag stopped shrinking. In a later phase the
// state only refreshes what is left to copy.
func (s *Session) statusAnswered(seen Seen, answer Answer, out *Output) {
	if !answer.OK || answer.State == nil {
		return // asked again at the next tick
	}
	if s.restartIfAhead(*answer.State, out) {
		return
	}
	first := !s.haveState
	s.state, s.haveState = *answer.State, true
	if s.phase != PhaseCatchUp {
		s.step(seen, out)
		return
	}
	lag := s.lagBytes()
	if !first {
		s.passes++
	}
	converged := lag <= s.cfg.LagBytes
	stuck := s.passes >= s.cfg.CatchUpPassesMax || (s.lastLagBytes >= 0 && lag >= s.lastLagBytes && !first)
	s.lastLagBytes = lag
	if converged && !chaos.Buggify(chaos.SiteMoveDestCatchUpPassRepeated) || stuck {
		out.Notes = append(out.Notes, Note{Kind: NoteCatchUpDone, LagBytes: lag, Passes: s.passes, Converged: converged})
		s.phase = PhaseHandoff
	}
	s.step(seen, out)
}

// readAnswered counts a chunk the node wrote and steps on; a source that
// lost the bytes restarts the copy.
func (s *Session) readAnswered(seen Seen, answer Answer, out *Output) {
	switch {
	case answer.Gone:
		out.Action = Action{Kind: ActionRestart}
	case !answer.OK || answer.Written <= 0:
		return // read again at the next tick
	default:
		s.copied[s.pendingBase] += answer.Written
		s.bytesCopied += answer.Written
		s.step(seen, out)
	}
}

// freezeAnswered moves to Finalize on a frozen state: only that state is
// final. Any other answer is asked again at the next tick.
func (s *Session) freezeAnswered(seen Seen, answer Answer, out *Output) {
	if !answer.OK || answer.State == nil || !answer.State.Frozen {
		return
	}
	if s.restartIfAhead(*answer.State, out) {
		return
	}
	invariant.Check(s.phase == PhaseHandoff, "movedest: %s/%d was answered a freeze in %s", s.move.Topic, s.move.Partition, s.phase)
	out.Notes = append(out.Notes, Note{Kind: NoteHandedOff, HWM: answer.State.HWM})
	s.state, s.phase = *answer.State, PhaseFinalize
	s.step(seen, out)
}

// proposeFlip proposes the guarded ownership flip, again if a proposal
// seems lost: the source stays frozen meanwhile.
func (s *Session) proposeFlip(seen Seen, out *Output) {
	retryDue := seen.NowMs-s.flipProposedAtMs >= min(FlipRetryMs, s.cfg.ProposalTimeoutMs)
	if s.flipProposedAtMs != 0 && !retryDue && !chaos.Buggify(chaos.SiteMoveDestFlipRepeated) {
		return
	}
	s.flipProposedAtMs = seen.NowMs
	out.Action = Action{Kind: ActionFlip, Forced: s.forced}
}

// abortDue reports whether a stalled session proposes its abort now: the
// first time, or again once ProposalTimeoutMs passed since the last one
// (which a leader change or a lost message may have dropped: the move
// would then hold its slot for good).
func (s *Session) abortDue(nowMs int64) bool {
	return !s.abortProposed || nowMs-s.abortProposedAtMs >= s.cfg.ProposalTimeoutMs
}

// givesUp handles a source that stopped answering. A dead source is
// replaced by the copy after ForcePromoteAfterMs if the copy holds all of
// its last known state and that state is final (the source answered the
// freeze, so it accepted nothing after it; promoting an earlier state
// would lose records the source acknowledged since). A dead source whose
// copy cannot be promoted gets the move aborted once it was silent for
// sourceLostAfterMs: waiting for it would hold one of the planner's
// moves.max_in_flight slots for as long as the node stays down, and with
// the bound reached by such moves no drain or rebalance elsewhere could
// start (an abort is always safe: the source, back, finds the move ended
// and thaws). An alive source that lets the session make no progress for
// StallTimeoutMs gets the move aborted too, except in Finalize with a
// frozen state (its final tail is read, the move about to complete). It
// reports whether the session took one of these paths (or waits for a
// dead source).
func (s *Session) givesUp(seen Seen, out *Output) bool {
	if s.phase == PhaseFlip || s.forced {
		return false
	}
	if s.cfg.RestartsMax > 0 && s.restarts >= s.cfg.RestartsMax {
		if s.abortDue(seen.NowMs) {
			if !s.abortProposed {
				out.Notes = append(out.Notes, Note{Kind: NoteRestartsExhausted, Restarts: s.restarts})
			}
			s.proposeAbort(seen, out)
		}
		return true // never copy again: the abort, or a placement that ends the move, ends the session
	}
	finalTail := s.phase == PhaseFinalize && s.state.Frozen
	silentForMs := seen.NowMs - s.lastContactMs
	lostForMs := seen.NowMs - max(s.lastContactMs, s.startedAtMs) // a session begun without contact counts from its start
	switch {
	case !finalTail && seen.SourceDead && s.reached && (s.state.Frozen || chaos.Planted(chaos.BugPromoteUnfrozenCopy)) && silentForMs >= s.cfg.ForcePromoteAfterMs && s.lagBytes() == 0:
		out.Notes = append(out.Notes, Note{Kind: NoteForcePromote, SilentForMs: silentForMs, HWM: s.state.HWM})
		s.forced, s.phase = true, PhaseFinalize
		s.send(out, s.finalize())
		return true
	case seen.SourceDead && s.abortDue(seen.NowMs) && lostForMs >= s.sourceLostAfterMs():
		out.Notes = append(out.Notes, Note{Kind: NoteSourceLost, SilentForMs: lostForMs})
		s.proposeAbort(seen, out)
		return true
	case !finalTail && !seen.SourceDead && s.abortDue(seen.NowMs) && seen.NowMs-s.lastProgressMs >= s.cfg.StallTimeoutMs:
		out.Notes = append(out.Notes, Note{Kind: NoteStalled})
		s.proposeAbort(seen, out)
		return true
	}
	return seen.SourceDead && !finalTail // wait for the source, or for the promotion delay
}

// sourceLostAfterMs is how long a dead source may stay silent (since its
// last answer, or the session's start) before a session that cannot
// promote its copy proposes the move's abort: no sooner than a copy that
// can be promoted would be, nor than an alive source's stall.
func (s *Session) sourceLostAfterMs() int64 {
	return max(s.cfg.ForcePromoteAfterMs, s.cfg.StallTimeoutMs)
}

// proposeAbort asks for the move's abort, again every ProposalTimeoutMs
// until the move ends (abortDue).
func (s *Session) proposeAbort(seen Seen, out *Output) {
	s.abortProposed, s.abortProposedAtMs = true, seen.NowMs
	out.Action = Action{Kind: ActionAbort}
}

// restartIfAhead throws the copy away when it holds bytes state does not
// (copyAheadOf): finalized, those bytes would lie past the final
// high-watermark, where the installed copy's recovery would find and
// serve them as records of the partition.
func (s *Session) restartIfAhead(state SourceState, out *Output) bool {
	if !s.copyAheadOf(state) {
		return false
	}
	out.Notes = append(out.Notes, Note{Kind: NoteCopyAheadOfSource})
	out.Action = Action{Kind: ActionRestart}
	return true
}

// copyAheadOf reports whether the copy holds bytes state lacks: more of a
// segment than its size, or a segment at or past state's first that state
// does not list. (Segments below state's first are ones the source's
// retention removed since they were copied, not bytes past its end.) A
// source serves only durable bytes of the move its replica shows, so this
// takes a source whose log is not the one copied: a deleted creation of
// the topic under the same directory, say.
func (s *Session) copyAheadOf(state SourceState) bool {
	sizes := make(map[uint64]int64, len(state.Segments))
	for _, segment := range state.Segments {
		sizes[segment.Base] = segment.Size
	}
	for base, copied := range s.copied { //determinism:ok a yes or no
		size, listed := sizes[base]
		below := len(state.Segments) > 0 && base < state.Segments[0].Base
		if copied > size && (listed || !below) {
			return true
		}
	}
	return false
}
