package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
	"narad/msg"
)

// Late duplicate proposals, in percent and simulated milliseconds.
const (
	// lateProposalPercent is the chance that a move's proposal forwarded
	// to the leader during the safety phase arrives a second time, late:
	// every one, since a guarded command applied twice must change nothing
	// and the races the guards are for are rare.
	lateProposalPercent = 100
	// lateProposalDelayMsMin and lateProposalDelayMsMax bound how late:
	// long enough for the move to end, abort or start again meanwhile.
	lateProposalDelayMsMin = 500
	lateProposalDelayMsMax = 20_000
	// lateProposalHeldPercent of the copies are held instead until their
	// partition's next move starts, and arrive right after it (within
	// lateProposalAfterMoveMsMax): the race the guards are for.
	lateProposalHeldPercent    = 50
	lateProposalAfterMoveMsMax = 20
	// lateFlipWithheldPercent of the moves whose flip a follower forwards
	// get every flip proposal withheld (lost on the way) and held until
	// the partition's next move: the source's freeze expires, the move is
	// aborted, and the stale flips arrive once the move was replaced.
	lateFlipWithheldPercent = 25
	// withheldMoveEndsMsMax bounds how long a move whose flips are
	// withheld may stay in the committed placement while its source runs
	// (one incarnation, up all along) with a way to a leader: its
	// source's freeze expires after moveFreezeTTLMs and the source
	// proposes the abort; the rest is room for a proposal lost with a
	// connection and retried, and for the other faults of the safety
	// phase. withheldCheckMs is how often it is checked.
	withheldMoveEndsMsMax = 8_000
	withheldCheckMs       = 250
)

// lateProposals makes, in a moves world, the stale proposal of a move
// that was since replaced: a copy of a move command (SetTarget,
// CompleteMove, ForcePromote, AbortMove) that a node forwards to the
// leader reaches it again seconds later, as a proposal retried by a
// session that did not learn its outcome would. Only the metastore's
// guards keep such a proposal from applying to a later move, and only
// such a race tells a missing guard from a present one (the meta-model
// oracle compares every replica with a naive model of those guards).
type lateProposals struct {
	w   *World
	rng *rand.Rand
	// held are the copies waiting for their partition's next move, by
	// partition name, in the order sent.
	held map[string][]heldProposal
	// withheldMoves says, by move (partition and start), whether its flip
	// proposals are withheld; a move is decided when its first flip
	// proposal is sent.
	withheldMoves map[string]bool
	// withheld lists the moves whose flips are withheld and that have not
	// ended yet, in the order decided, for the check that each ends
	// (checkWithheldEnded, every withheldCheckMs while checking is set).
	withheld []*withheldMove
	checking bool
}

// withheldMove is a move whose flips are withheld. sinceMs is when it was
// decided, or, if later, when its source was last seen down or restarted
// (a source freezes anew at its start, and asks for the abort anew): the
// source's incarnation then is sourceIncarnation, the leader's term term.
// excused is set once the source's one request for the abort may have
// been lost since (the source could not reach a leader, or the term
// changed); a restart of the source clears it.
type withheldMove struct {
	topic             string
	partition         int
	startedAtMs       int64
	sinceMs           int64
	source            string
	sourceIncarnation int
	term              uint64
	excused           bool
}

// heldProposal is a copy of a proposal and the link it goes on.
type heldProposal struct {
	l             *link
	command, kind string
	bytes         []byte
}

func newLateProposals(w *World) *lateProposals {
	return &lateProposals{w: w, rng: newRand(w.opts.Seed, lateProposalStream), held: map[string][]heldProposal{},
		withheldMoves: map[string]bool{}}
}

// sent looks at a message as the network takes it, and may send its
// encoded bytes again later on the same link.
func (lp *lateProposals) sent(l *link, env msg.Envelope, kind string, bytes []byte) {
	command, partition, _ := moveCommandOf(env)
	if lp.w.phase != phaseSafety || command == "" || lp.rng.IntN(100) >= lateProposalPercent {
		return
	}
	bytes = slices.Clone(bytes) // the network reuses its buffer once the message arrived
	if lp.rng.IntN(100) < lateProposalHeldPercent {
		lp.held[partition] = append(lp.held[partition], heldProposal{l: l, command: command, kind: kind, bytes: bytes})
		return
	}
	delayMs := int64(lateProposalDelayMsMin + lp.rng.IntN(lateProposalDelayMsMax-lateProposalDelayMsMin))
	lp.w.at(delayMs, func() { lp.resend(l, command, kind, bytes) })
}

// withhold decides whether a flip proposal is lost on its way and held
// until its partition's next move instead; it reports whether it was.
func (lp *lateProposals) withhold(l *link, env msg.Envelope, kind string, bytes []byte) bool {
	command, partition, startedAtMs := moveCommandOf(env)
	if lp.w.phase != phaseSafety || (command != "complete-move" && command != "force-promote") {
		return false
	}
	move := fmt.Sprintf("%s@%d", partition, startedAtMs)
	withheld, decided := lp.withheldMoves[move]
	if !decided {
		withheld = lp.rng.IntN(100) < lateFlipWithheldPercent
		lp.withheldMoves[move] = withheld
		if withheld {
			lp.watchWithheld(partition, startedAtMs)
		}
	}
	if withheld {
		lp.w.tracef("late proposals: withhold %s of %s", command, move)
		lp.held[partition] = append(lp.held[partition], heldProposal{l: l, command: command, kind: kind, bytes: slices.Clone(bytes)})
	}
	return withheld
}

// watchWithheld starts checking that the withheld move ends.
func (lp *lateProposals) watchWithheld(partition string, startedAtMs int64) {
	topic, index, _ := strings.Cut(partition, "/")
	number, _ := strconv.Atoi(index)
	lp.withheld = append(lp.withheld, &withheldMove{topic: topic, partition: number, startedAtMs: startedAtMs, sinceMs: lp.w.nowMs})
	if !lp.checking {
		lp.checking = true
		lp.w.at(withheldCheckMs, lp.checkWithheldEnded)
	}
}

// checkWithheldEnded fails the run, checker "freeze-ttl", if a move whose
// flips are withheld is still the partition's move in the committed
// placement withheldMoveEndsMsMax after it was withheld, its source up
// all along, never cut off from the leader, and the leader the same:
// only its source's freeze TTL (or the planner, for a dead or
// draining target) ends such a move, and a source frozen for it accepts
// no produce meanwhile. It runs during the safety phase, while the
// flips are withheld.
func (lp *lateProposals) checkWithheldEnded() {
	if lp.w.phase != phaseSafety || lp.w.failure != nil {
		lp.checking = false
		return
	}
	pending := lp.withheld[:0]
	for _, m := range lp.withheld {
		a := lp.w.metaLog.assignment(m.topic, m.partition)
		if a == nil || a.Target == "" || a.MoveStartedAtMs != m.startedAtMs {
			continue // ended
		}
		pending = append(pending, m)
		source := lp.w.nodeByID(a.Owner)
		_, term := lp.w.raft.currentLeader()
		switch {
		case source == nil || !source.up() || a.Owner != m.source || source.incarnation != m.sourceIncarnation:
			m.sinceMs, m.source, m.term, m.excused = lp.w.nowMs, a.Owner, term, false
			if source != nil {
				m.sourceIncarnation = source.incarnation
			}
			continue
		case term != m.term || !lp.reachesLeader(source):
			m.term, m.excused = term, true
		}
		if !m.excused && lp.w.nowMs-m.sinceMs >= withheldMoveEndsMsMax {
			lp.w.fail("freeze-ttl", "the move of %s to %s that started at %d ms has had its flips withheld, its source %s up, for %d ms, and has not ended (freeze TTL %d ms)",
				partitionName(m.topic, m.partition), a.Target, m.startedAtMs, a.Owner, lp.w.nowMs-m.sinceMs, moveFreezeTTLMs)
			return
		}
	}
	lp.withheld = pending
	lp.w.at(withheldCheckMs, lp.checkWithheldEnded)
}

// reachesLeader reports whether there is a leader and n's links to and
// from it are not cut.
func (lp *lateProposals) reachesLeader(n *simNode) bool {
	leader, _ := lp.w.raft.currentLeader()
	if leader == nil || !leader.up() {
		return false
	}
	for _, l := range append(lp.w.peers.between([]*simNode{n}, []*simNode{leader}), lp.w.peers.between([]*simNode{leader}, []*simNode{n})...) {
		if l.cuts > 0 {
			return false
		}
	}
	return true
}

// moveStarted releases the copies held for a partition whose next move
// was committed.
func (lp *lateProposals) moveStarted(topic string, partition int) {
	name := partitionName(topic, partition)
	for _, h := range lp.held[name] {
		lp.w.at(int64(1+lp.rng.IntN(lateProposalAfterMoveMsMax)), func() { lp.resend(h.l, h.command, h.kind, h.bytes) })
	}
	delete(lp.held, name)
}

// resend puts the copy on the link now, behind what the link carries.
func (lp *lateProposals) resend(l *link, command, kind string, bytes []byte) {
	p := lp.w.peers
	if l.cuts > 0 || !l.to.up() || lp.w.phase == phaseDone {
		return
	}
	lp.w.countFault("late-proposal-" + command)
	arrivalMs := max(lp.w.nowMs+peerDelayMsMin, l.lastArrivalMs)
	l.lastArrivalMs = arrivalMs
	epoch := l.epoch
	lp.w.queue.push(arrivalMs, func() { p.arrive(l, epoch, kind, bytes) })
}

// isMoveCommand reports whether an entry's bytes carry one of the move
// commands moveCommandOf names, from the command type byte in front of
// every encoded command: most proposals are heartbeats, and moveCommandOf
// runs twice on each, so they are not decoded.
func isMoveCommand(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	switch meta.CommandType(data[0]) {
	case meta.TypeSetTarget, meta.TypeCompleteMove, meta.TypeForcePromote, meta.TypeAbortMove:
		return true
	}
	return false
}

// moveCommandOf names the move command that env, a proposal forwarded
// to the leader, carries (the first, if several), its partition and, for
// a flip, the start of the move it ends; "" if none.
func moveCommandOf(env msg.Envelope) (command, partition string, startedAtMs int64) {
	m, ok := env.Message.(msg.RaftMessage)
	if !ok || m.Message == nil || m.Message.GetType() != raftpb.MsgProp {
		return "", "", 0
	}
	for _, entry := range m.Message.GetEntries() {
		if !isMoveCommand(entry.GetData()) {
			continue
		}
		_, decoded, err := meta.DecodeCommand(entry.GetData())
		if err != nil {
			continue
		}
		switch c := decoded.(type) {
		case meta.SetTarget:
			return "set-target", partitionName(c.Topic, c.Partition), 0
		case meta.CompleteMove:
			return "complete-move", partitionName(c.Topic, c.Partition), c.ExpectedStartedAtMs
		case meta.ForcePromote:
			return "force-promote", partitionName(c.Topic, c.Partition), c.ExpectedStartedAtMs
		case meta.AbortMove:
			return "abort-move", partitionName(c.Topic, c.Partition), 0
		}
	}
	return "", "", 0
}
