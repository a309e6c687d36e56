package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"narad/chaos"
	"narad/msg"
	"narad/node"
)

// Move-phase faults, in percent and simulated milliseconds.
const (
	// moveFaultPercent is the chance that a move entering a phase (or a
	// source freezing) during the safety phase gets a fault at once.
	moveFaultPercent = 45
	// movePartitionMsMin and movePartitionMsSpread: a cut aimed at a move
	// lasts from a blip to longer than moveForcePromoteAfterMs, so that
	// a destination sometimes gives a silent source up.
	movePartitionMsMin    = 200
	movePartitionMsSpread = 8_000
	// moveKillDownMsMin and moveKillDownMsSpread: a node killed by a
	// move fault stays down from a blip to longer than
	// moveForcePromoteAfterMs (other kills restart within seconds).
	moveKillDownMsMin    = 100
	moveKillDownMsSpread = 9_000
	// leaderChangePercent is the chance that the leader is killed or cut
	// off right after a scale-up or a decommission committed, while the
	// planner starts the moves they call for; leaderChangeAfterMsMax
	// bounds how long after.
	leaderChangePercent    = 50
	leaderChangeAfterMsMax = 400
	// caughtUpKillPercent is the chance that, when the destination of a
	// move, in CatchUp, has just copied all of the source's last reported
	// state, the two are cut apart at once, a client produces one record
	// pinned to the partition at the source, and the source is killed as
	// soon as that record is acknowledged (202), for caughtUpKillDownMsMin
	// plus up to caughtUpKillDownMsSpread: longer than a member takes to
	// be declared dead plus moveForcePromoteAfterMs. The destination then
	// faces a dead source whose last state it holds entirely, but which
	// never froze and acknowledged a record after it: a copy it must not
	// promote. Without a 202 within caughtUpCutMs the cut mends and
	// nobody dies. Drawn from a stream of its own, once per move.
	caughtUpKillPercent      = 60
	caughtUpCutMs            = 2_000
	caughtUpKillDownMsMin    = 9_500
	caughtUpKillDownMsSpread = 3_000
)

// frozenSourceKillPercent is the chance that the source of a move, frozen
// for it, is killed when a destination that started its session again
// has copied all of the frozen state (frozenSourceCaughtUp); drawn from
// the caught-up kills' stream, once per move.
const frozenSourceKillPercent = 90

// frozenDestBlipPercent is the chance that the destination of a move is
// killed when its source freezes, for frozenDestBlipMsMin plus up to
// frozenDestBlipMsSpread: well within the freeze's TTL, so that the
// destination's new session finds the source still frozen for the move
// (and frozenSourceCaughtUp may kill the source then). Drawn from the
// caught-up kills' stream.
const (
	frozenDestBlipPercent  = 40
	frozenDestBlipMsMin    = 50
	frozenDestBlipMsSpread = 300
)

// The faults aimed at a move, and the phases of a move (node's names for
// CatchUp, PrepareHandoff, Finalize and CompleteMove). Every pair is a
// coverage mark "move-fault:<fault>@<phase>".
var (
	moveFaultKinds = []string{
		"kill-source", "kill-dest", "cut-source-dest", "one-way-source-dest", "one-way-dest-source",
		"cut-source-leader", "cut-dest-leader", "isolate-source", "kill-leader", "isolate-leader",
	}
	movePhases = []string{"catchup", "handoff", "finalize", "flip"}
)

// MoveFaultMarks lists every (fault × phase) coverage mark, sorted by
// fault then phase.
func MoveFaultMarks() []chaos.Mark { return pairMarks(moveFaultMark, moveFaultKinds, movePhases) }

func moveFaultMark(kind, phase string) chaos.Mark {
	return chaos.Mark("move-fault:" + kind + "@" + phase)
}

// pairMarks lists mark(kind, phase) for every kind and phase, sorted by
// kind then phase.
func pairMarks(mark func(kind, phase string) chaos.Mark, kinds, phases []string) []chaos.Mark {
	var marks []chaos.Mark
	for _, kind := range kinds {
		for _, phase := range phases {
			marks = append(marks, mark(kind, phase))
		}
	}
	return marks
}

// moveWatcher looks at the moves the nodes run after every step that
// touched them: when a session enters a phase, or a source freezes, it
// may inject a fault aimed at that instant and may start a write storm on
// a partition entering CatchUp.
type moveWatcher struct {
	w   *World
	rng *rand.Rand
	// looks[i] is what the last look saw at the node of index i; grown as
	// nodes are added, reset while the node is down. Only watch changes it.
	looks []nodeLook
	// landed counts the faults that landed, by coverage mark, in this run.
	landed map[chaos.Mark]int
	// caughtUpRng draws the caught-up kills; caughtUpDrawn holds the moves
	// (partition and start) already drawn for one.
	caughtUpRng   *rand.Rand
	caughtUpDrawn map[string]bool
}

func newMoveWatcher(w *World, rng *rand.Rand) *moveWatcher {
	return &moveWatcher{w: w, rng: rng,
		landed: map[chaos.Mark]int{}, caughtUpRng: newRand(w.opts.Seed, caughtUpKillStream), caughtUpDrawn: map[string]bool{}}
}

// watch looks at the nodes the step touched.
func (s *movesScenario) watch(touched []*simNode) {
	s.watchLateJoiner(touched)
	moving := s.w.metaLog.anyMoveInFlight()
	for len(s.watcher.looks) < len(s.w.nodes) {
		s.watcher.looks = append(s.watcher.looks, nodeLook{})
	}
	for _, n := range touched {
		look := &s.watcher.looks[n.index]
		if !n.up() {
			*look = nodeLook{}
			continue
		}
		if moving || len(look.phases) > 0 {
			s.watcher.lookAtSessions(n, look)
		}
		if n.up() && (moving || len(look.frozen) > 0) {
			s.watcher.lookAtFreezes(n, look)
		}
	}
}

// nodeLook is what the move watcher saw at a node at its last look.
type nodeLook struct {
	// phases maps the partition name of each of the node's sessions to
	// its phase; sessions are those sessions, as MoveSessions listed
	// them (sorted, one per partition). Set together by lookAtSessions.
	phases   map[string]string
	sessions []msg.Move
	// frozen holds the names of the partitions the node kept frozen;
	// frozenList lists them as FrozenPartitions did (sorted, one per
	// partition). Set together by lookAtFreezes.
	frozen     map[string]bool
	frozenList []node.FrozenPartition
}

// lookAtSessions notices the sessions of n that entered a phase.
func (m *moveWatcher) lookAtSessions(n *simNode, look *nodeLook) {
	previous := look.phases
	sessions := n.node.MoveSessions()
	if sameSessionPhases(look.sessions, sessions) || samePhases(previous, sessions) {
		// No session entered a phase (the common case), but a copy in
		// CatchUp catches up within its phase.
		m.lookForCaughtUp(n, sessions)
		return
	}
	current := map[string]string{}
	for _, session := range sessions {
		name := partitionName(session.Topic, session.Partition)
		current[name] = session.Phase
		if previous[name] != session.Phase {
			m.phaseEntered(n, session)
		}
		if n.up() && caughtUpInCatchUp(session) {
			m.caughtUp(session)
		}
		if n.up() && session.Phase == "handoff" && previous[name] != "handoff" && session.BytesTotal > 0 && session.BytesCopied >= session.BytesTotal {
			m.frozenSourceCaughtUp(session)
		}
		if !n.up() {
			return // a fault took it down
		}
	}
	look.phases, look.sessions = current, sessions
}

// lookAtFreezes notices the partitions n froze since the last look.
func (m *moveWatcher) lookAtFreezes(n *simNode, look *nodeLook) {
	previous := look.frozen
	partitions := n.node.FrozenPartitions()
	if sameFrozenList(look.frozenList, partitions) || sameFrozen(previous, partitions) {
		return // the common case: nothing froze or thawed
	}
	current := map[string]bool{}
	for _, frozen := range partitions {
		name := partitionName(frozen.Topic, frozen.Partition)
		current[name] = true
		if !previous[name] {
			m.frozeNow(n, frozen)
		}
		if !n.up() {
			return
		}
	}
	look.frozen, look.frozenList = current, partitions
}

// samePhases reports whether sessions are exactly those of previous, each
// in the same phase: a look would change nothing.
func samePhases(previous map[string]string, sessions []msg.Move) bool {
	if len(previous) != len(sessions) {
		return false
	}
	for _, session := range sessions {
		if phase, ok := previous[partitionName(session.Topic, session.Partition)]; !ok || phase != session.Phase {
			return false
		}
	}
	return true
}

// sameSessionPhases reports whether sessions are those of the previous
// look's list, in the same order and phases: samePhases then holds (a
// list holds one session per partition), found without naming them.
func sameSessionPhases(previous, sessions []msg.Move) bool {
	return slices.EqualFunc(previous, sessions, func(a, b msg.Move) bool {
		return a.Partition == b.Partition && a.Topic == b.Topic && a.Phase == b.Phase
	})
}

// lookForCaughtUp calls caughtUp for each session of n in CatchUp whose
// copy holds all of its source's last reported state.
func (m *moveWatcher) lookForCaughtUp(n *simNode, sessions []msg.Move) {
	for _, session := range sessions {
		if !n.up() {
			return // a fault took it down
		}
		if caughtUpInCatchUp(session) {
			m.caughtUp(session)
		}
	}
}

// caughtUpInCatchUp reports whether a session in CatchUp has copied all
// of its source's last reported state.
func caughtUpInCatchUp(session msg.Move) bool {
	return session.Phase == "catchup" && session.BytesTotal > 0 && session.BytesCopied >= session.BytesTotal
}

// sameFrozen reports whether partitions are exactly those of previous.
func sameFrozen(previous map[string]bool, partitions []node.FrozenPartition) bool {
	if len(previous) != len(partitions) {
		return false
	}
	for _, frozen := range partitions {
		if !previous[partitionName(frozen.Topic, frozen.Partition)] {
			return false
		}
	}
	return true
}

// sameFrozenList reports whether partitions are those of the previous
// look's list, in the same order: sameFrozen then holds, found without
// naming them.
func sameFrozenList(previous, partitions []node.FrozenPartition) bool {
	return slices.EqualFunc(previous, partitions, func(a, b node.FrozenPartition) bool {
		return a.Partition == b.Partition && a.Topic == b.Topic
	})
}

func (m *moveWatcher) phaseEntered(dest *simNode, session msg.Move) {
	w := m.w
	w.tracef("move: %s/%d %s>%s enters %s", session.Topic, session.Partition, session.From, session.To, session.Phase)
	chaos.Reached(movePhaseMark(session.Phase))
	if w.phase != phaseSafety {
		return
	}
	w.fanoutMoveLanded(session)
	if session.Phase == "catchup" && session.Topic == w.topic { // storms write to the workload's topic
		w.moves.storm.maybeStart(session.Partition)
	}
	source := w.nodeByID(session.From)
	if source != nil && w.drawsFaults() && m.rng.IntN(100) < moveFaultPercent {
		m.inject(source, dest, session.Phase)
	}
}

// caughtUp may kill the source of a move of the workload's topic whose
// destination copied all of the source's last state before the source
// froze (caughtUpKillPercent).
func (m *moveWatcher) caughtUp(session msg.Move) {
	move := fmt.Sprintf("%s@%d", partitionName(session.Topic, session.Partition), session.StartedAtMs)
	if !m.w.drawsFaults() || m.caughtUpDrawn[move] || session.Topic != m.w.topic { // the witness writes to the workload's topic
		return
	}
	m.caughtUpDrawn[move] = true
	source, dest := m.w.nodeByID(session.From), m.w.nodeByID(session.To)
	if m.caughtUpRng.IntN(100) >= caughtUpKillPercent || source == nil || dest == nil || !source.up() {
		return
	}
	links := append(m.w.peers.between([]*simNode{source}, []*simNode{dest}), m.w.peers.between([]*simNode{dest}, []*simNode{source})...)
	cut := m.w.peers.cut(links)
	m.w.countFault("move-cut-caught-up-source")
	m.w.tracef("net: partition %d cuts %s, the unfrozen source of %s, from %s, whose copy caught up; the source dies once it acknowledges a record",
		cut, source.id, move, dest.id)
	killed := false
	m.w.witnessProduce(source, session.Partition, func() {
		if m.w.phase == phaseSafety && source.up() && m.w.mayTakeDown(source) {
			killed = true
			chaos.Reached(markCaughtUpSourceKilled)
			m.w.tracef("move fault: kill %s, the unfrozen source of %s, which acknowledged a record since", source.id, move)
			source.crashFor("move-kill-caught-up-source", int64(caughtUpKillDownMsMin+m.caughtUpRng.IntN(caughtUpKillDownMsSpread)))
		}
	})
	m.w.at(caughtUpCutMs, func() {
		if !killed {
			m.w.peers.mend(cut)
		}
	})
	m.w.at(caughtUpKillDownMsMin, func() { m.w.peers.mend(cut) })
}

// frozenSourceCaughtUp kills, for longer than a member takes to be
// declared dead plus the force-promote delay, the source of a move whose
// destination enters PrepareHandoff with a complete copy of a state the
// source reported frozen: a destination whose session started again
// after the freeze (it restarted, or its finalize job failed) hears the
// frozen state in a status answer (a first session enters PrepareHandoff
// before the source freezes). Its freeze request is then in flight to a
// dead node, and it holds a complete copy of a final state: the one case
// where it must promote that copy. Drawn once per session.
func (m *moveWatcher) frozenSourceCaughtUp(session msg.Move) {
	name := partitionName(session.Topic, session.Partition)
	source := m.w.nodeByID(session.From)
	if leader, _ := m.w.raft.currentLeader(); leader == source {
		return // a new leader would take longer to declare it dead than the destination waits
	}
	if !m.w.drawsFaults() || source == nil || !source.up() || !frozenFor(source, session) {
		return
	}
	move := fmt.Sprintf("%s@%d", name, session.StartedAtMs)
	if m.caughtUpDrawn[move+" frozen"] {
		return
	}
	m.caughtUpDrawn[move+" frozen"] = true
	if m.caughtUpRng.IntN(100) >= frozenSourceKillPercent || !m.w.mayTakeDown(source) {
		return
	}
	chaos.Reached(markFrozenSourceKilled)
	m.w.tracef("move fault: kill %s, the source of %s frozen for it, whose copy caught up", source.id, move)
	source.crashFor("move-kill-frozen-source", int64(caughtUpKillDownMsMin+m.caughtUpRng.IntN(caughtUpKillDownMsSpread)))
}

// frozenFor reports whether source keeps the session's partition frozen
// for a move to the session's destination (the session's move, unless an
// older move to the same node was replaced meanwhile: the kill is then
// only a kill).
func frozenFor(source *simNode, session msg.Move) bool {
	want := node.FrozenPartition{Topic: session.Topic, Partition: session.Partition, Target: session.To}
	return slices.Contains(source.node.FrozenPartitions(), want)
}

// frozeNow: a source froze a partition; the destination's session is in
// PrepareHandoff until the answer reaches it.
func (m *moveWatcher) frozeNow(source *simNode, frozen node.FrozenPartition) {
	w := m.w
	w.tracef("move: %s froze %s/%d for %s", source.id, frozen.Topic, frozen.Partition, frozen.Target)
	dest := w.nodeByID(frozen.Target)
	if w.drawsFaults() && dest != nil && m.rng.IntN(100) < moveFaultPercent {
		m.inject(source, dest, "handoff")
	}
	if w.drawsFaults() && dest != nil && dest.up() && m.caughtUpRng.IntN(100) < frozenDestBlipPercent && w.mayTakeDown(dest) {
		w.tracef("move fault: kill %s for a blip while %s is frozen for it; its session starts again", dest.id, source.id)
		dest.crashFor("move-kill-dest-blip", int64(frozenDestBlipMsMin+m.caughtUpRng.IntN(frozenDestBlipMsSpread)))
	}
}

// inject draws a fault that can land now, preferring the ones that did
// not land in this phase yet in this run, and lands it.
func (m *moveWatcher) inject(source, dest *simNode, phase string) {
	leader, term := m.w.raft.currentLeader()
	var fresh, possible []string
	for _, kind := range moveFaultKinds {
		if m.possible(kind, source, dest, leader) {
			possible = append(possible, kind)
			if m.landed[moveFaultMark(kind, phase)] == 0 {
				fresh = append(fresh, kind)
			}
		}
	}
	if len(fresh) > 0 {
		possible = fresh
	}
	if len(possible) == 0 {
		return
	}
	kind := possible[m.rng.IntN(len(possible))]
	m.land(kind, source, dest, leader, term)
	mark := moveFaultMark(kind, phase)
	m.landed[mark]++
	chaos.Reached(mark)
	m.w.tracef("move fault %s", mark)
}

// possible reports whether a fault of the kind can land now: kills keep a
// quorum up, cuts from the leader need a leader that is another node.
func (m *moveWatcher) possible(kind string, source, dest, leader *simNode) bool {
	switch kind {
	case "kill-source":
		return source.up() && m.w.mayTakeDown(source)
	case "kill-dest":
		return dest.up() && m.w.mayTakeDown(dest)
	case "cut-source-leader":
		return leader != nil && leader != source
	case "cut-dest-leader":
		return leader != nil && leader != dest
	case "kill-leader":
		return leader != nil && m.w.mayTakeDown(leader)
	case "isolate-leader":
		return leader != nil
	}
	return true
}

// land injects a fault of the kind.
func (m *moveWatcher) land(kind string, source, dest, leader *simNode, term uint64) {
	w := m.w
	switch kind {
	case "kill-source":
		m.kill(source, "move-kill-source")
	case "kill-dest":
		m.kill(dest, "move-kill-dest")
	case "cut-source-dest":
		m.cut(kind, []*simNode{source}, []*simNode{dest}, true)
	case "one-way-source-dest":
		m.cut(kind, []*simNode{source}, []*simNode{dest}, false)
	case "one-way-dest-source":
		m.cut(kind, []*simNode{dest}, []*simNode{source}, false)
	case "cut-source-leader":
		m.cut(kind, []*simNode{source}, []*simNode{leader}, true)
	case "cut-dest-leader":
		m.cut(kind, []*simNode{dest}, []*simNode{leader}, true)
	case "isolate-source":
		m.cut(kind, []*simNode{source}, w.others([]*simNode{source}), true)
	case "kill-leader":
		w.raft.leaderKilled(leader, term)
		m.kill(leader, "move-kill-leader")
	case "isolate-leader":
		m.cut(kind, []*simNode{leader}, w.others([]*simNode{leader}), true)
	}
}

// kill crashes a node for a drawn downtime.
func (m *moveWatcher) kill(n *simNode, kind string) {
	n.crashFor(kind, int64(moveKillDownMsMin+m.rng.IntN(moveKillDownMsSpread)))
}

// cut drops the messages from side a to side b (and back, if both) for a
// drawn duration.
func (m *moveWatcher) cut(kind string, a, b []*simNode, both bool) {
	links := m.w.peers.between(a, b)
	if both {
		links = append(links, m.w.peers.between(b, a)...)
	}
	id := m.w.peers.cut(links)
	durationMs := int64(movePartitionMsMin + m.rng.IntN(movePartitionMsSpread))
	m.w.countFault("move-" + kind)
	m.w.tracef("net: partition %d (%s) cuts %v from %v, both ways %t, for %d ms", id, kind, nodeIDs(a), nodeIDs(b), both, durationMs)
	m.w.at(durationMs, func() { m.w.peers.mend(id) })
}

// maybeChangeLeader kills or cuts off the leader a little after a
// scale-up or a decommission committed: the planner is about to start
// (or has just started) the moves they call for.
func (m *moveWatcher) maybeChangeLeader(after chaos.Mark) {
	if !m.w.drawsFaults() || m.rng.IntN(100) >= leaderChangePercent {
		return
	}
	m.w.at(int64(m.rng.IntN(leaderChangeAfterMsMax+1)), func() {
		leader, term := m.w.raft.currentLeader()
		if m.w.phase != phaseSafety || leader == nil {
			return
		}
		chaos.Reached(after)
		if m.rng.IntN(2) == 0 && m.w.mayTakeDown(leader) {
			m.w.raft.leaderKilled(leader, term)
			m.kill(leader, "move-kill-leader")
			return
		}
		m.cut("isolate-leader", []*simNode{leader}, m.w.others([]*simNode{leader}), true)
	})
}
