package node

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"narad/meta"
	"narad/msg"
)

// proposalKind says what a proposal answers when its outcome arrives.
type proposalKind int

const (
	proposalCreateTopic proposalKind = iota + 1
	proposalAlterTopic
	proposalDeleteTopic
	proposalHeartbeat
	proposalMarkDead
	// proposalMove is the node's own move work (targets, aborts, flips);
	// its outcome arrives through the applied state.
	proposalMove
	// proposalPlan is the leader's planner work (targets and aborts).
	proposalPlan
	proposalDecommission
	// proposalCancelDecommission cancels a drain this node's replica
	// showed when it was asked: once it applied, the moves off the member
	// that no destination has started copying are aborted.
	proposalCancelDecommission
	// proposalCancelUndrained cancels the drain of a member this node's
	// replica showed not draining: it clears a drain the replica has not
	// applied yet, if any, and aborts no move (the moves off the member
	// are a rebalance's, which no drain started; docs/api.md#cluster says
	// such a cancel changes nothing).
	proposalCancelUndrained
	// proposalUser is a user change a driver asked for (ChangeUsers).
	proposalUser
	// proposalSeedRoot is this node's seed of the root user.
	proposalSeedRoot
	// proposalAttach answers with the parent's topic; proposalDetach
	// answers with nothing.
	proposalAttach
	proposalDetach
	// proposalForgetMember is the leader's removal of a retired member
	// (forgetRetiredMembers).
	proposalForgetMember
)

// pendingProposal is a metastore proposal of this node waiting for its
// outcome. A proposal can be lost (its leader deposed before it commits),
// so each has a deadline after which the client gets a retryable error.
type pendingProposal struct {
	kind    proposalKind
	request msg.RequestID // 0 for the node's own proposals (heartbeats)
	topic   string
	// proposedAtMs and deadlineMs are in node time.
	proposedAtMs int64
	deadlineMs   int64
	// command is what was proposed.
	command meta.Command
	// snapshotsAtPropose is the metastore's SnapshotsInstalled when it was
	// proposed: a snapshot installed since may hold its entry, which then
	// applied without an outcome (settleStaleProposals leaves it be).
	snapshotsAtPropose uint64
}

// propose sends cmd to the metastore on behalf of request id. On failure
// the client is answered at once (503: no leader here). The node's own
// proposals (id 0) pass fault sites that put them off or repeat them.
// It reports false when the proposal was refused at once (no leader to
// propose to, say): it will not apply, and the caller may ask again
// sooner than a proposal timeout.
func (n *Node) propose(id msg.RequestID, kind proposalKind, topicName string, cmd meta.Command) bool {
	if id == 0 && n.proposalDelayed(kind, topicName, cmd) {
		return true
	}
	proposed := n.proposeNow(id, kind, topicName, cmd)
	if id == 0 {
		n.duplicateProposal(kind, topicName, cmd)
	}
	return proposed
}

// proposeNow proposes cmd at once; false when it was refused.
func (n *Node) proposeNow(id msg.RequestID, kind proposalKind, topicName string, cmd meta.Command) bool {
	proposal, err := n.meta.Propose(cmd)
	if err != nil && id == 0 {
		n.observer.Event("proposal-failed", fmt.Sprintf("%T: %v", cmd, err))
	}
	if err != nil {
		if id != 0 {
			n.reply(id, nil, proposeError(err))
		}
		return false
	}
	n.proposals[proposal] = &pendingProposal{kind: kind, request: id, topic: topicName,
		proposedAtMs: n.nowMs, deadlineMs: n.nowMs + n.cfg.ProposalTimeoutMs, command: cmd,
		snapshotsAtPropose: n.meta.SnapshotsInstalled()}
	n.proposalsDueFromMs = min(n.proposalsDueFromMs, n.nowMs+n.cfg.ProposalTimeoutMs)
	return true
}

func proposeError(err error) *msg.Error {
	var notLeader *meta.NotLeaderError
	switch {
	case errors.As(err, &notLeader):
		return msg.Unavailable("this node is not the metadata leader (the leader is %s); retry there", notLeader.LeaderID)
	case errors.Is(err, meta.ErrNoLeader):
		return msg.Unavailable("no metadata leader; retry")
	case errors.Is(err, meta.ErrInvalidCommand):
		return msg.Invalid("%v", err)
	case errors.Is(err, meta.ErrCommandTooLarge):
		return msg.TooLarge("%v", err)
	}
	return msg.Unavailable("metadata proposal failed: %v", err)
}

// handleOutcomes answers the proposals the metastore applied.
func (n *Node) handleOutcomes(outcomes []meta.Outcome) {
	for _, outcome := range outcomes {
		pending, ok := n.proposals[outcome.ID]
		if !ok {
			continue // timed out already
		}
		delete(n.proposals, outcome.ID)
		if errors.Is(outcome.Err, meta.ErrStaleProposal) {
			n.proposeAgainUnlessSnapshot(pending)
			continue
		}
		if pending.kind == proposalSeedRoot {
			n.seededRoot(outcome.Err)
		}
		if pending.kind == proposalPlan && outcome.Err == nil {
			n.watchPlanned(pending.command)
		}
		if pending.request != 0 {
			n.answer(pending.request)(n.proposalResult(pending, outcome.Err))
		}
	}
}

// settleStaleProposals handles the proposals of an earlier term than the
// last entry the replica applied: none of them will apply, since a
// command applies only in the term it was proposed in, and every entry of
// an earlier term that commits precedes a later leader's first entry (see
// meta.Propose). Each is proposed again or dropped (proposeAgain) at
// once, instead of at its proposal timeout. One proposed before a
// snapshot the replica installed is left to its timeout: the snapshot may
// hold its entry, applied with no outcome, and proposed again it would
// apply twice (a create answered 409 for the topic it made).
func (n *Node) settleStaleProposals() {
	term := n.meta.AppliedTerm()
	if term <= n.proposalsSettledTerm {
		return // the common case: no new term applied
	}
	n.proposalsSettledTerm = term
	snapshots := n.meta.SnapshotsInstalled()
	var stale []meta.ProposalID
	for id, pending := range n.proposals { //determinism:ok collected then sorted
		if id.Term < term && pending.snapshotsAtPropose == snapshots {
			stale = append(stale, id)
		}
	}
	slices.SortFunc(stale, compareProposals)
	for _, id := range stale {
		pending := n.proposals[id]
		delete(n.proposals, id)
		n.proposeAgain(pending)
	}
}

// proposeAgainUnlessSnapshot proposes again a change whose entry the
// metastore refused as stale, unless a snapshot installed since it was
// proposed may hold another copy of it, applied with no outcome (a
// proposal relayed twice): a client's change is then answered as a
// timed-out one would be.
func (n *Node) proposeAgainUnlessSnapshot(pending *pendingProposal) {
	if pending.snapshotsAtPropose == n.meta.SnapshotsInstalled() {
		n.proposeAgain(pending)
		return
	}
	if pending.request != 0 {
		n.reply(pending.request, nil, errProposalUnknown())
	}
}

// errProposalUnknown answers a change whose outcome this node cannot
// know: it may have applied, or may still.
func errProposalUnknown() *msg.Error {
	return msg.Unavailable("metadata change timed out; it may still apply: check, then retry")
}

// proposeAgain proposes a client's change again, under its first
// deadline, once its proposal is known never to apply; a refusal now is
// answered as at the first try, and definitely (the change did not
// apply). The node's own proposals are dropped: heartbeats, moves, plans
// and the root seed each propose again on their own schedule, from the
// state as it is now.
func (n *Node) proposeAgain(pending *pendingProposal) {
	if pending.request == 0 {
		return
	}
	n.observer.Event("proposal-repeated", fmt.Sprintf("%T of a request: its first proposal can no longer apply", pending.command))
	proposal, err := n.meta.Propose(pending.command)
	if err != nil {
		n.reply(pending.request, nil, proposeError(err))
		return
	}
	pending.snapshotsAtPropose = n.meta.SnapshotsInstalled()
	n.proposals[proposal] = pending
	n.proposalsDueFromMs = min(n.proposalsDueFromMs, pending.deadlineMs)
}

func (n *Node) proposalResult(pending *pendingProposal, applyErr error) (msg.Result, error) {
	if pending.kind == proposalUser {
		return nil, userApplyError(pending.topic, applyErr)
	}
	cancel := pending.kind == proposalCancelDecommission || pending.kind == proposalCancelUndrained
	decommission := pending.kind == proposalDecommission || cancel
	if decommission && errors.Is(applyErr, meta.ErrMemberNotFound) { // forgotten meanwhile, or never a member
		return nil, n.decommissionOfUnlisted(pending.topic, cancel)
	}
	if applyErr != nil && decommission && errors.Is(applyErr, meta.ErrMemberLeftVoters) {
		return nil, errDecommissionComplete(pending.topic)
	}
	createdChild := pending.kind == proposalCreateTopic && errors.Is(applyErr, meta.ErrTopicNotFound) // its parent is gone
	if applyErr != nil && (pending.kind == proposalAttach || pending.kind == proposalDetach || createdChild) {
		return nil, fanoutApplyError(applyErr)
	}
	if applyErr != nil {
		return nil, applyError(pending.topic, applyErr)
	}
	if pending.kind == proposalDeleteTopic || pending.kind == proposalDecommission || pending.kind == proposalCancelUndrained || pending.kind == proposalDetach {
		return nil, nil
	}
	if pending.kind == proposalCancelDecommission {
		n.abortUncopiedMoves(pending.topic)
		return nil, nil
	}
	t, ok := n.lookupTopic(pending.topic)
	if !ok {
		// A delete applied in the same batch, after this change.
		return nil, msg.NotFound("topic %q not found", pending.topic)
	}
	return t.info, nil
}

// errDecommissionComplete answers the cancel of a decommission that is
// complete: the member left the voters.
func errDecommissionComplete(member string) *msg.Error {
	return msg.Conflict("member %q has left the metastore's voters: its decommission is complete and cannot be cancelled; stop the node", member)
}

// decommissionOfUnlisted answers a decommission (or its cancel) of a
// member the metastore does not list, whether seen before proposing or at
// the apply: a retired member the leader forgot answers as one still
// listed would (done, or too late to cancel: a retry whose first answer
// was lost must not fail), any other id is not found.
func (n *Node) decommissionOfUnlisted(member string, cancel bool) error {
	switch {
	case !n.meta.State().Retired(member):
		return msg.NotFound("member %q not found", member)
	case cancel:
		return errDecommissionComplete(member)
	}
	return nil
}

func applyError(topicName string, err error) *msg.Error {
	switch {
	case errors.As(err, new(*meta.SchemaEvolutionError)):
		return msg.Invalid("%s", strings.TrimPrefix(err.Error(), "meta: "))
	case errors.Is(err, meta.ErrGuardFailed):
		return msg.Conflict("topic %q changed meanwhile; retry: %v", topicName, err)
	case errors.Is(err, meta.ErrOwnerChanged):
		return ownerChanged(err)
	case errors.Is(err, meta.ErrUserChanged):
		return msg.Conflict("%s; nothing changed", strings.TrimPrefix(err.Error(), "meta: "))
	case errors.Is(err, meta.ErrSchemaSpace):
		return msg.TooLarge("%s", strings.TrimPrefix(err.Error(), "meta: "))
	case errors.Is(err, meta.ErrTopicExists):
		return msg.Conflict("topic already exists")
	case errors.Is(err, meta.ErrTopicExistsIgnoringCase):
		return msg.Conflict("%s: topic names must differ in more than case",
			strings.TrimPrefix(err.Error(), meta.ErrTopicExistsIgnoringCase.Error()+": "))
	case errors.Is(err, meta.ErrLimitReached):
		return limitReached(err)
	case errors.Is(err, meta.ErrDeadLetterTopicNotFound):
		return msg.NotFound("dead_letter_topic %s not found", strings.TrimPrefix(err.Error(), meta.ErrDeadLetterTopicNotFound.Error()+": topic "))
	case errors.Is(err, meta.ErrTopicNotFound):
		return msg.NotFound("topic %q not found", topicName)
	case errors.Is(err, meta.ErrInvalidCommand):
		return msg.Invalid("%v", err)
	case errors.Is(err, meta.ErrMemberNotFound):
		return msg.Unavailable("a chosen owner left the cluster; retry: %v", err)
	case errors.Is(err, meta.ErrMemberNotReceiving):
		return msg.Unavailable("a chosen owner is dead or draining; retry: %v", err)
	}
	return fanoutApplyError(err)
}

// limitReached is the answer to a change refused at one of the limits the
// metastore's commands carry, with what would make room for it.
func limitReached(err error) *msg.Error {
	var limit *meta.LimitError
	if !errors.As(err, &limit) {
		return msg.Conflict("%s", strings.TrimPrefix(err.Error(), "meta: "))
	}
	switch limit.Limit {
	case meta.LimitChildren:
		return msg.Conflict("%s; detach or delete one of its children first", limit.Text)
	case meta.LimitUsers:
		return msg.Conflict("%s; delete a user first", limit.Text)
	case meta.LimitUsersBytes:
		return msg.Conflict("%s; delete a user or give fewer or shorter patterns", limit.Text)
	case meta.LimitTopics:
		return msg.Conflict("%s; delete a topic first", limit.Text)
	case meta.LimitPartitionsPerMember:
		return msg.Conflict("%s; add nodes or delete topics", limit.Text)
	}
	return msg.Conflict("%s", limit.Text)
}

// ownerChanged is the answer to a change whose caller was checked as
// the owner of a topic that someone else owns by the time it applies: as
// the owner check would have answered then.
func ownerChanged(err error) *msg.Error {
	return msg.Forbidden("%s: the topic was deleted and created again by another user since the owner check", strings.TrimPrefix(err.Error(), "meta: "))
}

// fanoutApplyError maps the rejections of fan-out commands.
func fanoutApplyError(err error) *msg.Error {
	text := strings.TrimPrefix(err.Error(), "meta: ")
	switch {
	case errors.Is(err, meta.ErrOwnerChanged):
		return ownerChanged(err)
	case errors.Is(err, meta.ErrFanoutRole), errors.Is(err, meta.ErrFanoutSchema):
		return msg.Conflict("%s", text)
	case errors.Is(err, meta.ErrFanoutDelay):
		return msg.Invalid("%s", text)
	case errors.Is(err, meta.ErrNotAttached), errors.Is(err, meta.ErrTopicNotFound):
		return msg.NotFound("%s", text)
	case errors.Is(err, meta.ErrLimitReached):
		return limitReached(err)
	case errors.Is(err, meta.ErrGuardFailed):
		return msg.Conflict("%s", text)
	case errors.Is(err, meta.ErrSchemaSpace):
		return msg.TooLarge("%s", text)
	case errors.Is(err, meta.ErrInvalidCommand):
		return msg.Invalid("%s", text)
	}
	return msg.Internal("metadata change failed: %v", err)
}

// expireProposals answers the proposals whose outcome did not arrive in
// time: the change may still apply later, so the answer is a retryable
// "unknown outcome".
func (n *Node) expireProposals() {
	if n.nowMs < n.proposalsDueFromMs {
		return // the common case at every tick: no look at the table
	}
	var expired []meta.ProposalID
	n.proposalsDueFromMs = math.MaxInt64
	for id, pending := range n.proposals { //determinism:ok collected then sorted
		if pending.deadlineMs <= n.nowMs {
			expired = append(expired, id)
		}
		n.proposalsDueFromMs = min(n.proposalsDueFromMs, pending.deadlineMs)
	}
	slices.SortFunc(expired, compareProposals)
	for _, id := range expired {
		pending := n.proposals[id]
		delete(n.proposals, id)
		if pending.request != 0 {
			n.reply(pending.request, nil, errProposalUnknown())
		}
	}
}

func compareProposals(a, b meta.ProposalID) int {
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	if a.Term != b.Term {
		return cmpUint(a.Term, b.Term)
	}
	return cmpUint(a.Sequence, b.Sequence)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
