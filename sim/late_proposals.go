package sim

import (
	"math/rand/v2"

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
)

// lateProposalStream numbers the random stream of the late proposals
// apart from the others, so that drawing them moves no other draw.
const lateProposalStream = 7

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
}

func newLateProposals(w *World) *lateProposals {
	return &lateProposals{w: w, rng: newRand(w.opts.Seed, lateProposalStream)}
}

// sent looks at a message as the network takes it, and may send its
// encoded bytes again later on the same link.
func (lp *lateProposals) sent(l *link, env msg.Envelope, kind string, bytes []byte) {
	command := moveCommandOf(env)
	if lp.w.phase != phaseSafety || command == "" || lp.rng.IntN(100) >= lateProposalPercent {
		return
	}
	delayMs := int64(lateProposalDelayMsMin + lp.rng.IntN(lateProposalDelayMsMax-lateProposalDelayMsMin))
	lp.w.at(delayMs, func() { lp.resend(l, command, kind, bytes) })
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

// moveCommandOf names the move command that env, a proposal forwarded
// to the leader, carries (the first, if several); "" if none.
func moveCommandOf(env msg.Envelope) string {
	m, ok := env.Message.(msg.RaftMessage)
	if !ok || m.Message == nil || m.Message.GetType() != raftpb.MsgProp {
		return ""
	}
	for _, entry := range m.Message.GetEntries() {
		_, command, err := meta.DecodeCommand(entry.GetData())
		if err != nil {
			continue
		}
		switch command.(type) {
		case meta.SetTarget:
			return "set-target"
		case meta.CompleteMove:
			return "complete-move"
		case meta.ForcePromote:
			return "force-promote"
		case meta.AbortMove:
			return "abort-move"
		}
	}
	return ""
}
