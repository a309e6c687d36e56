package sim

import (
	"slices"

	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// leaderClaimFreshMs is how long after its last leader-only message a node
// still counts as leading: a leader heartbeats every Raft tick.
const leaderClaimFreshMs = 5 * clusterMetaTickIntervalMs

// raftView follows the metastore's Raft group from the messages on the
// wire, as the host does for its readiness (a node that sent an append or
// a heartbeat leads): who leads which term, and when each leader applied
// the first entry of its term (the meta Barrier). It checks election
// safety — at most one leader per term — and measures failovers.
type raftView struct {
	w *World
	// leaders maps a term to the node that sent leader-only messages in it.
	leaders map[uint64]string
	// claims holds each node's latest leader-only message: its term and
	// when it was sent. A crash deletes the node's claim.
	claims map[string]leaderClaim
	// firstIndex maps a term to the index of its leader's first entry (the
	// empty entry raft appends on election), from the appends it sent.
	firstIndex map[uint64]uint64
	// barrierMs maps a term to when its leader first sent a commit index
	// covering firstIndex: the Ready that carried that message applied the
	// entry (messages leave after the persist that applies), so from then
	// on Barrier holds on that leader.
	barrierMs map[uint64]int64
	// pending are leader kills whose successor has not reached its barrier.
	pending []failoverStart
	// failoversMs are the measured failovers, in the order they completed.
	failoversMs []int64
}

type leaderClaim struct {
	term uint64
	atMs int64
}

// failoverStart is a kill of the leader of term.
type failoverStart struct {
	atMs   int64
	leader string
	term   uint64
}

func newRaftView(w *World) *raftView {
	return &raftView{w: w, leaders: map[uint64]string{}, claims: map[string]leaderClaim{},
		firstIndex: map[uint64]uint64{}, barrierMs: map[uint64]int64{}}
}

// observe looks at a message a node sends.
func (v *raftView) observe(env msg.Envelope) {
	m, ok := env.Message.(msg.RaftMessage)
	if !ok || m.Message == nil {
		return
	}
	msg := m.Message
	switch msg.GetType() {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap, raftpb.MsgTimeoutNow:
		v.claim(env.From, msg.GetTerm())
		v.noteEntries(msg)
		v.noteCommit(env.From, msg)
		v.w.metaLog.observe(msg)
	}
}

// claim records that from sent a leader-only message in term.
func (v *raftView) claim(from string, term uint64) {
	leader, known := v.leaders[term]
	if known && leader != from {
		v.w.fail("election-safety", "%s and %s both lead term %d", leader, from, term)
		return
	}
	if !known {
		v.leaders[term] = from
		v.w.tracef("raft: %s leads term %d", from, term)
	}
	v.claims[from] = leaderClaim{term: term, atMs: v.w.nowMs}
}

// noteEntries records the first index of the sender's term.
func (v *raftView) noteEntries(msg *raftpb.Message) {
	for _, entry := range msg.GetEntries() {
		if entry.GetTerm() != msg.GetTerm() {
			continue
		}
		if first, ok := v.firstIndex[msg.GetTerm()]; !ok || entry.GetIndex() < first {
			v.firstIndex[msg.GetTerm()] = entry.GetIndex()
		}
	}
}

// noteCommit records the barrier of the sender's term when its commit
// index first covers the term's first entry.
func (v *raftView) noteCommit(from string, msg *raftpb.Message) {
	term := msg.GetTerm()
	first, ok := v.firstIndex[term]
	if _, done := v.barrierMs[term]; done || !ok || msg.GetCommit() < first {
		return
	}
	v.barrierMs[term] = v.w.nowMs
	v.w.tracef("raft: %s applied the first entry of term %d (barrier)", from, term)
	v.resolveFailovers(from, term)
}

// leaderKilled starts a failover measurement.
func (v *raftView) leaderKilled(n *simNode, term uint64) {
	v.pending = append(v.pending, failoverStart{atMs: v.w.nowMs, leader: n.id, term: term})
}

// resolveFailovers completes the measurements that the barrier of term,
// led by leader, ends: another node leads a later term.
func (v *raftView) resolveFailovers(leader string, term uint64) {
	v.pending = slices.DeleteFunc(v.pending, func(start failoverStart) bool {
		if term <= start.term || leader == start.leader {
			return false
		}
		v.failoversMs = append(v.failoversMs, v.w.nowMs-start.atMs)
		return true
	})
}

// nodeDown forgets a node's leadership: a crashed node leads nothing.
func (v *raftView) nodeDown(n *simNode) { delete(v.claims, n.id) }

// freshLeaders lists the up nodes that sent a leader-only message lately,
// in node order, with their terms.
func (v *raftView) freshLeaders() ([]*simNode, []uint64) {
	var leaders []*simNode
	var terms []uint64
	for _, n := range v.w.nodes {
		c, ok := v.claims[n.id]
		if ok && n.up() && v.w.nowMs-c.atMs <= leaderClaimFreshMs {
			leaders, terms = append(leaders, n), append(terms, c.term)
		}
	}
	return leaders, terms
}

// currentLeader is the up node that leads the highest term lately; nil
// when none does.
func (v *raftView) currentLeader() (*simNode, uint64) {
	leaders, terms := v.freshLeaders()
	var best *simNode
	var bestTerm uint64
	for i, n := range leaders {
		if terms[i] > bestTerm {
			best, bestTerm = n, terms[i]
		}
	}
	return best, bestTerm
}

// hasBarrier reports whether the leader of term applied its first entry.
func (v *raftView) hasBarrier(term uint64) bool {
	_, ok := v.barrierMs[term]
	return ok
}
