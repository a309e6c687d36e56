package rebalance

import (
	"cmp"
	"fmt"
	"slices"

	"narad/meta"
)

// StateReader is the part of meta.State the planner reads; *meta.State
// implements it.
type StateReader interface {
	// Topics returns every topic, sorted by name.
	Topics() []meta.TopicRecord
	// Members returns every member, sorted by id.
	Members() []meta.Member
	// Retired reports whether the member's decommission is complete (it
	// left the voters): it sheds and never receives, draining or not.
	Retired(id string) bool
}

var _ StateReader = (*meta.State)(nil)

// InputFromState builds the planner's input from the metastore's state:
// one Partition per assignment and one Member per member.
func InputFromState(state StateReader, maxInFlightMoves int) Input {
	topics := state.Topics()
	count := 0
	for _, topic := range topics {
		count += len(topic.Assignments)
	}
	partitions := make([]Partition, 0, count)
	for _, topic := range topics {
		for index, assignment := range topic.Assignments {
			partitions = append(partitions, Partition{Topic: topic.Name, Index: index,
				Owner: assignment.Owner, Target: assignment.Target})
		}
	}
	metaMembers := state.Members()
	members := make([]Member, 0, len(metaMembers))
	for _, member := range metaMembers {
		// a retired member listed again by a late heartbeat sheds, as it
		// will once marked draining again (node: forgetRetiredMembers)
		members = append(members, Member{ID: member.ID, Alive: member.Alive, Draining: member.Draining || state.Retired(member.ID)})
	}
	apart, counterparts := apartOf(topics)
	return Input{Partitions: partitions, Members: members, MaxInFlightMoves: maxInFlightMoves, Apart: apart, Counterparts: counterparts}
}

// apartOf lists, for the partitions of fan-out parents and children, the
// nodes where the partition of the same index of the other side is (its
// owner and its target), sorted; nil without fan-out.
func apartOf(topics []meta.TopicRecord) (map[PartitionRef][]string, map[PartitionRef][]PartitionRef) {
	byName := map[string]meta.TopicRecord{}
	for _, topic := range topics {
		byName[topic.Name] = topic
	}
	var apart map[PartitionRef][]string
	var counterparts map[PartitionRef][]PartitionRef
	for _, topic := range topics {
		parent, isChild := byName[topic.Parent]
		if !isChild {
			continue
		}
		for index := range min(len(topic.Assignments), len(parent.Assignments)) {
			if apart == nil {
				apart, counterparts = map[PartitionRef][]string{}, map[PartitionRef][]PartitionRef{}
			}
			child, of := PartitionRef{topic.Name, index}, PartitionRef{parent.Name, index}
			apart[child] = addNodes(apart[child], parent.Assignments[index])
			apart[of] = addNodes(apart[of], topic.Assignments[index])
			counterparts[child] = append(counterparts[child], of)
			counterparts[of] = append(counterparts[of], child)
		}
	}
	return apart, counterparts
}

// addNodes adds the owner and target of a placement to a sorted set.
func addNodes(set []string, a meta.Assignment) []string {
	for _, id := range []string{a.Owner, a.Target} {
		if at, found := slices.BinarySearch(set, id); id != "" && !found {
			set = slices.Insert(set, at, id)
		}
	}
	return set
}

// Validate reports the first broken invariant of the input (in sorted
// order, so the answer does not depend on the input's order), or nil.
func (in Input) Validate() error { return in.sorted().validate() }

// sorted returns the input with partitions sorted by (topic, index) and
// members by id. A slice that is out of order is sorted in a copy; one in
// order (InputFromState's output is) is shared, which is safe because
// nothing in this package writes to an input's slices.
func (in Input) sorted() Input {
	sorted := in
	if !slices.IsSortedFunc(in.Partitions, comparePartitions) {
		sorted.Partitions = slices.Clone(in.Partitions)
		slices.SortFunc(sorted.Partitions, comparePartitions)
	}
	if !slices.IsSortedFunc(in.Members, compareMembers) {
		sorted.Members = slices.Clone(in.Members)
		slices.SortFunc(sorted.Members, compareMembers)
	}
	return sorted
}

// compareMembers orders members by id.
func compareMembers(a, b Member) int { return cmp.Compare(a.ID, b.ID) }

// comparePartitions orders partitions by (topic, index).
func comparePartitions(a, b Partition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
}

// validate checks a sorted input.
func (in Input) validate() error {
	if in.MaxInFlightMoves < 1 || in.MaxInFlightMoves > MaxInFlightMovesLimit {
		return fmt.Errorf("%w: %d, want 1..%d", ErrMaxInFlightMovesInvalid, in.MaxInFlightMoves, MaxInFlightMovesLimit)
	}
	if err := validatePartitions(in.Partitions); err != nil {
		return err
	}
	return validateMembers(in.Members)
}

// validatePartitions checks partitions sorted by (topic, index).
func validatePartitions(partitions []Partition) error {
	for i, partition := range partitions {
		if partition.Topic == "" || partition.Index < 0 || partition.Owner == "" || partition.Target == partition.Owner {
			return fmt.Errorf("%w: %+v", ErrPartitionInvalid, partition)
		}
		if i > 0 && comparePartitions(partitions[i-1], partition) == 0 {
			return fmt.Errorf("%w: %s/%d", ErrPartitionDuplicate, partition.Topic, partition.Index)
		}
	}
	return nil
}

// validateMembers checks members sorted by id.
func validateMembers(members []Member) error {
	for i, member := range members {
		if member.ID == "" {
			return fmt.Errorf("%w: empty id", ErrMemberInvalid)
		}
		if i > 0 && members[i-1].ID == member.ID {
			return fmt.Errorf("%w: %q", ErrMemberDuplicate, member.ID)
		}
	}
	return nil
}
