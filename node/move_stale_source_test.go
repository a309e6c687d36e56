package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// TestAMoveCopiesNothingFromASourceThatHasNotSeenIt: the owner of a
// partition stops applying the metastore (a restart on an old replica,
// a cut from raft) while its topic is deleted and created again under
// its name, the new partition placed on it again, and a move of that
// partition to another node starts. Until the owner's replica shows the
// move, what it holds under the partition's directory is the deleted
// topic's: its status and reads must not feed the move's copy. Fed, the
// copy holds the deleted records past the final state's high-watermark
// (0, the new partition is empty), recovery of the installed copy
// serves them, and the new topic delivers records of the deleted one
// (seed 6721603 reached the start of this: a source restarted on an old
// replica answered a move of the new topic with the old one's state).
func TestAMoveCopiesNothingFromASourceThatHasNotSeenIt(t *testing.T) {
	c, leader, partition, source, target := recordsToBeDeleted(t)

	c.dropRaftOf(source) // the source's replica keeps the first "t"
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	require.Equal(t, source, c.owners(leader, "t")[partition], "the namesake is placed as the topic was")
	c.startMove(leader, "t", partition, target)
	c.requireTheMoveCopiedNothingDeleted(leader, partition, target)
}

// TestAMoveOfANewCreationIsNotTakenForTheDeletedOnesMove: a move's
// target and start may repeat across two creations of a topic's name (a
// start is unique within one assignment's history, and the new
// creation's starts over, from a proposer's clock that may read the
// same). The stale source's replica shows the deleted creation moving to
// the same target under the same start as the new creation's move; the
// requests name the creation too, so it still copies nothing of it.
func TestAMoveOfANewCreationIsNotTakenForTheDeletedOnesMove(t *testing.T) {
	c, leader, partition, source, target := recordsToBeDeleted(t)
	betweenThem := func(env msg.Envelope) bool {
		return (env.From == source && env.To == target) || (env.From == target && env.To == source)
	}
	c.drop = betweenThem // the first creation's move never reaches its source
	c.startMove(leader, "t", partition, target)
	first, _ := c.nodes[source].meta.State().Assignment("t", partition)
	require.Equal(t, target, first.Target, "the source's replica shows the first creation's move")

	c.drop = func(env msg.Envelope) bool {
		_, isRaft := env.Message.(msg.RaftMessage)
		return betweenThem(env) || (isRaft && (env.To == source || env.From == source))
	}
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	require.Equal(t, source, c.owners(leader, "t")[partition], "the namesake is placed as the topic was")
	_, err := c.nodes[leader].meta.Propose(meta.SetTarget{Topic: "t", Partition: partition, ExpectedOwner: source, Target: target, NowMs: first.MoveStartedAtMs})
	require.NoError(t, err)
	c.settle()
	second, _ := c.nodes[leader].meta.State().Assignment("t", partition)
	require.Equal(t, first.MoveStartedAtMs, second.MoveStartedAtMs, "the new creation's move starts when the first one did")

	c.dropRaftOf(source) // the two talk again; the source's replica stays behind
	c.requireTheMoveCopiedNothingDeleted(leader, partition, target)
}

// recordsToBeDeleted makes a three-node cluster with a topic "t" whose
// partition (owned by source, not the leader) holds five records about to
// be deleted with the topic, and a target for a move of it whose copy
// reads whatever the source reports (no lag allowed).
func recordsToBeDeleted(t *testing.T) (c *clusterHarness, leader string, partition int, source, target string) {
	t.Helper()
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	partition = slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner != leader })
	source = c.owners(leader, "t")[partition]
	target = c.otherThan(source, leader)
	for i := range 5 {
		require.NoError(t, c.do(source, producePinned("t", partition, fmt.Sprintf("deleted-%d", i))).Err)
	}
	c.nodes[target].cfg.Moves.LagBytes = 1
	return c, leader, partition, source, target
}

// requireTheMoveCopiedNothingDeleted lets the move run against the stale
// source for two seconds, then lets the source catch up, and requires the
// move done with the new creation's partition as empty as it was made.
func (c *clusterHarness) requireTheMoveCopiedNothingDeleted(leader string, partition int, target string) {
	c.t.Helper()
	for range 20 {
		c.tick(100)
	}
	c.drop = nil
	c.tickUntil(100, 200, func() bool {
		return c.owners(leader, "t")[partition] == target && c.owners(target, "t")[partition] == target
	})
	replay := c.do(target, msg.Replay{Topic: "t", Partition: partition, Offset: 0})
	require.NoError(c.t, replay.Err)
	require.Nil(c.t, replay.Result.(msg.ReplayResult).Message, "the new topic's partition holds no record of the deleted one")
	consumed := c.do(target, msg.Consume{Topic: "t", Partition: partition, Max: 10})
	require.NoError(c.t, consumed.Err)
	require.Empty(c.t, consumed.Result.(msg.ConsumeResult).Messages)
}

// moveAt names the move to target started at startedAtMs of a partition
// of topicName, as a destination does, with the creation of topicName
// that n's replica shows.
func moveAt(n *Node, topicName string, partition int, target string, startedAtMs int64) msg.MoveOf {
	creation := n.creationOf(topicName)
	return msg.MoveOf{Topic: topicName, Partition: partition, Target: target, MoveStartedAtMs: startedAtMs,
		TopicIncarnation: creation.Incarnation, TopicCreatedAtMs: creation.CreatedAtMs}
}

// freezeOf is the MoveFreeze of that move.
func freezeOf(n *Node, topicName string, partition int, target string, startedAtMs int64) msg.MoveFreeze {
	return msg.MoveFreeze{MoveOf: moveAt(n, topicName, partition, target, startedAtMs)}
}

// statusOf is the MoveStatus of that move.
func statusOf(n *Node, topicName string, partition int, target string, startedAtMs int64) msg.MoveStatus {
	return msg.MoveStatus{MoveOf: moveAt(n, topicName, partition, target, startedAtMs)}
}
