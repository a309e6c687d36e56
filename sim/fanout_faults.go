package sim

import (
	"slices"

	"narad/chaos"
	"narad/msg"
	"narad/node"
)

// The (fault x cursor phase) coverage of fan-out. The pairs are known only
// here (the core knows its cursors' phases, never the faults), so they are
// the simulator's marks, "fanout-fault:<fault>@<phase>", like the moves'
// (fault x phase) matrix. A fault meets every phase that some cursor it
// touches is in when it lands:
//   - kill: a node crashes (any crash fault, or a kill aimed at a move);
//     the cursors of that node.
//   - cut: a network partition cuts links; the cursors of the nodes at
//     either end.
//   - disk: an fsync failure crashes a node, or write failures are armed
//     on it; the cursors of that node.
//   - move-parent: a move of a parent partition enters a phase; that
//     partition's cursors on the source.
//   - move-child: a move of a child partition enters a phase; the cursor
//     that copies into it, on the owner of the parent partition of the
//     same index.
const (
	// movesFanoutPercent is the share of the moves worlds of a cluster
	// that get the fan-out scenario, so that every moves sweep (the CI's
	// and the nightly's included) meets cursors with its faults and moves.
	movesFanoutPercent = 50
	// fanoutCursorPersistIntervalMs is the nodes' cursor-file interval in
	// a world with fan-out: ten times the default, so that kills and
	// moves often meet a cursor ahead of its file (the batches since are
	// copied again: duplicates the checkers allow, never gaps).
	fanoutCursorPersistIntervalMs = 1_000
	// fanoutRelaysInFlightMax is the nodes' relay bound in a world with
	// fan-out: two children per parent partition share two slots, so
	// cursors often find every slot taken and wait for one.
	fanoutRelaysInFlightMax = 2
)

var (
	fanoutFaultKinds   = []string{"kill", "cut", "disk", "move-parent", "move-child"}
	fanoutCursorPhases = []string{node.CursorPhaseStarted, node.CursorPhaseResumed, node.CursorPhaseInFlight,
		node.CursorPhaseUnpersisted, node.CursorPhaseHeld}
)

// FanoutFaultMarks lists every (fault x cursor phase) mark, sorted by
// fault then phase.
func FanoutFaultMarks() []chaos.Mark {
	return pairMarks(fanoutFaultMark, fanoutFaultKinds, fanoutCursorPhases)
}

func fanoutFaultMark(kind, phase string) chaos.Mark {
	return chaos.Mark("fanout-fault:" + kind + "@" + phase)
}

// fanoutFaultLanded marks the phases of the cursors of the nodes a fault
// of the kind hit.
func (w *World) fanoutFaultLanded(kind string, nodes ...*simNode) {
	if !w.opts.Fanout {
		return
	}
	for _, n := range nodes {
		if n == nil || !n.up() {
			continue
		}
		for _, lag := range n.node.FanoutLags() {
			w.markCursorPhases(kind, lag)
		}
	}
}

// markCursorPhases marks the pair of the fault with each phase of one
// cursor.
func (w *World) markCursorPhases(kind string, lag node.FanoutLag) {
	for _, phase := range lag.Phases {
		chaos.Reached(fanoutFaultMark(kind, phase))
	}
}

// fanoutMoveLanded marks the phases of the cursors a move of a parent or
// a child partition meets as it enters a phase.
func (w *World) fanoutMoveLanded(session msg.Move) {
	if !w.opts.Fanout || w.phase != phaseSafety {
		return
	}
	if session.Topic == w.topic {
		if source := w.nodeByID(session.From); source != nil && source.up() {
			for _, lag := range source.node.FanoutLags() {
				if lag.Partition == session.Partition {
					w.markCursorPhases("move-parent", lag)
				}
			}
		}
		return
	}
	if !slices.ContainsFunc(w.fanoutChildren(), func(c fanoutChild) bool { return c.name == session.Topic }) {
		return
	}
	for _, n := range w.nodes {
		if !n.up() {
			continue
		}
		for _, lag := range n.node.FanoutLags() {
			if lag.Child == session.Topic && lag.Partition == session.Partition {
				w.markCursorPhases("move-child", lag)
			}
		}
	}
}

// crashFaultKind is the fan-out fault of a crash: an fsync failure is a
// disk fault, every other crash a kill.
func crashFaultKind(crash string) string {
	if crash == "sync-failure" {
		return "disk"
	}
	return "kill"
}

// movesWorldFanout draws whether a moves world gets the fan-out scenario
// (movesFanoutPercent), from a stream of its own.
func movesWorldFanout(opts Options) bool {
	return opts.Moves && opts.Nodes > 1 && newRand(opts.Seed, movesFanoutStream).IntN(100) < movesFanoutPercent
}
