package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
)

// The fault sites of the node, each forced on alone (chaos.Force): what
// they do is what the simulator relies on. No test of this package runs
// in parallel, so the forced sites reach only the test that forced them.

func TestALeaseCutShortLapsesAfterAQuarterOfTheTimeout(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
	chaos.Force(chaos.SiteNodeLeaseCutShort)
	defer chaos.Reset()
	first, ok := h.consume("orders")
	require.True(t, ok)
	h.tick(1_000/leaseCutShortDivisor - 1)
	_, ok = h.consume("orders")
	require.False(t, ok, "still reserved 1 ms before the shortened deadline")
	h.tick(1)
	second, ok := h.consume("orders")
	require.True(t, ok, "redelivered once a quarter of the visibility timeout passed")
	require.Equal(t, uint32(2), second.DeliveryCount)
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit)), "the lapsed handle is stale")
	require.Equal(t, map[chaos.Site]int{chaos.SiteNodeLeaseCutShort: 2}, chaos.Fired(), "one per reservation")
}

func TestADelayedHeartbeatAppliesOneProposalTimeoutLate(t *testing.T) {
	h := newHarness(t)
	chaos.Force(chaos.SiteNodeHeartbeatDelayed)
	defer chaos.Reset()
	member := func() int64 {
		m, ok := h.node.meta.State().Member(h.cfg.NodeID)
		require.True(t, ok)
		return m.LastHeartbeatMs
	}
	before := member()
	h.tick(h.cfg.MemberHeartbeatIntervalMs)
	madeAtMs := h.nowMs
	h.tick(h.cfg.MemberHeartbeatIntervalMs / heartbeatGatherDivisor)
	require.Equal(t, before, member(), "the round of heartbeats due now is put off")
	h.tick(h.cfg.ProposalTimeoutMs)
	require.Equal(t, madeAtMs, member(), "it applies one proposal timeout later, with the time it was made")
}

// remotePartition returns a partition of t that node at does not own.
func remotePartition(c *clusterHarness, at, leader string) (int, string) {
	owners := c.owners(leader, "t")
	remote := slices.IndexFunc(owners, func(o string) bool { return o != at })
	require.GreaterOrEqual(c.t, remote, 0)
	return remote, owners[remote]
}

func TestALostForwardReplyIsA503ThoughTheProduceLanded(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	at := c.ids[0]
	remote, owner := remotePartition(c, at, leader)
	chaos.Force(chaos.SiteNodeForwardReplyLost)
	defer chaos.Reset()
	reply := c.await(c.send(at, producePinned("t", remote, "x")), 100, 30)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "the answer was lost: the forward timed out")
	chaos.Reset()
	replayed := c.do(owner, msg.Replay{Topic: "t", Partition: remote, Offset: 0})
	require.NoError(t, replayed.Err)
	require.Equal(t, "x", string(replayed.Result.(msg.ReplayResult).Message.Payload), "the record landed all the same")
}

func TestALateForwardReplyStillAnswersWithinTheTimeout(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	at := c.ids[0]
	remote, _ := remotePartition(c, at, leader)
	chaos.Force(chaos.SiteNodeForwardReplyLate)
	defer chaos.Reset()
	id := c.send(at, producePinned("t", remote, "x"))
	c.settle()
	_, answered := c.replies[id]
	require.False(t, answered, "the owner holds its answer back")
	reply := c.await(id, 50, 2*int(c.nodes[at].cfg.ForwardTimeoutMs/50))
	require.NoError(t, reply.Err, "it leaves before the forward times out")
	require.Equal(t, 1, chaos.Fired()[chaos.SiteNodeForwardReplyLate])
}

func TestAProduceForwardedTwiceIsAppendedTwiceAndAnsweredOnce(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	at := c.ids[0]
	remote, owner := remotePartition(c, at, leader)
	chaos.Force(chaos.SiteNodeProduceForwardedTwice)
	defer chaos.Reset()
	reply := c.do(at, producePinned("t", remote, "x"))
	require.NoError(t, reply.Err)
	require.Equal(t, uint64(0), reply.Result.(msg.ProduceResult).Records[0].Offset)
	chaos.Reset()
	for offset := range uint64(2) {
		replayed := c.do(owner, msg.Replay{Topic: "t", Partition: remote, Offset: offset})
		require.NoError(t, replayed.Err)
		require.Equal(t, "x", string(replayed.Result.(msg.ReplayResult).Message.Payload), "copy at offset %d", offset)
	}
}

func TestADroppedReplyLetsTheForwardTimeOut(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	at := c.ids[0]
	remote, owner := remotePartition(c, at, leader)
	chaos.Force(chaos.SiteRouteReplyDropped)
	defer chaos.Reset()
	reply := c.await(c.send(at, producePinned("t", remote, "x")), 100, 30)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "the answer arrived but was dropped: the forward timed out")
	require.Positive(t, chaos.Fired()[chaos.SiteRouteReplyDropped])
	chaos.Reset()
	replayed := c.do(owner, msg.Replay{Topic: "t", Partition: remote, Offset: 0})
	require.NoError(t, replayed.Err, "the record landed all the same")
}

// pendingKinds counts the node's proposals waiting for an outcome, by kind.
func pendingKinds(n *Node) map[proposalKind]int {
	kinds := map[proposalKind]int{}
	for _, pending := range n.proposals {
		kinds[pending.kind]++
	}
	return kinds
}

func TestADelayedMoveProposalIsMadeOneProposalTimeoutLater(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	chaos.Force(chaos.SiteNodeMoveProposalDelayed)
	defer chaos.Reset()
	h.node.propose(0, proposalMove, "t", meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: "nobody",
		ExpectedCreation: meta.Expecting(h.node.creationOf("t"))})
	require.Zero(t, pendingKinds(h.node)[proposalMove], "put off, not proposed")
	h.node.Tick(h.nowMs + h.cfg.ProposalTimeoutMs - 1)
	require.Zero(t, pendingKinds(h.node)[proposalMove])
	h.node.Tick(h.nowMs + h.cfg.ProposalTimeoutMs)
	require.Equal(t, 1, pendingKinds(h.node)[proposalMove], "proposed once due")
	require.Empty(t, h.node.delayed)
}

func TestADuplicatedMoveProposalIsMadeAgainLater(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	chaos.Force(chaos.SiteNodeMoveProposalDuplicated)
	defer chaos.Reset()
	h.node.propose(0, proposalMove, "t", meta.AbortMove{Topic: "t", Partition: 0, ExpectedTarget: "nobody",
		ExpectedCreation: meta.Expecting(h.node.creationOf("t"))})
	require.Equal(t, 1, pendingKinds(h.node)[proposalMove], "proposed at once")
	h.flush()
	require.Zero(t, pendingKinds(h.node)[proposalMove], "its outcome arrived (the guard refused it)")
	h.node.Tick(h.nowMs + 2*h.cfg.ProposalTimeoutMs)
	require.Equal(t, 1, pendingKinds(h.node)[proposalMove], "the same command proposed again")
	require.Empty(t, h.node.delayed, "the copy is not copied again")
}
