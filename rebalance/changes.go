package rebalance

import (
	"maps"
	"slices"

	"narad/chaos"

	"narad/invariant"
)

// planChanges picks the moves to start, at most as many as there are free
// slots, by the order in the package doc. Without a receiver nothing can
// move: a shedder keeps its partitions until one appears.
func (p *planner) planChanges() []Change {
	slots := p.input.MaxInFlightMoves - p.inFlight
	if len(p.receivers()) == 0 {
		return nil
	}
	p.setQuotas()
	var changes []Change
	for len(changes) < slots {
		source := p.pickSource()
		if source == nil {
			return changes
		}
		destination := p.pickDestination()
		if destination == nil {
			invariant.Broken("rebalance: source %q has %d partitions to give but no receiver has a deficit",
				source.id, source.leaving)
		}
		changes = append(changes, p.takeMove(source, destination))
	}
	if p.pickSource() != nil {
		chaos.Reached(chaos.MarkMovePlanBoundReached)
	}
	return changes
}

// setQuotas sets how many partitions each node may give (leaving) or take
// (deficit).
func (p *planner) setQuotas() {
	for _, n := range p.nodes {
		switch n.role {
		case roleShedder:
			n.leaving = len(n.movable)
		case roleReceiver:
			n.leaving = min(len(n.movable), max(0, n.load-n.share))
			n.deficit = max(0, n.share-n.load)
		}
	}
}

// pickSource returns the node the next partition leaves: shedders first,
// then the most partitions still to leave, then the smaller id; nil when
// none has any.
func (p *planner) pickSource() *node {
	var best *node
	for _, n := range p.nodes {
		if n.leaving > 0 && (best == nil || ranksAboveAsSource(n, best)) {
			best = n
		}
	}
	return best
}

// ranksAboveAsSource reports whether n should give before best, which
// precedes n in id order.
func ranksAboveAsSource(n, best *node) bool {
	if (n.role == roleShedder) != (best.role == roleShedder) {
		return n.role == roleShedder
	}
	return n.leaving > best.leaving
}

// pickDestination returns the receiver with the largest deficit, ties by
// smaller id; nil when no receiver has a deficit.
func (p *planner) pickDestination() *node {
	var best *node
	for _, n := range p.nodes {
		if n.deficit > 0 && (best == nil || n.deficit > best.deficit) {
			best = n
		}
	}
	return best
}

// takeMove moves one partition from source to destination in the
// planner's counts and returns the change.
func (p *planner) takeMove(source, destination *node) Change {
	if source == destination {
		invariant.Broken("rebalance: node %q is both source and destination (load %d, share %d)",
			source.id, source.load, source.share)
	}
	partition := p.input.Partitions[source.takePartition(p.input, destination.id)]
	if partition.Owner != source.id || partition.Target != "" {
		invariant.Broken("rebalance: planned %s/%d from %q but it is %q -> %q", partition.Topic, partition.Index,
			source.id, partition.Owner, partition.Target)
	}
	p.keepApartFrom(PartitionRef{partition.Topic, partition.Index}, destination.id)
	source.leaving--
	source.load--
	destination.deficit--
	destination.load++
	if destination.load > destination.share || (source.role == roleReceiver && source.load < source.share) {
		invariant.Broken("rebalance: move %q -> %q overshoots: loads %d, %d against shares %d, %d", source.id,
			destination.id, source.load, destination.load, source.share, destination.share)
	}
	return Change{Topic: partition.Topic, Index: partition.Index, From: source.id, To: destination.id}
}

// keepApartFrom adds destination to the Apart list of each counterpart
// of moved, which the plan just sent there: a later move of the same
// plan then prefers to keep that counterpart off it.
func (p *planner) keepApartFrom(moved PartitionRef, destination string) {
	counterparts := p.input.Counterparts[moved]
	if len(counterparts) == 0 {
		return
	}
	if !p.apartCopied {
		p.input.Apart, p.apartCopied = maps.Clone(p.input.Apart), true
		if p.input.Apart == nil {
			p.input.Apart = map[PartitionRef][]string{}
		}
	}
	for _, counterpart := range counterparts {
		list := p.input.Apart[counterpart]
		if at, found := slices.BinarySearch(list, destination); !found {
			p.input.Apart[counterpart] = slices.Insert(slices.Clone(list), at, destination)
		}
	}
}

// takePartition removes and returns the movable partition that leaves
// next for destination: of the topic with the most movable partitions
// here (ties by the smaller topic name, which comes first), the highest
// index; but when that one should stay apart from destination, the first
// partition in that order that need not (if any).
func (n *node) takePartition(in Input, destination string) int {
	if len(n.movable) == 0 {
		invariant.Broken("rebalance: node %q gives a partition but has none movable", n.id)
	}
	order := n.leavingOrder(in.Partitions)
	at := order[0]
	for _, candidate := range order {
		partition := in.Partitions[n.movable[candidate]]
		if !slices.Contains(in.Apart[PartitionRef{partition.Topic, partition.Index}], destination) {
			at = candidate
			break
		}
	}
	taken := n.movable[at]
	n.movable = append(n.movable[:at], n.movable[at+1:]...)
	return taken
}

// leavingOrder lists positions in n.movable in the order partitions
// leave: topics by most movable partitions here (ties by the smaller
// name), and within a topic the highest index first.
func (n *node) leavingOrder(partitions []Partition) []int {
	type run struct{ start, end int }
	var runs []run
	for start := 0; start < len(n.movable); {
		end := start + 1
		for end < len(n.movable) && partitions[n.movable[end]].Topic == partitions[n.movable[start]].Topic {
			end++
		}
		runs = append(runs, run{start, end})
		start = end
	}
	slices.SortStableFunc(runs, func(a, b run) int { return (b.end - b.start) - (a.end - a.start) })
	order := make([]int, 0, len(n.movable))
	for _, r := range runs {
		for i := r.end - 1; i >= r.start; i-- {
			order = append(order, i)
		}
	}
	return order
}
