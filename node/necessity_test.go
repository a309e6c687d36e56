package node

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
	"narad/msg"
)

// The tests of this file pin checks of the move protocol that the
// simulator's sweeps have not shown necessary (N1 to N8 of
// docs/necessity.md): each fails with its check removed.

// dropsFrom returns a drop filter for the raft messages of one type that
// node from sends.
func dropsFrom(from string, kind raftpb.MessageType) func(msg.Envelope) bool {
	return func(env msg.Envelope) bool {
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.From == from && raft.Message.GetType() == kind
	}
}

// TestALateAnswerToAnEndedSessionDrivesNothing pins sendToSource's check
// that an answer reaches only the session that asked (N1): a source's
// answer that arrives after its session ended and a new session of the
// same partition began must not drive the old session, which would go
// on asking the source and copying into the staging directory the new
// one uses.
func TestALateAnswerToAnEndedSessionDrivesNothing(t *testing.T) {
	c, leader, source, target := pinnedForAMove(t, "r")
	var late []msg.Envelope // the source's answers, held back
	asked := 0              // the requests the target sends the source
	c.drop = func(env msg.Envelope) bool {
		if reply, ok := env.Message.(msg.ForwardReply); ok && env.From == source && env.To == target {
			if _, state := reply.Reply.Result.(msg.MoveSourceState); state {
				late = append(late, env)
				return true
			}
		}
		if _, ok := env.Message.(msg.ForwardRequest); ok && env.From == target && env.To == source {
			asked++
		}
		return false
	}
	c.startMove(leader, "t", 0, target)
	c.tick(100)
	require.NotEmpty(t, late, "the first session's status request was answered")
	stale := late[0]

	c.abortMove(leader, "t", 0, target)
	require.Empty(t, c.nodes[target].MoveSessions(), "the first session ended")
	c.startMove(leader, "t", 0, target)
	require.Len(t, c.nodes[target].MoveSessions(), 1, "a second session of the partition runs")
	asked = 0
	require.NoError(t, c.nodes[target].Step(stale))
	c.settle()
	require.Zero(t, asked, "the first session's late answer drove no further request")
}

// creation is the guard on the topic's creation as node id's replica
// shows it: a proposal that embeds meta.ExpectedCreation must name one.
func (c *clusterHarness) creation(id, topicName string) meta.ExpectedCreation {
	record, ok := c.nodes[id].meta.State().Topic(topicName)
	require.True(c.t, ok, "topic %s on %s", topicName, id)
	return meta.Expecting(record.Identity())
}

// abortMove proposes a move's abort through the leader and settles.
func (c *clusterHarness) abortMove(leader, topicName string, index int, target string) {
	_, err := c.nodes[leader].meta.Propose(meta.AbortMove{Topic: topicName, Partition: index, ExpectedTarget: target,
		ExpectedCreation: c.creation(leader, topicName)})
	require.NoError(c.t, err)
	c.tick(100)
}

// leaderBeforeItsBarrier moves the metastore's leadership of a
// three-node cluster with topic t to another node whose entries reach
// nobody: it is the leader, but has applied no entry of its term. The
// old leader first accepts the decommission of the third node, so that
// a plan would move that node's partitions. It returns the new leader
// and the draining node.
func leaderBeforeItsBarrier(t *testing.T) (c *clusterHarness, fresh, draining string) {
	c = newClusterHarness(t, 3)
	old := c.electWithTopic("t", 3)
	fresh = c.otherThan(old)
	draining = c.otherThan(old, fresh)
	require.NoError(t, c.do(old, msg.Decommission{ID: draining}).Err)
	c.drop = dropsFrom(fresh, raftpb.MsgApp)
	require.NoError(t, c.nodes[old].meta.TransferLeadership(fresh))
	c.settle()
	require.True(t, c.nodes[fresh].meta.IsLeader(), "the leadership moved")
	require.False(t, c.nodes[fresh].meta.Barrier(), "the new leader has applied no entry of its term")
	return c, fresh, draining
}

// TestAVerdictNeedsALeaderPastItsBarrier pins moveVerdict's barrier (N6):
// a new leader may not have applied every entry its predecessor
// committed, so its placement may call a copy stale that a committed
// move has just given to the asker.
func TestAVerdictNeedsALeaderPastItsBarrier(t *testing.T) {
	c, fresh, _ := leaderBeforeItsBarrier(t)
	_, err := c.nodes[fresh].moveVerdict(msg.MoveSweepCheck{Topic: "t", Partition: 0})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(err), "no verdict before the barrier: %v", err)
}

// TestThePlannerWaitsForItsLeadersBarrier pins planMoves's barrier (N7):
// a leader that has not applied its predecessor's entries plans from a
// placement that may be stale, so it plans nothing until it has.
func TestThePlannerWaitsForItsLeadersBarrier(t *testing.T) {
	c, fresh, draining := leaderBeforeItsBarrier(t)
	n := c.nodes[fresh]
	require.Positive(t, c.holding(fresh, "t", draining), "the draining node has partitions to give")
	n.nextPlanMs = 0
	n.planMoves()
	require.False(t, n.proposalPending(proposalPlan), "no plan before the barrier")
}

// TestOnePlanAtATime pins planMoves's wait for its previous plan (N8): a
// leader whose plan is not yet committed proposes no second plan from the
// same placement (its SetTargets would be refused, or move a partition
// twice).
func TestOnePlanAtATime(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	draining := c.otherThan(leader)
	require.NoError(t, c.do(leader, msg.Decommission{ID: draining}).Err)
	c.drop = dropsFrom(leader, raftpb.MsgApp) // nothing the leader proposes commits
	n := c.nodes[leader]
	n.nextPlanMs = 0
	n.planMoves()
	require.True(t, n.proposalPending(proposalPlan), "the first plan waits for its commit")
	proposed := len(n.proposals)
	n.nextPlanMs = 0
	n.planMoves()
	require.Len(t, n.proposals, proposed, "no second plan while the first is pending")
}

// staleCopyHarness gives a three-node cluster with topic t a directory of
// partition 0 on a node that neither owns nor targets it, as a copy a
// move left behind would be; it returns that node.
func staleCopyHarness(t *testing.T) (c *clusterHarness, bystander string) {
	c = newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owner := c.owners(leader, "t")[0]
	bystander = c.otherThan(owner)
	require.NoError(t, c.disks[bystander].MkdirAll(PartitionDir("t", 0)))
	return c, bystander
}

// verdictFor delivers a leader's verdict on partition 0 of t to node at,
// and reports whether the node kept its copy.
func (c *clusterHarness) verdictFor(at string, verdict msg.MoveVerdict) (kept bool) {
	c.nodes[at].verdictArrived(partitionKey{"t", 0}, msg.Reply{Result: verdict})
	_, err := c.disks[at].Stat(PartitionDir("t", 0))
	return err == nil
}

// TestAStaleCopyGoesOnlyWhenTheVerdictAndTheReplicaAgree: a verdict that
// names another owner, from a leader this replica has caught up with,
// deletes the copy. It is kept when this replica lags the verdict (N3: a
// move to this node may have committed that it has not applied), when
// the verdict names this node as owner or target (N4), and while this
// node still serves the partition (N5: a partition it has not let go
// yet).
func TestAStaleCopyGoesOnlyWhenTheVerdictAndTheReplicaAgree(t *testing.T) {
	c, bystander := staleCopyHarness(t)
	n := c.nodes[bystander]
	owner := c.owners(bystander, "t")[0]
	caughtUp := n.meta.AppliedIndex()
	require.True(t, c.verdictFor(bystander, msg.MoveVerdict{Owner: owner, AppliedIndex: caughtUp + 1}),
		"kept: this replica lags the verdict")
	require.True(t, c.verdictFor(bystander, msg.MoveVerdict{Owner: bystander, AppliedIndex: caughtUp}),
		"kept: the verdict says this node owns it")
	require.True(t, c.verdictFor(bystander, msg.MoveVerdict{Owner: owner, Target: bystander, AppliedIndex: caughtUp}),
		"kept: the verdict says a move to this node runs")
	served := &partition{key: partitionKey{"t", 0}, dir: PartitionDir("t", 0)}
	n.addPartition(served)
	require.True(t, c.verdictFor(bystander, msg.MoveVerdict{Owner: owner, AppliedIndex: caughtUp}),
		"kept: this node still serves the partition")
	n.removePartition(served)
	require.False(t, c.verdictFor(bystander, msg.MoveVerdict{Owner: owner, AppliedIndex: caughtUp}),
		"deleted: the verdict and this replica agree it is stale")
}
