package rebalance

import (
	"cmp"
	"slices"

	"narad/chaos"
	"narad/invariant"
)

// placePartitions counts every partition where it will be once the moves
// in flight settle, collects the aborts and the movable partitions.
func (p *planner) placePartitions() {
	for i, partition := range p.input.Partitions {
		if partition.Target == "" {
			p.placeStable(i, partition)
		} else {
			p.placeMove(partition)
		}
	}
	invariant.Check(p.inFlight <= len(p.input.Partitions), "rebalance: %d moves in flight among %d partitions",
		p.inFlight, len(p.input.Partitions))
}

// placeStable counts a partition without a target at its owner, where it
// is movable, unless the owner is pinned (down or resting).
func (p *planner) placeStable(i int, partition Partition) {
	owner, found := p.nodeByID[partition.Owner]
	if !found || owner.role.pinned() {
		return
	}
	owner.movable = append(owner.movable, i)
	p.count(owner)
}

// placeMove counts a partition in flight at its target, or at its owner
// when the move is to be aborted.
func (p *planner) placeMove(partition Partition) {
	p.inFlight++
	reason := abortReason(p.roleOfID(partition.Owner), p.roleOfID(partition.Target))
	if reason == "" {
		p.countID(partition.Target)
		return
	}
	chaos.Reached(chaos.MarkMoveAbortPlanned)
	p.aborts = append(p.aborts, Abort{Topic: partition.Topic, Index: partition.Index,
		Owner: partition.Owner, Target: partition.Target, Reason: reason})
	p.countID(partition.Owner)
}

// abortReason says whether a move from an owner to a target in these roles
// should be aborted, and why ("" to keep it).
func abortReason(owner, target role) AbortReason {
	switch {
	case target == roleDown:
		return AbortTargetDown
	case target == roleShedder && owner != roleDown:
		return AbortTargetDraining
	default:
		return ""
	}
}

// countID counts one partition at the node with this id, if it is a
// member that is not pinned.
func (p *planner) countID(id string) {
	if n, found := p.nodeByID[id]; found && !n.role.pinned() {
		p.count(n)
	}
}

// count counts one partition at a node that is not pinned.
func (p *planner) count(n *node) {
	if n.role.pinned() {
		invariant.Broken("rebalance: partition counted at pinned node %q", n.id)
	}
	n.load++
	p.total++
}

// assignShares gives every receiver base = T/R partitions, plus one for
// the T mod R receivers that hold the most (ties by smaller id).
func (p *planner) assignShares() {
	ranking := p.receivers()
	if len(ranking) == 0 {
		return
	}
	slices.SortStableFunc(ranking, func(a, b *node) int { return cmp.Compare(b.load, a.load) })
	base, extra := p.total/len(ranking), p.total%len(ranking)
	sum := 0
	for rank, n := range ranking {
		n.share = base
		if rank < extra {
			n.share++
		}
		sum += n.share
	}
	invariant.Check(sum == p.total, "rebalance: shares sum to %d, total is %d over %d receivers", sum, p.total, len(ranking))
}

// receivers returns the receiving nodes in id order.
func (p *planner) receivers() []*node {
	var receivers []*node
	for _, n := range p.nodes {
		if n.role == roleReceiver {
			receivers = append(receivers, n)
		}
	}
	return receivers
}
