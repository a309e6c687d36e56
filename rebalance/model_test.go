package rebalance

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// This file is a deliberately naive model of the placement rules of the
// package doc, written without the planner's code, and a small cluster the
// property tests drive through plan/complete cycles.

// cluster is the placement a test evolves: the metastore's side of the
// loop.
type cluster struct {
	partitions       []Partition
	members          []Member
	maxInFlightMoves int
}

// input returns the planner's input for the cluster now.
func (c *cluster) input() Input {
	return Input{Partitions: slices.Clone(c.partitions), Members: slices.Clone(c.members),
		MaxInFlightMoves: c.maxInFlightMoves}
}

// plan runs the planner and fails the test on an error.
func (c *cluster) plan(t require.TestingT) Result {
	result, err := Plan(c.input())
	require.NoError(t, err)
	return result
}

// apply does what the leader would: set the target of every change, clear
// the target of every abort, checking the guards meta would check.
func (c *cluster) apply(t require.TestingT, result Result) {
	for _, change := range result.Changes {
		partition := c.find(t, change.Topic, change.Index)
		require.Equal(t, change.From, partition.Owner, "SetTarget guard")
		require.Empty(t, partition.Target, "SetTarget guard")
		partition.Target = change.To
	}
	for _, abort := range result.Aborts {
		partition := c.find(t, abort.Topic, abort.Index)
		require.Equal(t, abort.Target, partition.Target, "AbortMove guard")
		partition.Target = ""
	}
}

// complete finishes the move of partition i (CompleteMove or ForcePromote).
func (c *cluster) complete(i int) {
	c.partitions[i].Owner, c.partitions[i].Target = c.partitions[i].Target, ""
}

// find returns the partition with this topic and index.
func (c *cluster) find(t require.TestingT, topic string, index int) *Partition {
	for i := range c.partitions {
		if c.partitions[i].Topic == topic && c.partitions[i].Index == index {
			return &c.partitions[i]
		}
	}
	require.Failf(t, "no such partition", "%s/%d", topic, index)
	return nil
}

// inFlight counts the partitions with a target.
func (c *cluster) inFlight() int {
	count := 0
	for _, partition := range c.partitions {
		if partition.Target != "" {
			count++
		}
	}
	return count
}

// member returns the member with this id, and whether there is one.
func (c *cluster) member(id string) (Member, bool) {
	for _, member := range c.members {
		if member.ID == id {
			return member, true
		}
	}
	return Member{}, false
}

// isReceiver, isShedder, isResting and isDown classify an id the naive
// way.
func (c *cluster) isReceiver(id string) bool {
	member, found := c.member(id)
	return found && member.Alive && !member.Draining && !member.Resting
}

func (c *cluster) isShedder(id string) bool {
	member, found := c.member(id)
	return found && member.Alive && member.Draining
}

func (c *cluster) isResting(id string) bool {
	member, found := c.member(id)
	return found && member.Alive && !member.Draining && member.Resting
}

func (c *cluster) isDown(id string) bool {
	return !c.isReceiver(id) && !c.isShedder(id) && !c.isResting(id)
}

// receiverIDs returns the receivers' ids, sorted.
func (c *cluster) receiverIDs() []string {
	var ids []string
	for _, member := range c.members {
		if c.isReceiver(member.ID) {
			ids = append(ids, member.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// placement returns where the naive rules count a partition.
func (c *cluster) placement(partition Partition) string {
	if partition.Target == "" {
		return partition.Owner
	}
	kept := c.isReceiver(partition.Target) || c.isResting(partition.Target) ||
		(c.isShedder(partition.Target) && c.isDown(partition.Owner))
	if kept {
		return partition.Target
	}
	return partition.Owner
}

// loads returns T and the number of partitions counted at each receiver.
func (c *cluster) loads() (int, map[string]int) {
	total, loads := 0, map[string]int{}
	for _, id := range c.receiverIDs() {
		loads[id] = 0
	}
	for _, partition := range c.partitions {
		place := c.placement(partition)
		if c.isReceiver(place) || c.isShedder(place) { // pinned at a down or resting node otherwise
			total++
		}
		if c.isReceiver(place) {
			loads[place]++
		}
	}
	return total, loads
}

// requireBalanced fails unless every receiver holds floor(T/R) or
// ceil(T/R), with exactly T mod R of them at the ceiling.
func (c *cluster) requireBalanced(t require.TestingT) {
	total, loads := c.loads()
	receivers := c.receiverIDs()
	if len(receivers) == 0 {
		return
	}
	base, extra := total/len(receivers), total%len(receivers)
	atCeiling := 0
	for _, id := range receivers {
		require.Contains(t, []int{base, base + 1}, loads[id], "receiver %s of %v, T=%d", id, loads, total)
		if loads[id] == base+1 {
			atCeiling++
		}
	}
	require.Equal(t, extra, atCeiling, "receivers at the ceiling in %v, T=%d", loads, total)
}

// minimalMoves is the fewest moves that balance a cluster with no move in
// flight, found by trying every choice of the receivers that get the
// ceiling share: the surplus over the chosen shares, plus every partition
// a shedder owns.
func (c *cluster) minimalMoves(t *testing.T) int {
	require.Zero(t, c.inFlight(), "the model assumes no move in flight")
	total, loads := c.loads()
	receivers := c.receiverIDs()
	if len(receivers) == 0 {
		return 0
	}
	shed := 0
	for _, partition := range c.partitions {
		if c.isShedder(partition.Owner) {
			shed++
		}
	}
	base, extra := total/len(receivers), total%len(receivers)
	best := -1
	for _, ceilings := range subsetsOfSize(len(receivers), extra) {
		surplus := 0
		for i, id := range receivers {
			surplus += max(0, loads[id]-base-ceilings[i])
		}
		if best < 0 || surplus < best {
			best = surplus
		}
	}
	return best + shed
}

// subsetsOfSize lists every 0/1 vector of length n with k ones.
func subsetsOfSize(n, k int) [][]int {
	if n == 0 {
		if k == 0 {
			return [][]int{{}}
		}
		return nil
	}
	var subsets [][]int
	for _, rest := range subsetsOfSize(n-1, k) {
		subsets = append(subsets, append([]int{0}, rest...))
	}
	if k > 0 {
		for _, rest := range subsetsOfSize(n-1, k-1) {
			subsets = append(subsets, append([]int{1}, rest...))
		}
	}
	return subsets
}
