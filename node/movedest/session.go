package movedest

import "narad/invariant"

// Session is one move into the node. Only its own methods change it; the
// node owns it and hands it inputs from its loop.
type Session struct {
	cfg  Config
	move Move
	// phase only moves forward.
	phase Phase
	// state is the source's last reported state (final once Frozen);
	// haveState is false until the first report.
	state     SourceState
	haveState bool
	// copied maps a segment's base to the bytes of it the copy holds; it
	// grows only by the chunks the node reports written.
	copied map[uint64]int64
	// pending is the kind of the request or job in flight (ActionNone when
	// idle); pendingRequest its number, the last one handed out, and
	// pendingBase the segment a read in flight asks for.
	pending        ActionKind
	pendingRequest uint64
	pendingBase    uint64
	// reached is set by the first answer from the source; lastContactMs is
	// the time of the latest one, lastProgressMs of the latest step
	// forward (an answer or a job done).
	reached        bool
	lastContactMs  int64
	lastProgressMs int64
	startedAtMs    int64
	// latestMs is the latest NowMs seen; inputs never go below it.
	latestMs int64
	// passes counts the CatchUp passes; lastLagBytes is the lag at the end
	// of the previous one (-1 before the first).
	passes       int
	lastLagBytes int64
	// forced is set when the session promotes a copy of a dead source.
	forced bool
	// flipProposedAtMs is when the flip was last proposed (0: not yet).
	flipProposedAtMs int64
	bytesCopied      int64
	// abortProposed is set once the session proposed its own abort, and
	// abortProposedAtMs is when it last did: a proposal may be lost, so
	// it is proposed again every ProposalTimeoutMs until the move ends.
	abortProposed     bool
	abortProposedAtMs int64
	// restarts counts the earlier sessions of the same move on this node
	// that ended in a restart (Restarted); fixed once stepping begins.
	restarts int
}

// New starts a session for move at nowMs, in CatchUp with an empty copy.
func New(move Move, cfg Config, nowMs int64) *Session {
	invariant.Check(cfg.LagBytes >= 0 && cfg.CatchUpPassesMax >= 0 && cfg.StallTimeoutMs >= 0 && cfg.ForcePromoteAfterMs >= 0 && cfg.ProposalTimeoutMs >= 0,
		"movedest: config %+v has a negative bound", cfg)
	invariant.Check(move.Target != "", "movedest: move of %s/%d has no target", move.Topic, move.Partition)
	return &Session{cfg: cfg, move: move, phase: PhaseCatchUp, copied: map[uint64]int64{},
		startedAtMs: nowMs, lastProgressMs: nowMs, latestMs: nowMs, lastLagBytes: -1}
}

// Restarted tells a new session how many sessions of its move ended in a
// restart on this node before it; at Config.RestartsMax it only proposes
// the move's abort. Called before the first step.
func (s *Session) Restarted(count int) { s.restarts = count }

// Move returns the move the session runs.
func (s *Session) Move() Move { return s.move }

// Phase returns where the session is.
func (s *Session) Phase() Phase { return s.phase }

// Busy reports whether a request or job is in flight.
func (s *Session) Busy() bool { return s.pending != ActionNone }

// Copied returns the bytes of segment base the copy holds.
func (s *Session) Copied(base uint64) int64 { return s.copied[base] }

// Progress describes the session.
func (s *Session) Progress() Progress {
	var total int64
	for _, segment := range s.state.Segments {
		total += segment.Size
	}
	return Progress{Phase: s.phase, BytesCopied: s.bytesCopied, BytesTotal: total, StartedAtMs: s.startedAtMs, Forced: s.forced}
}

// Tick takes the next step of an idle session; a busy one waits for its
// answer (the node's forward and job always end in one).
func (s *Session) Tick(seen Seen) Output {
	s.observe(seen)
	if s.Busy() {
		return Output{}
	}
	var out Output
	s.step(seen, &out)
	return out
}

// Answered takes the source's answer to the request in flight and steps
// on. An answer to another request (an earlier one, or none in flight)
// changes nothing.
func (s *Session) Answered(seen Seen, answer Answer) Output {
	s.observe(seen)
	if !s.Busy() || answer.Request != s.pendingRequest || s.pending == ActionFinalize {
		return Output{}
	}
	kind := s.pending
	s.pending = ActionNone
	if answer.OK {
		s.reached, s.lastContactMs, s.lastProgressMs = true, seen.NowMs, seen.NowMs
	}
	var out Output
	switch kind {
	case ActionStatus:
		s.statusAnswered(seen, answer, &out)
	case ActionRead:
		s.readAnswered(seen, answer, &out)
	case ActionFreeze:
		s.freezeAnswered(seen, answer, &out)
	default:
		invariant.Broken("movedest: %s/%d has a request of kind %d in flight", s.move.Topic, s.move.Partition, kind)
	}
	return out
}

// JobDone takes the outcome of the finalize job: a copy that was installed
// and verified moves the session to Flip; any failure restarts it. The
// outcome of another job changes nothing.
func (s *Session) JobDone(seen Seen, request uint64, installed bool) Output {
	s.observe(seen)
	if s.pending != ActionFinalize || request != s.pendingRequest {
		return Output{}
	}
	invariant.Check(s.phase == PhaseFinalize && (s.state.Frozen || s.forced),
		"movedest: %s/%d finished a finalize job in %s with a state that is not final", s.move.Topic, s.move.Partition, s.phase)
	s.pending = ActionNone
	if !installed {
		return Output{Action: Action{Kind: ActionRestart}}
	}
	out := Output{Notes: []Note{{Kind: NoteInstalled, HWM: s.state.HWM}}}
	s.phase, s.lastProgressMs = PhaseFlip, seen.NowMs
	s.step(seen, &out)
	return out
}

// Placement judges the applied placement of the partition: the session
// ended if the target owns it (completed), or if the move it runs is no
// longer the partition's (aborted, or re-targeted).
func (s *Session) Placement(p Placement) End {
	switch {
	case p.Assigned && p.Owner == s.move.Target:
		return EndCompleted
	case !p.Assigned || p.Target != s.move.Target || p.Owner != s.move.Source || p.StartedAtMs != s.move.StartedAtMs:
		return EndAborted
	}
	return EndNone
}

// RollsBack reports whether an aborted session must remove its installed
// copy: it was installed (Flip) but the flip never applied.
func (s *Session) RollsBack() bool { return s.phase == PhaseFlip }

// observe checks and keeps the node's clock.
func (s *Session) observe(seen Seen) {
	if seen.NowMs < s.latestMs { // guarded: the arguments would allocate on every call
		invariant.Broken("movedest: %s/%d saw time go back from %d to %d", s.move.Topic, s.move.Partition, s.latestMs, seen.NowMs)
	}
	s.latestMs = seen.NowMs
}
