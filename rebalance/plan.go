package rebalance

import (
	"cmp"
	"slices"
)

// Plan computes, for one snapshot, the moves to start and the moves to
// abort, by the rules in the package doc. It fails only when the input
// breaks an invariant of Input (an error wrapping one of the Err
// sentinels), and then plans nothing.
func Plan(in Input) (Result, error) {
	sorted := in.sorted()
	if err := sorted.validate(); err != nil {
		return Result{}, err
	}
	p := newPlanner(sorted)
	p.placePartitions()
	p.assignShares()
	result := Result{Changes: p.planChanges(), Aborts: p.aborts}
	slices.SortFunc(result.Changes, compareChanges)
	checkResultIfEnabled(sorted, result)
	return result, nil
}

// role is what a member does in the plan.
type role int

const (
	// roleDown: not alive, or not a member. Its partitions are pinned.
	roleDown role = iota
	// roleReceiver: alive and not draining; gets a share.
	roleReceiver
	// roleShedder: alive and draining; must end with no partitions.
	roleShedder
	// roleResting: alive, not draining, resting (Member.Resting). Its
	// partitions are pinned as a down node's are, but the moves in flight
	// to it are kept.
	roleResting
)

// roleOf returns the role of a member.
func roleOf(member Member) role {
	switch {
	case !member.Alive:
		return roleDown
	case member.Draining:
		return roleShedder
	case member.Resting:
		return roleResting
	default:
		return roleReceiver
	}
}

// pinned reports whether the partitions placed on a node of this role
// stay where they are, out of the total T: a down or resting node's.
func (r role) pinned() bool { return r == roleDown || r == roleResting }

// node is the planner's view of one member.
type node struct {
	// id and role are fixed when the planner is built.
	id   string
	role role
	// load counts the partitions placed on this node (package doc,
	// "Placement"). Only placePartitions and takeMove change it.
	// Invariant: 0 for a pinned (down or resting) node.
	load int
	// share is the receiver's share of the total, set by assignShares.
	// Invariant: 0 for a shedder or a pinned node.
	share int
	// movable are the indexes (into the sorted partitions) of the stable
	// partitions this node owns, in (topic, index) order. Invariant: empty
	// for a pinned node. takePartition removes the ones that leave.
	movable []int
	// leaving is how many more partitions may leave: all movable ones of
	// a shedder, up to the surplus of a receiver. Set by planChanges.
	leaving int
	// deficit is how many more partitions the receiver may take. Set by
	// planChanges. Invariant: 0 for a shedder or a down node.
	deficit int
}

// planner holds the working state of one Plan call.
type planner struct {
	// input is sorted and valid; the planner changes only its own copy
	// of Apart (keepApartFrom, which makes it at its first write: most
	// plans move nothing), never the caller's.
	input Input
	// apartCopied is set once input.Apart is the planner's own copy.
	apartCopied bool
	// nodes are the members, in id order.
	nodes []*node
	// nodeByID indexes nodes; it is only read through lookups, never
	// ranged over.
	nodeByID map[string]*node
	// total is T: the partitions placed on a receiver or a shedder.
	total int
	// inFlight counts the partitions with a Target.
	inFlight int
	// aborts are the moves to cancel, in (topic, index) order.
	aborts []Abort
}

// newPlanner builds the planner for a sorted, valid input.
func newPlanner(in Input) *planner {
	p := &planner{input: in, nodes: make([]*node, 0, len(in.Members)),
		nodeByID: make(map[string]*node, len(in.Members))}
	for _, member := range in.Members {
		n := &node{id: member.ID, role: roleOf(member)}
		p.nodes = append(p.nodes, n)
		p.nodeByID[member.ID] = n
	}
	return p
}

// roleOfID returns the role of a node id; an id that is not a member is
// down.
func (p *planner) roleOfID(id string) role {
	if n, found := p.nodeByID[id]; found {
		return n.role
	}
	return roleDown
}

// compareChanges orders changes by (topic, index).
func compareChanges(a, b Change) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
}
