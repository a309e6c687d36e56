package rebalance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// memberPool holds the ids the generators draw members from; "ghost" is
// never a member, so partitions naming it exercise unknown ids.
var memberPool = []string{"n1", "n2", "n3", "n4", "n5", "n6"}

var topicPool = []string{"a", "b", "c"}

// drawMember draws one member with the given id.
func drawMember(t *rapid.T, id string) Member {
	return Member{ID: id, Alive: rapid.Float64Range(0, 1).Draw(t, id+"-alive") < 0.8,
		Draining: rapid.Float64Range(0, 1).Draw(t, id+"-draining") < 0.2,
		Resting:  rapid.Float64Range(0, 1).Draw(t, id+"-resting") < 0.15}
}

// drawMembers draws 1 to 6 members.
func drawMembers(t *rapid.T) []Member {
	count := rapid.IntRange(1, len(memberPool)).Draw(t, "members")
	members := make([]Member, 0, count)
	for _, id := range memberPool[:count] {
		members = append(members, drawMember(t, id))
	}
	return members
}

// drawOwner draws an owner among the members, rarely an unknown id.
func drawOwner(t *rapid.T, members []Member, label string) string {
	if rapid.Float64Range(0, 1).Draw(t, label+"-ghost") < 0.05 {
		return "ghost"
	}
	return rapid.SampledFrom(members).Draw(t, label).ID
}

// drawPartitions draws up to 8 partitions per topic; when withTargets,
// some are moving to another member.
func drawPartitions(t *rapid.T, members []Member, withTargets bool) []Partition {
	var partitions []Partition
	for _, topic := range topicPool {
		count := rapid.IntRange(0, 8).Draw(t, topic+"-partitions")
		for index := range count {
			label := fmt.Sprintf("%s/%d", topic, index)
			partition := Partition{Topic: topic, Index: index, Owner: drawOwner(t, members, label+"-owner")}
			if withTargets && rapid.Float64Range(0, 1).Draw(t, label+"-moving") < 0.25 {
				partition.Target = drawOwner(t, members, label+"-target")
			}
			if partition.Target == partition.Owner {
				partition.Target = ""
			}
			partitions = append(partitions, partition)
		}
	}
	return partitions
}

// drawCluster draws a cluster; withTargets allows moves in flight.
func drawCluster(t *rapid.T, withTargets bool) *cluster {
	members := drawMembers(t)
	return &cluster{members: members, partitions: drawPartitions(t, members, withTargets),
		maxInFlightMoves: rapid.IntRange(1, 12).Draw(t, "maxInFlightMoves")}
}

// shuffled returns the input with its slices in a drawn order.
func shuffled(t *rapid.T, in Input) Input {
	return Input{Partitions: rapid.Permutation(in.Partitions).Draw(t, "partitionOrder"),
		Members: rapid.Permutation(in.Members).Draw(t, "memberOrder"), MaxInFlightMoves: in.MaxInFlightMoves}
}

// Property: the output depends on the input's content only, and Plan does
// not modify its input.
func TestPlanIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, true)
		in := c.input()
		before := c.input()
		first := c.plan(t)
		require.Equal(t, before, in, "Plan modified its input")
		again, err := Plan(in)
		require.NoError(t, err)
		require.Equal(t, first, again, "same input, different plan")
		reordered, err := Plan(shuffled(t, in))
		require.NoError(t, err)
		require.Equal(t, first, reordered, "shuffled input, different plan")
	})
}

// Property: every change moves a stable partition from its live owner to
// a receiver (never a dead owner's partition), the bound holds, and the
// aborts are exactly the moves whose target is down, or draining while
// the owner is alive. Checked with the naive model, and with checkResult.
func TestPlanFollowsTheRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, true)
		result := c.plan(t)
		for _, change := range result.Changes {
			partition := c.find(t, change.Topic, change.Index)
			require.Empty(t, partition.Target, "change of a partition in flight: %+v", change)
			require.Equal(t, partition.Owner, change.From)
			require.False(t, c.isDown(change.From), "moved a down owner's partition: %+v", change)
			require.False(t, c.isResting(change.From), "moved a resting owner's partition: %+v", change)
			require.True(t, c.isReceiver(change.To), "moved to a non-receiver: %+v", change)
		}
		require.LessOrEqual(t, len(result.Changes), max(0, c.maxInFlightMoves-c.inFlight()), "bound")
		requireAbortsMatchModel(t, c, result.Aborts)
		require.NoError(t, checkResult(c.input().sorted(), result))
	})
}

// requireAbortsMatchModel compares the aborts with the naive rule.
func requireAbortsMatchModel(t *rapid.T, c *cluster, aborts []Abort) {
	var want []Abort
	for _, partition := range c.partitions {
		if partition.Target == "" || c.placement(partition) == partition.Target {
			continue
		}
		reason := AbortTargetDown
		if c.isShedder(partition.Target) {
			reason = AbortTargetDraining
		}
		want = append(want, Abort{Topic: partition.Topic, Index: partition.Index,
			Owner: partition.Owner, Target: partition.Target, Reason: reason})
	}
	require.Equal(t, want, aborts)
}

// Property (minimal moves): with nothing in flight, the plan has exactly
// as many changes as the fewest moves that balance the cluster (found by
// brute force), or as the bound allows if that is fewer.
func TestPlanMovesTheMinimum(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawCluster(rt, false)
		result := c.plan(rt)
		require.Equal(rt, min(c.maxInFlightMoves, c.minimalMoves(t)), len(result.Changes))
	})
}

// Property (idempotence, fixpoint): once the planned targets are applied,
// planning again starts nothing new and asks for the same aborts, whether
// or not the bound cut the first plan short. If it did not, nothing that
// could move is left where it should not be (see requireNothingLeftToMove).
func TestPlanIsIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, true)
		slots := c.maxInFlightMoves - c.inFlight()
		first := c.plan(t)
		c.apply(t, Result{Changes: first.Changes})
		again := c.plan(t)
		require.Empty(t, again.Changes, "replanning with the plan applied")
		require.Equal(t, first.Aborts, again.Aborts, "replanning with the plan applied")
		if len(first.Changes) < slots {
			requireNothingLeftToMove(t, c)
		}
	})
}

// requireNothingLeftToMove checks, by the naive model, that no draining
// node and no receiver above ceil(T/R) still owns a stable partition while
// a receiver exists.
func requireNothingLeftToMove(t *rapid.T, c *cluster) {
	total, loads := c.loads()
	receivers := c.receiverIDs()
	if len(receivers) == 0 {
		return
	}
	ceiling := (total + len(receivers) - 1) / len(receivers)
	for _, partition := range c.partitions {
		if partition.Target != "" {
			continue
		}
		require.False(t, c.isShedder(partition.Owner), "draining %s keeps stable %+v", partition.Owner, partition)
		require.False(t, c.isReceiver(partition.Owner) && loads[partition.Owner] > ceiling,
			"%s holds %d > ceil(%d/%d) and keeps stable %+v", partition.Owner, loads[partition.Owner],
			total, len(receivers), partition)
	}
}

// Property: once the aborts are applied too, the only new work is what the
// aborts released: at most one change per abort, each from the owner of an
// aborted move (whose partition is movable again, or whose slot is free).
func TestPlanAfterAbortsOnlyReplacesThem(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, true)
		slots := c.maxInFlightMoves - c.inFlight()
		first := c.plan(t)
		c.apply(t, first)
		again := c.plan(t)
		require.Empty(t, again.Aborts)
		require.LessOrEqual(t, len(again.Changes), len(first.Aborts))
		if len(first.Changes) < slots {
			owners := map[string]bool{}
			for _, abort := range first.Aborts {
				owners[abort.Owner] = true
			}
			for _, change := range again.Changes {
				require.True(t, owners[change.From], "%+v is not from an aborted move's owner", change)
			}
		}
	})
}

// Property (bound): if the bound held, it holds after any number of
// plan/apply/complete rounds.
func TestPlanKeepsTheBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, true)
		c.maxInFlightMoves = max(c.maxInFlightMoves, c.inFlight())
		for round := range rapid.IntRange(1, 10).Draw(t, "rounds") {
			c.apply(t, c.plan(t))
			require.LessOrEqual(t, c.inFlight(), c.maxInFlightMoves, "round %d", round)
			completeSome(t, c)
		}
	})
}

// completeSome completes a drawn subset of the moves in flight.
func completeSome(t *rapid.T, c *cluster) {
	for i := range c.partitions {
		if c.partitions[i].Target != "" && rapid.Bool().Draw(t, "complete") {
			c.complete(i)
		}
	}
}

// completeAll completes every move in flight.
func completeAll(c *cluster) {
	for i := range c.partitions {
		if c.partitions[i].Target != "" {
			c.complete(i)
		}
	}
}

// Property (no oscillation, convergence): through epochs separated by
// membership changes, with moves completing in a drawn order, every
// partition is planned at most once per epoch; then, with every move
// completing, the cluster reaches a fixpoint within a bounded number of
// rounds at which it is balanced and every draining node owns nothing.
func TestPlanConvergesWithoutOscillation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, false)
		var planned map[Partition]int
		for epoch := range rapid.IntRange(1, 4).Draw(t, "epochs") {
			if epoch > 0 {
				changeMembership(t, c)
			}
			planned = map[Partition]int{}
			for range rapid.IntRange(0, 6).Draw(t, "partialRounds") {
				runRound(t, c, planned)
				completeSome(t, c)
			}
		}
		settle(t, c, planned)
	})
}

// runRound plans, checks that no partition is planned twice in this
// epoch, and applies the plan.
func runRound(t *rapid.T, c *cluster, planned map[Partition]int) Result {
	result := c.plan(t)
	for _, change := range result.Changes {
		key := Partition{Topic: change.Topic, Index: change.Index}
		planned[key]++
		require.Equal(t, 1, planned[key], "%s/%d planned again in the same epoch", key.Topic, key.Index)
	}
	c.apply(t, result)
	require.LessOrEqual(t, c.inFlight(), c.maxInFlightMoves)
	return result
}

// settle runs rounds in which every move completes until the planner has
// nothing to do, then checks the fixpoint.
func settle(t *rapid.T, c *cluster, planned map[Partition]int) {
	roundsMax := len(c.partitions)/c.maxInFlightMoves + 3
	for round := 0; ; round++ {
		require.Less(t, round, roundsMax, "no fixpoint after %d rounds", round)
		wasInFlight := c.inFlight()
		result := runRound(t, c, planned)
		completeAll(c)
		if wasInFlight == 0 && len(result.Changes) == 0 && len(result.Aborts) == 0 {
			break
		}
	}
	c.requireBalanced(t)
	if len(c.receiverIDs()) > 0 {
		for _, partition := range c.partitions {
			require.False(t, c.isShedder(partition.Owner), "draining %s still owns %s/%d",
				partition.Owner, partition.Topic, partition.Index)
		}
	}
}

// changeMembership applies one drawn membership event: a member dies,
// comes back, starts or stops draining, joins, or a topic is created.
func changeMembership(t *rapid.T, c *cluster) {
	i := rapid.IntRange(0, len(c.members)-1).Draw(t, "memberChanged")
	switch rapid.IntRange(0, 3).Draw(t, "event") {
	case 0:
		c.members[i].Alive = !c.members[i].Alive
	case 1:
		c.members[i].Draining = !c.members[i].Draining
	case 2:
		if len(c.members) < len(memberPool) {
			c.members = append(c.members, Member{ID: memberPool[len(c.members)], Alive: true})
		}
	default:
		createTopic(t, c)
	}
}

// createTopic adds a topic of up to 6 partitions owned by drawn members.
func createTopic(t *rapid.T, c *cluster) {
	topic := fmt.Sprintf("new%d", len(c.partitions))
	for index := range rapid.IntRange(1, 6).Draw(t, "newPartitions") {
		owner := rapid.SampledFrom(c.members).Draw(t, "newOwner").ID
		c.partitions = append(c.partitions, Partition{Topic: topic, Index: index, Owner: owner})
	}
}

// Property (decommission): a draining node, under any bound and any order
// of completion, ends owning nothing while a receiver exists; the others
// end balanced, and the partitions of dead owners never move.
func TestPlanDrainsToZero(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, false)
		drained := rapid.IntRange(0, len(c.members)-1).Draw(t, "drained")
		c.members[drained].Alive, c.members[drained].Draining = true, true
		if len(c.receiverIDs()) == 0 {
			c.members = append(c.members, Member{ID: "spare", Alive: true})
		}
		pinned := map[Partition]string{}
		for _, partition := range c.partitions {
			if c.isDown(partition.Owner) || c.isResting(partition.Owner) {
				pinned[Partition{Topic: partition.Topic, Index: partition.Index}] = partition.Owner
			}
		}
		planned := map[Partition]int{}
		for range rapid.IntRange(0, 6).Draw(t, "partialRounds") {
			runRound(t, c, planned)
			completeSome(t, c)
		}
		settle(t, c, planned)
		for _, partition := range c.partitions {
			require.NotEqual(t, c.members[drained].ID, partition.Owner)
			if owner, found := pinned[Partition{Topic: partition.Topic, Index: partition.Index}]; found {
				require.Equal(t, owner, partition.Owner, "a dead owner's partition moved")
			}
		}
	})
}
