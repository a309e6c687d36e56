package node

import (
	"errors"
	"slices"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/node/movedest"
)

// The fault sites of the node (chaos.Site...): in a simulated run with
// fault sites on they delay, drop or repeat what the node sends, the way
// a slow or lossy network or disk would; elsewhere chaos.Buggify is false
// and nothing here runs. A delay is work put off to a later Tick, never a
// timer (docs/architecture.md#fault-sites).

// Bounds of the fault sites.
const (
	// delayedWorkMax bounds the work held back by fault sites; a site
	// that would exceed it does not fire.
	delayedWorkMax = 256
	// leaseCutShortDivisor divides the visibility timeout of a
	// reservation cut short.
	leaseCutShortDivisor = 4
)

// delayedWork is something a fault site put off until dueMs (node time).
type delayedWork struct {
	dueMs int64
	run   func()
}

// buggifyDelay reports whether site fires and the node may hold one more
// piece of delayed work.
func (n *Node) buggifyDelay(site chaos.Site) bool {
	return chaos.Buggify(site) && len(n.delayed) < delayedWorkMax
}

// delay runs work at the first Tick at or after delayMs from now.
func (n *Node) delay(site chaos.Site, delayMs int64, work func()) {
	n.observer.Event("fault-site", string(site))
	n.delayed = append(n.delayed, delayedWork{dueMs: n.nowMs + delayMs, run: work})
}

// runDelayed runs the delayed work that is due, earliest first (ties in
// the order it was put off).
func (n *Node) runDelayed() {
	if len(n.delayed) == 0 {
		return
	}
	var due []delayedWork
	n.delayed = slices.DeleteFunc(n.delayed, func(d delayedWork) bool {
		if d.dueMs <= n.nowMs {
			due = append(due, d)
			return true
		}
		return false
	})
	slices.SortStableFunc(due, func(a, b delayedWork) int { return int(a.dueMs - b.dueMs) })
	for _, d := range due {
		d.run()
	}
}

// proposalSites returns the sites of the node's own proposals of a kind:
// the proposal put off, and the proposal made again later ("" for none).
func proposalSites(kind proposalKind) (delayed, duplicated chaos.Site) {
	switch kind {
	case proposalMove:
		return chaos.SiteNodeMoveProposalDelayed, chaos.SiteNodeMoveProposalDuplicated
	case proposalPlan:
		return chaos.SiteNodePlanProposalDelayed, chaos.SiteNodePlanProposalDuplicated
	case proposalHeartbeat:
		return chaos.SiteNodeHeartbeatDelayed, ""
	case proposalMarkDead:
		return "", chaos.SiteNodeMarkDeadDuplicated
	}
	return "", ""
}

// proposalDelayed reports whether a fault site puts the node's own
// proposal off: it is proposed ProposalTimeoutMs later, as a proposal
// stuck on its way to the leader arrives.
func (n *Node) proposalDelayed(kind proposalKind, topicName string, cmd meta.Command) bool {
	site, _ := proposalSites(kind)
	if site == "" || !n.buggifyDelay(site) {
		return false
	}
	n.delay(site, n.cfg.ProposalTimeoutMs, func() { n.proposeNow(0, kind, topicName, cmd) })
	return true
}

// duplicateProposal makes the node's own proposal again twice
// ProposalTimeoutMs later when a fault site fires, as a resent proposal
// whose first copy was not lost.
func (n *Node) duplicateProposal(kind proposalKind, topicName string, cmd meta.Command) {
	_, site := proposalSites(kind)
	if site == "" || !n.buggifyDelay(site) {
		return
	}
	n.delay(site, 2*n.cfg.ProposalTimeoutMs, func() { n.proposeNow(0, kind, topicName, cmd) })
}

// forwardReplyFault is what a fault site does to the answer of a
// forwarded request.
type forwardReplyFault int

const (
	forwardReplySent forwardReplyFault = iota
	forwardReplyLost
	forwardReplyLate
)

// forwardReplyFaultOf decides the fate of the answer to a forwarded
// request; freeze says it answers a MoveFreeze.
func forwardReplyFaultOf(freeze bool) (forwardReplyFault, chaos.Site) {
	lost, late := chaos.SiteNodeForwardReplyLost, chaos.SiteNodeForwardReplyLate
	if freeze {
		lost, late = chaos.SiteNodeFreezeReplyLost, chaos.SiteNodeFreezeReplyLate
	}
	switch {
	case chaos.Buggify(lost):
		return forwardReplyLost, lost
	case chaos.Buggify(late):
		return forwardReplyLate, late
	}
	return forwardReplySent, ""
}

// lateMessage is a message a fault site made late, with that site.
type lateMessage struct {
	site     chaos.Site
	envelope msg.Envelope
}

// holdLateReplies puts off the answers a fault site made late in a Ready
// that was persisted and sent: they leave three quarters of
// ForwardTimeoutMs later, in a later Ready.
func (n *Node) holdLateReplies(rd Ready) {
	for _, late := range rd.late {
		if len(n.delayed) >= delayedWorkMax {
			return // lost instead
		}
		n.delay(late.site, 3*n.cfg.ForwardTimeoutMs/4, func() { n.messages = append(n.messages, late.envelope) })
	}
}

// duplicateProduceForwards sends again, at the end of the Ready, the
// produce forwards a fault site picked when they were started.
func (n *Node) duplicateProduceForwards(rd *Ready) {
	for _, index := range n.forwardedTwice {
		rd.ProduceForwards = append(rd.ProduceForwards, rd.ProduceForwards[index])
	}
	n.forwardedTwice = nil
}

// cutLeaseShort makes a new reservation lapse after a fraction of the
// visibility timeout when a fault site fires.
func (n *Node) cutLeaseShort(p *partition, reservation *lease.Reservation, visibilityMs int64) {
	if !chaos.Buggify(chaos.SiteNodeLeaseCutShort) {
		return
	}
	deadlineMs, err := p.leases.Extend(reservation.Offset, reservation.Nonce, n.nowMs, max(1, visibilityMs/leaseCutShortDivisor))
	n.noteLeaseDeadlines(p)
	if err == nil {
		reservation.DeadlineMs = deadlineMs
	}
}

// moveJobLate reports whether a fault site starts a finalize job late: it
// is handed out FreezeTTLMs later, as on a slow disk. A job whose session
// ended meanwhile is not handed out but discarded unrun (its files are
// the staged copy alone): the partition's directory may belong to
// another incarnation by then (its topic deleted and created again, with
// this node an owner), which an install would remove. Only a job whose
// own move flipped meanwhile still runs: its copy is the partition's log.
func (n *Node) moveJobLate(pending movePending) bool {
	if !n.buggifyDelay(chaos.SiteNodeMoveJobLate) {
		return false
	}
	n.delay(chaos.SiteNodeMoveJobLate, n.cfg.Moves.FreezeTTLMs, func() {
		s := pending.session
		if n.moves[s.key] != s && !n.ownsTheOrphanedCopy(s) {
			pending.job.err = errJobNotRun
			n.jobDone(s, pending.job)
			return
		}
		n.moveJobs = append(n.moveJobs, pending)
	})
	return true
}

// errJobNotRun is the error of a finalize job discarded before it ran.
var errJobNotRun = errors.New("the move ended before its finalize job ran")

// catchUpSlowed reports whether a fault site holds back a destination's
// CatchUp request to its source: it leaves half of ForwardTimeoutMs later,
// if its session is still the current one.
func (n *Node) catchUpSlowed(s *moveSession, send func()) bool {
	if s.machine.Phase() != movedest.PhaseCatchUp || !n.buggifyDelay(chaos.SiteNodeCatchUpSlowed) {
		return false
	}
	n.delay(chaos.SiteNodeCatchUpSlowed, n.cfg.ForwardTimeoutMs/2, func() {
		if n.moves[s.key] == s {
			send()
		}
	})
	return true
}

// maybeForwardTwice marks the produce forward just started at index of
// produceForwards to be sent twice when a fault site fires.
func (n *Node) maybeForwardTwice(index int) {
	if chaos.Buggify(chaos.SiteNodeProduceForwardedTwice) {
		n.observer.Event("fault-site", string(chaos.SiteNodeProduceForwardedTwice))
		n.forwardedTwice = append(n.forwardedTwice, index)
	}
}

// isFreeze reports whether a forwarded request is a MoveFreeze.
func isFreeze(req msg.Request) bool {
	_, ok := req.(msg.MoveFreeze)
	return ok
}
