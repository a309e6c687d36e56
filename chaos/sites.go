package chaos

import "slices"

// Site names a fault site of the core: a place where the simulator may
// inject a fault the real world can produce (a delay, a loss, a
// duplicate), so that rare interleavings happen often. The core passes
// one of the constants below to Buggify; each is declared here with the
// fault it injects, and listed in registeredSites. Outside a simulated
// run with fault sites on, no site ever fires.
type Site string

// The sites of package node.
const (
	// SiteNodeMoveProposalDelayed: a move proposal of this node (a flip,
	// a force-promote, an abort by the destination or a frozen source) is
	// proposed seconds late, as if stuck on the way to the leader.
	SiteNodeMoveProposalDelayed Site = "node-move-proposal-delayed"
	// SiteNodeMoveProposalDuplicated: a move proposal is proposed again
	// seconds later, as a resent message arriving late.
	SiteNodeMoveProposalDuplicated Site = "node-move-proposal-duplicated"
	// SiteNodePlanProposalDelayed: a planner proposal of the leader (a
	// target or an abort) is proposed seconds late.
	SiteNodePlanProposalDelayed Site = "node-plan-proposal-delayed"
	// SiteNodePlanProposalDuplicated: a planner proposal is proposed
	// again seconds later.
	SiteNodePlanProposalDuplicated Site = "node-plan-proposal-duplicated"
	// SiteNodeHeartbeatDelayed: the leader's round of member heartbeats
	// is proposed seconds late, each carrying the time it was made.
	SiteNodeHeartbeatDelayed Site = "node-heartbeat-delayed"
	// SiteNodeMarkDeadDuplicated: the leader's proposal to mark a member
	// dead is proposed again seconds later, with the heartbeat it saw
	// then.
	SiteNodeMarkDeadDuplicated Site = "node-mark-dead-duplicated"
	// SiteNodeFreezeReplyLost: a source's answer to a MoveFreeze is lost
	// on the way; the destination's forward times out.
	SiteNodeFreezeReplyLost Site = "node-freeze-reply-lost"
	// SiteNodeFreezeReplyLate: a source's answer to a MoveFreeze leaves
	// late (after its sync round, which it never precedes).
	SiteNodeFreezeReplyLate Site = "node-freeze-reply-late"
	// SiteNodeForwardReplyLost: the answer to another forwarded request
	// (a produce part, a consume, an ack, a move read) is lost on the
	// way, after the request took effect.
	SiteNodeForwardReplyLost Site = "node-forward-reply-lost"
	// SiteNodeForwardReplyLate: the answer to another forwarded request
	// leaves late.
	SiteNodeForwardReplyLate Site = "node-forward-reply-late"
	// SiteNodeProduceForwardedTwice: a forwarded produce batch reaches its
	// owner twice (a resend whose first copy was not lost): its records
	// are appended twice, which at-least-once delivery allows.
	SiteNodeProduceForwardedTwice Site = "node-produce-forwarded-twice"
	// SiteNodeLeaseCutShort: a reservation lapses after a fraction of the
	// visibility timeout, as the client sees it when the consume answer
	// spent most of the timeout on the way.
	SiteNodeLeaseCutShort Site = "node-lease-cut-short"
	// SiteNodeMoveJobLate: a move's finalize job (sync, install, verify)
	// starts seconds late, as on a slow disk.
	SiteNodeMoveJobLate Site = "node-move-job-late"
	// SiteNodeCatchUpSlowed: a destination's request to the source during
	// CatchUp (its state, or a chunk) leaves late, as on a slow link.
	SiteNodeCatchUpSlowed Site = "node-catchup-slowed"
)

// The sites of package node/movedest.
const (
	// SiteMoveDestCatchUpPassRepeated: a destination whose copy converged
	// runs another CatchUp pass instead of handing off (within the pass
	// bound), as when the copy is slower than produce.
	SiteMoveDestCatchUpPassRepeated Site = "movedest-catchup-pass-repeated"
	// SiteMoveDestFlipRepeated: a destination proposes its flip again
	// before the retry delay, so two flips of one move are in flight.
	SiteMoveDestFlipRepeated Site = "movedest-flip-repeated"
)

// The sites of package node/route.
const (
	// SiteRouteReplyDropped: a forward's answer is dropped on arrival, as
	// if lost on the way; the forward times out and its peer is avoided.
	SiteRouteReplyDropped Site = "route-reply-dropped"
)

// The sites of package meta.
const (
	// SiteMetaSnapshotLost: a MsgSnap the leader sends is lost on the way
	// (it is resent after SnapshotAckTicks).
	SiteMetaSnapshotLost Site = "meta-snapshot-lost"
	// SiteMetaCampaign: a follower's election timer fires early and it
	// campaigns (pre-vote first), as after a pause.
	SiteMetaCampaign Site = "meta-campaign"
)

// registeredSites lists every site declared above, once.
var registeredSites = []Site{
	SiteNodeMoveProposalDelayed, SiteNodeMoveProposalDuplicated, SiteNodePlanProposalDelayed,
	SiteNodePlanProposalDuplicated, SiteNodeHeartbeatDelayed, SiteNodeMarkDeadDuplicated,
	SiteNodeFreezeReplyLost, SiteNodeFreezeReplyLate, SiteNodeForwardReplyLost, SiteNodeForwardReplyLate,
	SiteNodeProduceForwardedTwice, SiteNodeLeaseCutShort, SiteNodeMoveJobLate, SiteNodeCatchUpSlowed,
	SiteMoveDestCatchUpPassRepeated, SiteMoveDestFlipRepeated,
	SiteRouteReplyDropped,
	SiteMetaSnapshotLost, SiteMetaCampaign,
}

// Sites returns every registered site, in declaration order.
func Sites() []Site { return slices.Clone(registeredSites) }
