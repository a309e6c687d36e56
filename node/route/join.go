package route

import (
	"cmp"
	"slices"

	"narad/invariant"
)

// ReroutesMax bounds how often one split request re-places the records of
// a part that failed (an owner that died, stopped answering or no longer
// owns the partition).
const ReroutesMax = 4

// Join is one request split into parts by owner. Only its own methods
// change it; the node owns it until it answered.
type Join struct {
	// pending counts the parts in flight; the request is answered when it
	// is back at zero.
	pending int
	// excludedOwners holds the owners that did not answer a part, and
	// excludedPartitions the partitions whose owner refused one:
	// re-placed records avoid both. They only grow.
	excludedOwners     map[string]bool
	excludedPartitions map[int]bool
	// reroutes counts re-placements; at most ReroutesMax.
	reroutes int
	// err is the first failure no re-placement could fix; it never
	// changes once set.
	err error
}

// NewJoin returns a join with no part in flight.
func NewJoin() *Join {
	return &Join{excludedOwners: map[string]bool{}, excludedPartitions: map[int]bool{}}
}

// Sent counts a part put in flight.
func (j *Join) Sent() { j.pending++ }

// Answered counts a part's answer (before its outcome is handled, which
// may send parts again).
func (j *Join) Answered() {
	invariant.Check(j.pending > 0, "route: a join was answered with no part in flight")
	j.pending--
}

// Done reports whether every part answered: the request's answer is due.
func (j *Join) Done() bool { return j.pending == 0 }

// Reroute decides whether a failed part's records are placed again: only
// if the failure is retryable, no failure is final yet, and the request
// has re-placements left. A yes uses one.
func (j *Join) Reroute(retryable bool) bool {
	if !retryable || j.err != nil || j.reroutes >= ReroutesMax {
		return false
	}
	j.reroutes++
	return true
}

// Exclude keeps re-placed records away from what failed: the owner when
// it did not answer (its forward timed out), else only the partitions it
// refused.
func (j *Join) Exclude(owner string, answered bool, partitions []int) {
	if !answered {
		j.excludedOwners[owner] = true
		return
	}
	for _, partition := range partitions {
		j.excludedPartitions[partition] = true
	}
}

// OwnerExcluded reports whether re-placed records avoid owner.
func (j *Join) OwnerExcluded(owner string) bool { return j.excludedOwners[owner] }

// PartitionExcluded reports whether re-placed records avoid partition.
func (j *Join) PartitionExcluded(partition int) bool { return j.excludedPartitions[partition] }

// Fail records a failure no re-placement fixes; the first one stays.
func (j *Join) Fail(err error) {
	invariant.Check(err != nil, "route: a join failed with no error")
	if j.err == nil {
		j.err = err
	}
}

// Err is the request's failure, nil if every part succeeded.
func (j *Join) Err() error { return j.err }

// Part is the records of one owner: their indexes in the request.
type Part struct {
	Owner   string
	Indexes []int
}

// ByOwner groups the records at indexes by owner, in owner order; each
// part keeps the order of indexes.
func ByOwner(indexes []int, ownerOf func(index int) string) []Part {
	byOwner := map[string][]int{}
	for _, i := range indexes {
		owner := ownerOf(i)
		byOwner[owner] = append(byOwner[owner], i)
	}
	parts := make([]Part, 0, len(byOwner))
	for owner, owned := range byOwner { //determinism:ok sorted below
		parts = append(parts, Part{Owner: owner, Indexes: owned})
	}
	slices.SortFunc(parts, func(a, b Part) int { return cmp.Compare(a.Owner, b.Owner) })
	return parts
}

// RingNext returns the first of count partitions, from preferred on in
// ring order, for which usable holds.
func RingNext(preferred, count int, usable func(int) bool) (int, bool) {
	for step := range count {
		index := (preferred + step) % count
		if usable(index) {
			return index, true
		}
	}
	return 0, false
}
