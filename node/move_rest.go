package node

import (
	"cmp"
	"fmt"
	"slices"

	"narad/chaos"
	"narad/meta"
	"narad/rebalance"
)

// The leader's cooling-off of destinations whose moves fail
// (rebalance.Member.Resting; docs/architecture.md#the-planner). The
// planner remembers nothing between plans, so a receiver that heartbeats
// but cannot take copies (a full disk, a broken directory) got every move
// its deficit allowed, each aborted after its restarts, and a drain whose
// partitions it had to take never ended. The leader watches how the moves
// it saw in flight end: one that ends without its flip is a failure of
// its destination; Moves.DestinationFailuresMax failures in a row, with
// no completed move between, rest the destination for
// Moves.DestinationRestMs (each later rest in a row twice as long, up to
// 16 times), during which the planner gives it nothing new and the
// others' shares take its part.
//
// The memory is the leader's own, not the metastore's: a new leader
// starts without it and learns again, at the cost of the moves it takes
// to fail again.

// destinationRest is the leader's memory of its destinations. Changed by
// the loop only: in planMoves, and by the outcomes of the plan's own
// proposals (watchPlanned).
type destinationRest struct {
	// flights are the moves in flight the last plan read, and those the
	// leader's plans started since (watchPlanned), by partition: their
	// owner and target then. At most one entry a partition; emptied while
	// this node is not the leader.
	flights map[rebalance.PartitionRef]flight
	// failures counts, by destination, the moves to it that ended without
	// their flip since its last completed one or its last rest. Only
	// members' ids; an entry at 0 is deleted.
	failures map[string]int
	// untilMs is, by destination, when its rest ends (node time); an entry
	// whose time has come is deleted at the next plan.
	untilMs map[string]int64
	// rests counts, by destination, its rests since its last completed
	// move: each rest lasts twice the one before, up to
	// destinationRestDoublingsMax doublings. Only members' ids.
	rests map[string]int
}

// destinationRestDoublingsMax bounds the growth of a destination's rests:
// the fifth and later in a row last 16 times Moves.DestinationRestMs (16
// minutes by default). A destination that never takes a copy then costs
// two failed moves every 16 minutes, not every minute.
const destinationRestDoublingsMax = 4

// flight is a move in flight as a plan read it: its owner and target,
// its topic's identity (a topic deleted and created again under the same
// name is another topic), and whether its owner was draining at some plan
// that saw it (a cancelled drain aborts the moves off the node that has
// not started copying).
type flight struct {
	owner, target string
	identity      meta.TopicIdentity
	ownerDraining bool
}

// sameMove reports whether two flights are the same move of a partition.
func (f flight) sameMove(other flight) bool {
	return f.owner == other.owner && f.target == other.target && f.identity == other.identity
}

// flightOf is the flight of a move of topic from owner to target, as the
// applied state has it now.
func (n *Node) flightOf(topic, owner, target string) flight {
	member, _ := n.meta.State().Member(owner)
	return flight{owner: owner, target: target, identity: n.known[topic], ownerDraining: member.Draining}
}

// resting reports whether the destination id rests now.
func (n *Node) resting(id string) bool { return n.rest.untilMs[id] > n.nowMs }

// markResting sets Resting on the input's members that rest now, and on
// those whose disk is under its reserve (Member.DiskLow): like a resting
// destination, such a member takes no new partition and keeps its own
// (moving them off would fill other disks with copies while it refuses
// writes only until it has room again). narad_moves_resting_destinations
// counts the failed destinations' rests only; disk_low is its own field
// of the members list.
func (n *Node) markResting(input *rebalance.Input) {
	for i := range input.Members {
		id := input.Members[i].ID
		member, _ := n.meta.State().Member(id)
		input.Members[i].Resting = n.resting(id) || member.DiskLow
	}
}

// watchPlanned follows a planner's command of this node that applied. A
// move it started (SetTarget) is watched from now: the next plan counts
// its end even if it ended before that plan read the placement (a small
// partition's move takes less than a plan interval). A move it aborted
// (AbortMove: a target down or draining, a drain cancelled) is not
// watched any more: that end is the leader's decision, not the
// destination's failure. (An abort for a cancelled drain proposed by
// another node does count against its destination: at most one rest,
// after an operator's cancel.)
func (n *Node) watchPlanned(command meta.Command) {
	if !n.meta.IsLeader() {
		return
	}
	switch command := command.(type) {
	case meta.SetTarget:
		if n.rest.flights == nil {
			n.rest.flights = map[rebalance.PartitionRef]flight{}
		}
		n.rest.flights[rebalance.PartitionRef{Topic: command.Topic, Index: command.Partition}] = n.flightOf(command.Topic, command.ExpectedOwner, command.Target)
	case meta.AbortMove:
		delete(n.rest.flights, rebalance.PartitionRef{Topic: command.Topic, Index: command.Partition})
	}
}

// forgetFlights drops the leader's memory, flights, failures and rests: a
// node that is not the leader watches no move end and rests no one, and a
// later leadership starts from what it reads then.
func (n *Node) forgetFlights() {
	n.rest = destinationRest{}
}

// watchFlights compares the moves in flight the last plan read with those
// of partitions, the input of the plan about to run, and counts each that
// ended: at its target's completion or failure. It ends the rests whose
// time came and forgets the failures of ids that are no longer members.
func (n *Node) watchFlights(partitions []rebalance.Partition) {
	current := make(map[rebalance.PartitionRef]flight, len(n.rest.flights))
	for _, partition := range partitions {
		if partition.Target != "" {
			ref := rebalance.PartitionRef{Topic: partition.Topic, Index: partition.Index}
			now := n.flightOf(partition.Topic, partition.Owner, partition.Target)
			if before, watched := n.rest.flights[ref]; watched && before.sameMove(now) {
				now.ownerDraining = now.ownerDraining || before.ownerDraining
			}
			current[ref] = now
		}
	}
	ended := make([]rebalance.PartitionRef, 0, len(n.rest.flights))
	for ref, before := range n.rest.flights { //determinism:ok sorted below
		if now, inFlight := current[ref]; !inFlight || !now.sameMove(before) {
			ended = append(ended, ref)
		}
	}
	slices.SortFunc(ended, func(a, b rebalance.PartitionRef) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
	})
	for _, ref := range ended {
		n.flightEnded(ref, n.rest.flights[ref])
	}
	n.rest.flights = current
	for id, until := range n.rest.untilMs { //determinism:ok deletes only
		if until <= n.nowMs {
			delete(n.rest.untilMs, id)
		}
	}
	n.dropNonMembers(n.rest.failures)
	n.dropNonMembers(n.rest.rests)
}

// dropNonMembers deletes the counts of ids that are no longer members.
func (n *Node) dropNonMembers(counts map[string]int) {
	for id := range counts { //determinism:ok deletes only
		if _, member := n.meta.State().Member(id); !member {
			delete(counts, id)
		}
	}
}

// flightEnded counts the end of a move the last plan saw in flight: a
// flip to its target is a completion; the partition back at its owner
// with another target or none is a failure of the target, unless the
// move ended for another reason than the target's: a planner's abort of
// a target down or draining (the target does not receive now), a
// deleted or re-created topic (another identity, or none), an owner
// that died (its destination gives up on a silent source) or whose drain
// was cancelled (the moves off it that had not started copying are
// aborted).
func (n *Node) flightEnded(ref rebalance.PartitionRef, before flight) {
	assignment, found := n.meta.State().Assignment(ref.Topic, ref.Index)
	identity, known := n.known[ref.Topic]
	owner, _ := n.meta.State().Member(before.owner)
	switch {
	case !found || !known || identity != before.identity:
	case assignment.Owner == before.target:
		delete(n.rest.failures, before.target)
		delete(n.rest.rests, before.target)
	case assignment.Owner != before.owner || !n.receives(before.target) || !owner.Alive:
	case before.ownerDraining && !owner.Draining:
	default:
		n.destinationFailed(before.target, ref)
	}
}

// receives reports whether id is a member that may take partitions.
func (n *Node) receives(id string) bool {
	member, found := n.meta.State().Member(id)
	return found && n.receiving(member)
}

// receiving reports whether the member may take partitions: alive, not
// draining, and not retired (a retired member listed again by a late
// heartbeat is alive and not draining until forgetRetiredMembers marks it
// draining again, and it would never follow the metastore).
func (n *Node) receiving(m meta.Member) bool {
	return m.Receiving() && !n.meta.State().Retired(m.ID)
}

// destinationFailed counts a failed move to id and rests id once the
// failures in a row reach Moves.DestinationFailuresMax.
func (n *Node) destinationFailed(id string, ref rebalance.PartitionRef) {
	if n.rest.failures == nil {
		n.rest.failures = map[string]int{}
	}
	n.rest.failures[id]++
	if n.rest.failures[id] < n.cfg.Moves.DestinationFailuresMax {
		return
	}
	delete(n.rest.failures, id)
	if n.rest.untilMs == nil {
		n.rest.untilMs, n.rest.rests = map[string]int64{}, map[string]int{}
	}
	restMs := n.cfg.Moves.DestinationRestMs << min(n.rest.rests[id], destinationRestDoublingsMax)
	n.rest.rests[id]++
	n.rest.untilMs[id] = n.nowMs + restMs
	chaos.Reached(chaos.MarkNodeDestinationRested)
	n.observer.Event("move-destination-resting", fmt.Sprintf("%s: %d moves to it in a row ended without their flip (the last %s/%d); it takes no new partition for %d ms (rest %d since its last completed move)",
		id, n.cfg.Moves.DestinationFailuresMax, ref.Topic, ref.Index, restMs, n.rest.rests[id]))
}

// restingDestinations counts the destinations that rest now.
func (n *Node) restingDestinations() int {
	count := 0
	for _, until := range n.rest.untilMs { //determinism:ok a count
		if until > n.nowMs {
			count++
		}
	}
	return count
}

// RestsEndMs is when the last of the destinations resting now ends its
// rest (node time), 0 when none rests: until then the planner gives it no
// partition, however unbalanced the placement. Only a leader rests
// destinations; the simulator's liveness check waits this long for the
// placement to settle.
func (n *Node) RestsEndMs() int64 {
	var end int64
	for _, until := range n.rest.untilMs { //determinism:ok a maximum
		if until > n.nowMs {
			end = max(end, until)
		}
	}
	return end
}
