package rebalance

import (
	"errors"
	"fmt"
	"slices"

	"narad/invariant"
)

// checkResultIfEnabled panics when the package is built with the
// "invariants" tag and the result breaks a rule of the package doc.
func checkResultIfEnabled(in Input, result Result) {
	invariant.Costly(func() error {
		if err := checkResult(in, result); err != nil {
			return fmt.Errorf("rebalance: %w", err)
		}
		return nil
	})
}

// checkResult checks a result against the sorted, valid input it was
// planned from: every change starts a legal move, every abort cancels a
// move that should be cancelled and every such move is cancelled, both
// lists are sorted without repeats, and the bound holds. It costs
// O(P log P) for P partitions.
func checkResult(in Input, result Result) error {
	roles := make(map[string]role, len(in.Members))
	for _, member := range in.Members {
		roles[member.ID] = roleOf(member)
	}
	roleOfID := func(id string) role { return roles[id] } // missing ids are roleDown
	return errors.Join(checkOrder(result), checkChanges(in, result.Changes, roleOfID),
		checkAborts(in, result.Aborts, roleOfID), checkBound(in, result.Changes))
}

// checkOrder checks that both lists are strictly sorted by (topic, index)
// and share no partition.
func checkOrder(result Result) error {
	seen := map[Partition]bool{}
	keys := make([]Partition, 0, len(result.Changes)+len(result.Aborts))
	for _, change := range result.Changes {
		keys = append(keys, Partition{Topic: change.Topic, Index: change.Index})
	}
	if !slices.IsSortedFunc(keys, comparePartitions) {
		return fmt.Errorf("changes not sorted: %v", result.Changes)
	}
	for _, abort := range result.Aborts {
		keys = append(keys, Partition{Topic: abort.Topic, Index: abort.Index})
	}
	for _, key := range keys {
		if seen[key] {
			return fmt.Errorf("%s/%d appears twice in %+v", key.Topic, key.Index, result)
		}
		seen[key] = true
	}
	return nil
}

// checkChanges checks that every change moves a stable partition from its
// live owner to a receiver.
func checkChanges(in Input, changes []Change, roleOfID func(string) role) error {
	for _, change := range changes {
		partition, found := findPartition(in, change.Topic, change.Index)
		switch {
		case !found:
			return fmt.Errorf("change %+v names no partition", change)
		case partition.Target != "" || partition.Owner != change.From:
			return fmt.Errorf("change %+v of partition %+v", change, partition)
		case roleOfID(change.From).pinned():
			return fmt.Errorf("change %+v moves a pinned (down or resting) owner's partition", change)
		case roleOfID(change.To) != roleReceiver || change.To == change.From:
			return fmt.Errorf("change %+v targets a node that is not a receiver", change)
		}
	}
	return nil
}

// checkAborts checks that exactly the moves abortReason condemns are
// aborted, with that reason.
func checkAborts(in Input, aborts []Abort, roleOfID func(string) role) error {
	var want []Abort
	for _, partition := range in.Partitions {
		if partition.Target == "" {
			continue
		}
		if reason := abortReason(roleOfID(partition.Owner), roleOfID(partition.Target)); reason != "" {
			want = append(want, Abort{Topic: partition.Topic, Index: partition.Index,
				Owner: partition.Owner, Target: partition.Target, Reason: reason})
		}
	}
	if !slices.Equal(want, aborts) {
		return fmt.Errorf("aborts %+v, want %+v", aborts, want)
	}
	return nil
}

// checkBound checks that the changes fit in the free slots.
func checkBound(in Input, changes []Change) error {
	inFlight := 0
	for _, partition := range in.Partitions {
		if partition.Target != "" {
			inFlight++
		}
	}
	if len(changes) > max(0, in.MaxInFlightMoves-inFlight) {
		return fmt.Errorf("%d changes with %d in flight exceed the bound %d", len(changes), inFlight,
			in.MaxInFlightMoves)
	}
	return nil
}

// findPartition finds a partition in the sorted input.
func findPartition(in Input, topic string, index int) (Partition, bool) {
	i, found := slices.BinarySearchFunc(in.Partitions, Partition{Topic: topic, Index: index}, comparePartitions)
	if !found {
		return Partition{}, false
	}
	return in.Partitions[i], true
}
