package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/node/movedest"
)

// TestACancelOfAMemberNotDrainingAbortsNoMove: docs/api.md says a cancel
// of a member that is not draining changes nothing. It used to abort
// every move off the member that had not started copying (a rebalance's
// moves, which no drain had started), as a cancel of its drain would.
func TestACancelOfAMemberNotDrainingAbortsNoMove(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 8)
	index := slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner != leader })
	source := c.owners(leader, "t")[index]
	target := c.otherThan(source, leader)
	c.drop = func(env msg.Envelope) bool { // the destination never gets to copy
		forward, ok := env.Message.(msg.ForwardRequest)
		if !ok {
			return false
		}
		_, status := forward.Request.(msg.MoveStatus)
		return status
	}
	c.startMove(leader, "t", index, target)
	require.Len(t, c.nodes[leader].meta.State().Moves(), 1, "the move is in flight")

	require.NoError(t, c.do(leader, msg.Decommission{ID: source, Cancel: true}).Err)
	c.tick(100)
	moves := c.nodes[leader].meta.State().Moves()
	require.Len(t, moves, 1, "a cancel of a member that is not draining aborted a move off it")
	require.Equal(t, target, moves[0].Target)
}

// TestARetriedDecommissionOfADrainingMemberIsDone: docs/api.md#cluster
// says a decommission of a member already draining changes nothing and
// is 204. It was refused 409 ("no other member can take its
// partitions") once every other member was dead or draining, as a new
// drain is: a client whose first answer was lost got a conflict for a
// drain that runs.
func TestARetriedDecommissionOfADrainingMemberIsDone(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	leaving := c.otherThan(leader)
	remaining := c.otherThan(leader, leaving)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	require.NoError(t, c.do(leader, msg.Decommission{ID: leader}).Err)
	c.cutUntilMarkedDead(leader, remaining)

	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err, "the retry of a drain that runs")
	member, _ := c.nodes[leader].meta.State().Member(leaving)
	require.True(t, member.Draining)
	refused := c.do(leader, msg.Decommission{ID: remaining}).Err
	require.Equal(t, msg.CodeConflict, msg.CodeOf(refused), "a new drain with no member to take its partitions: %v", refused)
}

// TestACancelKeepsAMoveWhoseDestinationDidNotSayItsProgress: a cancelled
// drain aborts only the moves no destination has started copying
// (docs/architecture.md#decommission: those already copying go on). A
// destination whose answer to the list of moves was lost said nothing of
// its progress, and its moves, copying or about to hand off, were aborted as if they
// had not: the copy was thrown away.
func TestACancelKeepsAMoveWhoseDestinationDidNotSayItsProgress(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 8)
	leaving := c.otherThan(leader)
	for index, owner := range c.owners(leader, "t") {
		if owner == leaving {
			require.NoError(t, c.do(leaving, producePinned("t", index, "r")).Err)
		}
	}
	var copying string // the destination of the drain's first move, which copies and asks for the freeze in vain
	c.drop = func(env msg.Envelope) bool {
		forward, ok := env.Message.(msg.ForwardRequest)
		if !ok {
			return false
		}
		switch forward.Request.(type) {
		case msg.MoveStatus, msg.MoveRead:
			return env.From != copying
		case msg.MoveFreeze:
			return true
		case msg.ListMoves:
			return env.To == copying // its progress never reaches the node that cancels
		}
		return false
	}
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tick(1_100) // a planning round
	moves := c.nodes[leader].meta.State().Moves()
	require.NotEmpty(t, moves, "the drain started moves")
	copying = moves[0].Target
	require.NotEqual(t, leader, copying, "the leader's own progress is always known")
	c.tickUntil(100, 300, func() bool {
		s, ok := c.nodes[copying].moves[partitionKey{moves[0].Topic, moves[0].Partition}]
		return ok && s.machine.Phase() != movedest.PhaseCatchUp
	})

	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving, Cancel: true}).Err)
	c.tick(c.nodes[leader].cfg.ForwardTimeoutMs + 100) // the lost answer times out
	kept := false
	for _, m := range c.nodes[leader].meta.State().Moves() {
		kept = kept || (m.Topic == moves[0].Topic && m.Partition == moves[0].Partition && m.Target == copying)
	}
	require.True(t, kept, "the move in handoff was aborted by the cancel")
}
