package sim

import (
	"slices"

	"narad/chaos"
)

// The late join: once a moves world has healed, one more node joins the
// calm cluster after the metastore compacted its log, and must serve
// within lateJoinServingMsMax. A node that joins after compaction can
// only start from a snapshot; the real-process soak found joiners that
// never became ready once its clusters had run long enough to compact
// (the first snapshot listed no new voter, and a lost snapshot was never
// sent again), which the safety phase missed: its scale-ups come before
// the first compaction.
const (
	// lateJoinPollMs is the pause between two looks for a compacted log.
	lateJoinPollMs = 200
	// lateJoinWaitMsMax bounds the wait for the first compaction after
	// healing; the node joins then anyway (mark not reached).
	lateJoinWaitMsMax = 60_000
	// lateJoinServingMsMax bounds the time from the late joiner's start
	// to its first moment serving (a voter and member with a leader). In
	// a calm world that takes a Join round, a configuration change, one
	// snapshot and a heartbeat: well under a second here. A snapshot that
	// lists no new voter would instead wait for the next periodic one.
	lateJoinServingMsMax = 5_000
)

// lateJoin is the state of the late join, owned by the moves scenario.
type lateJoin struct {
	// node is the late joiner; nil before it starts.
	node *simNode
	// startedMs is when it started; servingMs when it first served (0
	// before). compactedAt is the snapshot index the cluster had reached
	// when it started (0: none yet).
	startedMs, servingMs int64
	compactedAt          uint64
}

// scheduleLateJoin starts the wait for a compacted log; called at heal.
func (s *movesScenario) scheduleLateJoin() {
	s.w.at(lateJoinPollMs, s.lateJoinWhenCompacted)
}

// lateJoinWhenCompacted starts the late joiner once some replica has
// taken a snapshot (or the wait is over).
func (s *movesScenario) lateJoinWhenCompacted() {
	w := s.w
	if w.failure != nil || s.late.node != nil {
		return
	}
	compactedAt := w.snapshotIndex()
	if compactedAt == 0 && w.nowMs < w.healedMs+lateJoinWaitMsMax {
		w.at(lateJoinPollMs, s.lateJoinWhenCompacted)
		return
	}
	if compactedAt > 0 {
		chaos.Reached(markJoinAfterCompaction)
	}
	s.late = lateJoin{node: s.addJoiner(), startedMs: w.nowMs, compactedAt: compactedAt}
	w.tracef("late join: %s starts, the log compacted up to %d", s.late.node.id, compactedAt)
}

// snapshotIndex is the highest snapshot index of the running replicas.
func (w *World) snapshotIndex() uint64 {
	var highest uint64
	for _, n := range w.activeNodes() {
		if n.up() {
			highest = max(highest, n.node.MetaStatus().SnapshotIndex)
		}
	}
	return highest
}

// watchLateJoiner records the first moment the late joiner serves.
func (s *movesScenario) watchLateJoiner(touched []*simNode) {
	n := s.late.node
	if n == nil || s.late.servingMs != 0 || !slices.Contains(touched, n) || !n.up() {
		return
	}
	if n.node.Serving() == nil {
		s.late.servingMs = s.w.nowMs
		s.w.tracef("late join: %s serves after %d ms", n.id, s.late.servingMs-s.late.startedMs)
	}
}

// checkLateJoin fails the run if the late joiner did not serve in time;
// it first lets the world run up to the bound.
func (s *movesScenario) checkLateJoin() {
	w := s.w
	startByMs := w.healedMs + lateJoinWaitMsMax + lateJoinPollMs
	w.loop(func() bool { return s.late.node == nil && w.nowMs <= startByMs })
	if w.failure != nil {
		return
	}
	if s.late.node == nil {
		w.fail("liveness", "the late join did not start within %d ms of healing", lateJoinWaitMsMax+lateJoinPollMs)
		return
	}
	deadlineMs := s.late.startedMs + lateJoinServingMsMax
	w.loop(func() bool { return s.late.servingMs == 0 && w.nowMs < deadlineMs })
	if w.failure != nil {
		return
	}
	if took := s.late.servingMs - s.late.startedMs; s.late.servingMs == 0 || took > lateJoinServingMsMax {
		w.fail("liveness", "%s, which joined the healed cluster after the log was compacted up to %d, did not serve within %d ms",
			s.late.node.id, s.late.compactedAt, lateJoinServingMsMax)
	}
}

// lateJoinMs is the late joiner's time from start to serving; -1 when
// there was none or it never served.
func (w *World) lateJoinMs() int64 {
	if w.moves == nil || w.moves.late.node == nil || w.moves.late.servingMs == 0 {
		return -1
	}
	return w.moves.late.servingMs - w.moves.late.startedMs
}

// lateJoinCompactedAt is the snapshot index the cluster had when the late
// joiner started (0: none, or no late join).
func (w *World) lateJoinCompactedAt() uint64 {
	if w.moves == nil {
		return 0
	}
	return w.moves.late.compactedAt
}
