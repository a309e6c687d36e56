package node

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
	"narad/rebalance"
)

// TestADrainEndsPastADestinationThatCannotTakeCopies: one of the two
// receivers of a drain heartbeats but its disk is too small for a copy.
// Each move to it is aborted after its restarts; after two in a row the
// leader rests it, the drained node's last partitions go to the other
// receiver, and the drain ends. Without the rest the planner sent every
// one of them to the full node again, for good, and the drain never ended
// (membership review).
func TestADrainEndsPastADestinationThatCannotTakeCopies(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	drained := c.except(leader)[0]
	full := c.otherThan(leader, drained)
	payload := string(bytes.Repeat([]byte("x"), 32<<10))
	for index, owner := range c.owners(leader, "t") {
		if owner == drained {
			for range 20 {
				require.NoError(t, c.do(drained, producePinned("t", index, payload)).Err)
			}
		}
	}
	c.nodes[full].cfg.Moves.RestartsMax = 1
	c.disks[full].SetCapacity(400 << 10) // well below a 650 KB partition
	events := &detailRecorder{}
	c.nodes[leader].observer = events

	require.NoError(t, c.do(leader, msg.Decommission{ID: drained}).Err)
	c.tickUntil(1_000, 1_200, func() bool { return !c.nodes[leader].meta.State().MemberPlaced(drained) })

	rested := slices.IndexFunc(events.events, func(e string) bool { return strings.HasPrefix(e, "move-destination-resting: "+full) })
	require.GreaterOrEqual(t, rested, 0, "the full node was rested: %v", events.events)
	for index, owner := range c.owners(leader, "t") {
		require.NotEqual(t, drained, owner, "t/%d", index)
	}
	require.Equal(t, 2, c.holding(leader, "t", full), "the full node kept its own two and took none")
	require.Equal(t, 4, c.holding(leader, "t", leader))
}

// TestARestEndsAndTheDestinationReceivesAgain: a rested destination takes
// no partition while it rests, is a receiver again once the rest ends
// (the plan's input changes with nothing else changing), and a completed
// move clears its failures.
func TestARestEndsAndTheDestinationReceivesAgain(t *testing.T) {
	c, leader, at := clusterLeadingTopic(t, 6)
	rested := c.except(leader)[0]
	c.tick(3_000)
	require.True(t, at.planned.idle)

	at.rest.untilMs = map[string]int64{rested: at.nowMs + at.cfg.Moves.DestinationRestMs}
	before := at.planInput()
	require.Equal(t, 1, at.Stats().RestingDestinations)
	c.tick(at.cfg.Moves.DestinationRestMs / 2)
	require.Equal(t, 2, c.holding(leader, "t", rested), "a resting receiver keeps its own")
	require.NotEqual(t, before, func() planInputVersion { c.tick(at.cfg.Moves.DestinationRestMs); return at.planInput() }(),
		"the rest's end changes what a plan reads")
	require.Zero(t, at.Stats().RestingDestinations)
	require.Empty(t, at.rest.untilMs, "an ended rest is forgotten at the next plan")

	at.rest.failures = map[string]int{rested: 1}
	c.startMove(leader, "t", slices.Index(c.owners(leader, "t"), rested), leader) // the plan moves one back
	c.tickUntil(100, 30, func() bool { return c.holding(leader, "t", rested) == 1 })
	c.tickUntil(100, 600, func() bool { return c.holding(leader, "t", rested) == 2 })
	c.tickUntil(100, 30, func() bool { _, counted := at.rest.failures[rested]; return !counted })
	require.Equal(t, 2, c.holding(leader, "t", rested), "a completed move clears its destination's failures")
}

// TestTheLeadersOwnAbortIsNoFailureOfTheDestination: a move the leader's
// plan started is watched from its SetTarget's outcome; one the leader
// aborted itself (its target down or draining, a drain cancelled) is not
// watched any more, so its end is no failure of the destination. A
// follower watches nothing.
func TestTheLeadersOwnAbortIsNoFailureOfTheDestination(t *testing.T) {
	c, leader, at := clusterLeadingTopic(t, 6)
	to := c.except(leader)[0]
	ref := rebalance.PartitionRef{Topic: "t", Index: 0}
	at.watchPlanned(meta.SetTarget{Topic: "t", Partition: 0, ExpectedOwner: leader, Target: to})
	require.True(t, at.rest.flights[ref].sameMove(at.flightOf("t", leader, to)))
	at.watchPlanned(meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: to})
	require.NotContains(t, at.rest.flights, ref)
	at.watchFlights(nil)
	require.Empty(t, at.rest.failures, "nothing ended that was watched")

	follower := c.nodes[c.except(leader)[1]]
	follower.watchPlanned(meta.SetTarget{Topic: "t", Partition: 0, ExpectedOwner: leader, Target: to})
	require.Empty(t, follower.rest.flights)
}

// TestAMoveEndedByItsTopicOrItsSourceIsNoFailureOfTheDestination: the
// moves the leader watched end without their flip, but not for their
// destination's sake: their topic was deleted and created again under its
// name (the same placement, another topic), or their source died (the
// destination gives up on a silent source). Neither rests the destination
// (diff review: both did).
func TestAMoveEndedByItsTopicOrItsSourceIsNoFailureOfTheDestination(t *testing.T) {
	c, leader, at := clusterLeadingTopic(t, 6)
	dest := c.except(leader)[0]
	watchMovesTo(c, at, "t", dest, func(owner string) bool { return owner != dest })
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	c.tick(100)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 6}).Err)
	c.tick(100)
	watchPlacement(at)
	require.Empty(t, at.rest.failures, "the moves of a deleted topic")

	source := c.otherThan(leader, dest)
	c.cut[source] = true
	for i, owner := range c.owners(leader, "t") {
		if owner == source {
			c.startMove(leader, "t", i, dest)
		}
	}
	c.cutUntilMarkedDead(leader, source)
	c.tickUntil(1_000, 400, func() bool { return len(at.meta.State().Moves()) == 0 })
	c.tick(2_000)
	require.Empty(t, at.rest.failures, "the moves off a dead source")
	require.False(t, at.resting(dest))
}

// TestAMoveAbortedByACancelledDrainIsNoFailureOfTheDestination: the
// moves off a node whose drain an operator cancelled through a follower
// are aborted by that follower, not by the leader's plan; their ends do
// not count against their destination (diff review: with two of them,
// the destination rested).
func TestAMoveAbortedByACancelledDrainIsNoFailureOfTheDestination(t *testing.T) {
	c, leader, at := clusterLeadingTopic(t, 6)
	drained := c.except(leader)[0]
	dest := c.otherThan(leader, drained)
	require.NoError(t, c.do(leader, msg.Decommission{ID: drained}).Err)
	c.tick(100)
	watchMovesTo(c, at, "t", dest, func(owner string) bool { return owner == drained })
	require.True(t, at.rest.flights[rebalance.PartitionRef{Topic: "t", Index: slices.Index(c.owners(leader, "t"), drained)}].ownerDraining)
	require.NoError(t, c.do(c.otherThan(leader, drained), msg.Decommission{ID: drained, Cancel: true}).Err)
	c.tick(100)
	watchPlacement(at)
	require.Empty(t, at.rest.failures)
}

// TestALeaderThatStepsDownForgetsItsRests: a node that stops leading
// drops its flights, failures and rests (the metric says 0 on followers,
// and a later leadership starts afresh).
func TestALeaderThatStepsDownForgetsItsRests(t *testing.T) {
	c, leader, at := clusterLeadingTopic(t, 3)
	other := c.except(leader)[0]
	at.rest = destinationRest{failures: map[string]int{other: 1}, untilMs: map[string]int64{other: at.nowMs + 60_000},
		flights: map[rebalance.PartitionRef]flight{{Topic: "t", Index: 0}: {owner: leader, target: other}}}
	require.True(t, at.HandLeadershipOver())
	c.tickUntil(100, 100, func() bool { return !at.meta.IsLeader() })
	c.tick(at.cfg.Moves.PlanIntervalMs)
	require.Equal(t, destinationRest{}, at.rest)
	require.Zero(t, at.Stats().RestingDestinations)
}

// TestRestsInARowGrowAndACompletionEndsTheSeries: each rest of a
// destination since its last completed move lasts twice the one before,
// up to 16 times the first; a completed move to it starts the series
// again. A destination that never takes a copy then costs two failed
// moves every 16 minutes, not every minute.
func TestRestsInARowGrowAndACompletionEndsTheSeries(t *testing.T) {
	c, leader, at := clusterLeadingTopic(t, 3)
	to := c.except(leader)[0]
	ref := rebalance.PartitionRef{Topic: "t", Index: 0}
	restMs := at.cfg.Moves.DestinationRestMs
	var lengths []int64
	for range 7 {
		for range at.cfg.Moves.DestinationFailuresMax {
			at.destinationFailed(to, ref)
		}
		lengths = append(lengths, at.rest.untilMs[to]-at.nowMs)
	}
	require.Equal(t, []int64{restMs, 2 * restMs, 4 * restMs, 8 * restMs, 16 * restMs, 16 * restMs, 16 * restMs}, lengths)

	index := slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner != to })
	moved := rebalance.PartitionRef{Topic: "t", Index: index}
	at.rest.flights = map[rebalance.PartitionRef]flight{moved: at.flightOf("t", c.owners(leader, "t")[index], to)}
	c.startMove(leader, "t", index, to)
	watchPlacement(at)
	require.NotContains(t, at.rest.rests, to, "a completed move ends the series")
	for range at.cfg.Moves.DestinationFailuresMax {
		at.destinationFailed(to, ref)
	}
	require.Equal(t, restMs, at.rest.untilMs[to]-at.nowMs)
}

// clusterLeadingTopic starts a three-node cluster with a topic "t" of
// partitions partitions, and returns it with its leader's id and node.
func clusterLeadingTopic(t *testing.T, partitions int) (c *clusterHarness, leader string, at *Node) {
	t.Helper()
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", partitions)
	return c, leader, c.nodes[leader]
}

// watchPlacement has the leader at compare the moves in flight in its
// applied placement with those it watched, as a plan does.
func watchPlacement(at *Node) {
	at.watchFlights(rebalance.InputFromState(at.meta.State(), at.cfg.Moves.MaxInFlight).Partitions)
}

// watchMovesTo has the leader at watch, as if its plan had started them,
// moves to dest of the partitions of topic whose owner from selects.
func watchMovesTo(c *clusterHarness, at *Node, topic, dest string, from func(owner string) bool) {
	at.rest.flights = map[rebalance.PartitionRef]flight{}
	for i, owner := range c.owners(at.cfg.NodeID, topic) {
		if from(owner) {
			at.rest.flights[rebalance.PartitionRef{Topic: topic, Index: i}] = at.flightOf(topic, owner, dest)
		}
	}
}
