package sim

import (
	"narad/chaos"
	"narad/storage"
)

// Cluster fault timings, in simulated milliseconds.
const (
	// partitionMsMin and partitionMsSpread: a partition lasts from a
	// blip to longer than clusterMemberDeadAfterMs, so some cut-off
	// members are declared dead and their partitions skipped.
	partitionMsMin    = 300
	partitionMsSpread = 6_000
	// syncFaultArmedMsMax is how long an armed fsync failure may wait on a
	// node of a cluster before it is disarmed (a node that owns no
	// partition may never sync its disk; it must not hold a slot of the
	// down budget forever).
	syncFaultArmedMsMax = 5_000
)

// armSyncFailure makes the node's next fsync fail (the node then crashes).
// In a cluster the node counts as at risk until the fault fires or is
// disarmed.
func (w *World) armSyncFailure(n *simNode) {
	n.fs.FailNext(storage.FaultSync, storage.ErrIO, 1)
	w.countFault("sync-failure-armed")
	if !w.clustered() {
		return
	}
	w.markAtRisk(n, storage.FaultSync)
}

// markAtRisk counts n as at risk of going down (mayTakeDown) while a
// fault of kind op is armed on its disk, for at most syncFaultArmedMsMax:
// then the fault is cancelled, unless it was cancelled or armed anew
// meanwhile.
func (w *World) markAtRisk(n *simNode, op storage.FaultOp) {
	if n.riskArmed == nil {
		n.riskArmed = map[storage.FaultOp]int{}
	}
	n.armGeneration++
	generation := n.armGeneration
	n.riskArmed[op] = generation
	w.at(syncFaultArmedMsMax, func() {
		if n.riskArmed[op] == generation {
			n.fs.FailNext(op, nil, 0)
			delete(n.riskArmed, op)
		}
	})
}

// atRisk reports whether a fault that may crash n is armed on its disk.
func (n *simNode) atRisk() bool { return len(n.riskArmed) > 0 }

// disarmRisks cancels the faults armed on n that may crash it: it went
// down (one of them most likely fired), and what is left of them (a
// namespace fault arms up to three operations) must not crash it again
// outside the down budget.
func (n *simNode) disarmRisks() {
	for op := range n.riskArmed { //determinism:ok each cancelled, order unseen
		n.fs.FailNext(op, nil, 0)
	}
	n.riskArmed = nil
}

// forgetRisk notes that a fault of kind op armed on n no longer may crash
// it: a fault aimed at a move's job replaced it (FailNext keeps one rule
// an operation).
func (n *simNode) forgetRisk(op storage.FaultOp) { delete(n.riskArmed, op) }

// injectClusterFault injects one of the faults only a cluster has.
func (w *World) injectClusterFault(kind string) {
	switch kind {
	case "kill-leader":
		w.killLeader()
	case "kill-follower":
		w.killFollower()
	case "isolate":
		w.isolate()
	case "split":
		w.split()
	case "one-way":
		w.oneWay()
	case "connection-reset":
		w.resetConnection()
	default:
		panic("sim: unknown fault kind " + kind)
	}
}

// killLeader crashes the node that leads the metastore, if one does and a
// quorum stays up; the failover from then to a successor's barrier is
// measured.
func (w *World) killLeader() {
	leader, term := w.raft.currentLeader()
	if leader == nil || !w.mayTakeDown(leader) {
		w.tracef("fault kill-leader skipped: no leader, or a minority is down already")
		return
	}
	chaos.Reached(markLeaderKilled)
	w.raft.leaderKilled(leader, term)
	leader.crash("kill-leader")
}

// killFollower crashes an up node that does not lead, if a quorum stays
// up.
func (w *World) killFollower() {
	leader, _ := w.raft.currentLeader()
	var followers []*simNode
	for _, n := range w.nodes {
		if n.up() && n != leader {
			followers = append(followers, n)
		}
	}
	if len(followers) == 0 {
		return
	}
	n := followers[w.faultRng.IntN(len(followers))]
	if !w.mayTakeDown(n) {
		w.tracef("fault kill-follower of %s skipped: a minority is down already", n.id)
		return
	}
	chaos.Reached(markFollowerKilled)
	n.crash("kill-follower")
}

// isolate cuts one node off from every other, both ways: half the time
// the leader.
func (w *World) isolate() {
	target := w.randomNode(w.faultRng)
	if leader, _ := w.raft.currentLeader(); leader != nil && w.faultRng.IntN(2) == 0 {
		target = leader
		chaos.Reached(markLeaderIsolated)
	}
	w.partition("isolate", []*simNode{target})
}

// split cuts a random minority off from the majority, both ways.
func (w *World) split() {
	order := w.faultRng.Perm(len(w.nodes))
	size := 1 + w.faultRng.IntN(w.minorityMax())
	minority := make([]*simNode, size)
	for i := range size {
		minority[i] = w.nodes[order[i]]
	}
	w.partition("split", minority)
}

// partition cuts the links between side and the other nodes, both ways,
// for a drawn duration.
func (w *World) partition(kind string, side []*simNode) {
	rest := w.others(side)
	links := append(w.peers.between(side, rest), w.peers.between(rest, side)...)
	id := w.peers.cut(links)
	durationMs := int64(partitionMsMin + w.faultRng.IntN(partitionMsSpread))
	chaos.Reached(markPartitionFull)
	w.countFault(kind)
	w.tracef("net: partition %d cuts %v from %v for %d ms", id, nodeIDs(side), nodeIDs(rest), durationMs)
	w.at(durationMs, func() { w.peers.mend(id) })
}

// oneWay drops every message from one node to another while the other
// direction still flows.
func (w *World) oneWay() {
	order := w.faultRng.Perm(len(w.nodes))
	from, to := w.nodes[order[0]], w.nodes[order[1]]
	id := w.peers.cut([]*link{w.peers.links[from.index][to.index]})
	durationMs := int64(partitionMsMin + w.faultRng.IntN(partitionMsSpread))
	chaos.Reached(markPartitionOneWay)
	w.countFault("one-way")
	w.tracef("net: partition %d drops %s>%s for %d ms", id, from.id, to.id, durationMs)
	w.at(durationMs, func() { w.peers.mend(id) })
}

// resetConnection resets one link: what is in flight on it is lost.
func (w *World) resetConnection() {
	order := w.faultRng.Perm(len(w.nodes))
	from, to := w.nodes[order[0]], w.nodes[order[1]]
	w.peers.reset(w.peers.links[from.index][to.index])
	w.countFault("connection-reset")
	w.tracef("net: connection %s>%s reset", from.id, to.id)
}

// others lists the nodes not in side, in node order.
func (w *World) others(side []*simNode) []*simNode {
	in := make([]bool, len(w.nodes))
	for _, n := range side {
		in[n.index] = true
	}
	var rest []*simNode
	for _, n := range w.nodes {
		if !in[n.index] {
			rest = append(rest, n)
		}
	}
	return rest
}
