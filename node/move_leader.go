package node

import (
	"errors"
	"fmt"
	"hash/fnv"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/movedest"
	"narad/rebalance"
)

// The leader's share of moves: it runs the planner (package rebalance) past
// its barrier, proposes the targets and aborts the plan asks for, and
// retires drained members from the voter set. The node loop is the
// planner's mutex: one plan at a time, and none while the previous plan's
// proposals are still in flight (they would count twice).

// planMoves runs one planning round when due.
func (n *Node) planMoves() {
	if n.nowMs < n.nextPlanMs {
		return
	}
	n.nextPlanMs = n.nowMs + n.cfg.Moves.PlanIntervalMs
	if !n.meta.IsLeader() {
		n.forgetFlights()
		return
	}
	if !n.meta.Barrier() || n.proposalPending(proposalPlan) {
		return
	}
	input := n.planInput()
	if n.planned.idle && input == n.planned.input {
		// A plan is a function of what it reads: the last one, of the same,
		// asked for nothing. Building the input copies every assignment,
		// tens of ms a second on a large cluster at rest.
		n.retireDrainedVoters()
		return
	}
	planned := rebalance.InputFromState(n.meta.State(), n.cfg.Moves.MaxInFlight)
	n.watchFlights(planned.Partitions)
	n.markResting(&planned)
	result, err := rebalance.Plan(planned)
	if err != nil {
		n.observer.Event("plan-failed", err.Error())
		return
	}
	n.planned = lastPlan{input: input, idle: len(result.Aborts) == 0 && len(result.Changes) == 0}
	for _, abort := range result.Aborts {
		invariant.Check(abort.Target != "", "node: the plan aborts %s/%d, which has no target", abort.Topic, abort.Index)
		chaos.Reached(chaos.MarkNodePlanAbort)
		n.observer.Event("move-abort-planned", fmt.Sprintf("%s/%d to %s: %s", abort.Topic, abort.Index, abort.Target, abort.Reason))
		assignment, _ := n.meta.State().Assignment(abort.Topic, abort.Index)
		n.propose(0, proposalPlan, abort.Topic, meta.AbortMove{Topic: abort.Topic, Partition: abort.Index, ExpectedTarget: abort.Target,
			ExpectedStartedAtMs: assignment.MoveStartedAtMs, ExpectedCreation: meta.Expecting(n.creationOf(abort.Topic))})
	}
	for _, change := range result.Changes {
		invariant.Check(change.To != "" && change.From != change.To, "node: the plan moves %s/%d from %q to %q", change.Topic, change.Index, change.From, change.To)
		chaos.Reached(chaos.MarkNodePlanMove)
		n.observer.Event("move-planned", fmt.Sprintf("%s/%d from %s to %s", change.Topic, change.Index, change.From, change.To))
		n.propose(0, proposalPlan, change.Topic, meta.SetTarget{Topic: change.Topic, Partition: change.Index,
			ExpectedOwner: change.From, Target: change.To, NowMs: n.nowMs, MovesMax: n.cfg.Moves.MaxInFlight})
	}
	n.retireDrainedVoters()
}

// lastPlan is what the leader's last plan read, and whether it asked for
// nothing (idle).
type lastPlan struct {
	input planInputVersion
	idle  bool
}

// planInputVersion identifies what the planner's input holds: the topics
// (their assignments and fan-out links), by the version that every change
// of a topic moves, and each member's id, liveness, drain and rest, by a
// hash of them. A rest that ends changes it with nothing else changing.
type planInputVersion struct {
	topics  uint64
	members uint64
}

func (n *Node) planInput() planInputVersion {
	h := fnv.New64a()
	for _, m := range n.meta.State().Members() { // sorted by id
		h.Write([]byte(m.ID))
		h.Write([]byte{0, boolByte(m.Alive), boolByte(m.Draining), boolByte(n.resting(m.ID)), boolByte(m.DiskLow)})
	}
	return planInputVersion{topics: n.meta.State().TopicsVersion(), members: h.Sum64()}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// proposalPending reports whether a proposal of the kind waits for its
// outcome.
func (n *Node) proposalPending(kind proposalKind) bool {
	for _, pending := range n.proposals { //determinism:ok an existence test
		if pending.kind == kind {
			return true
		}
	}
	return false
}

// retireDrainedVoters removes from the voter set each draining member
// that owns and targets nothing, one configuration change at a time; a
// draining leader hands leadership over first. A removal this node would
// not leave a quorum it heard from after (quorumHeardWithout), or that the
// metastore refuses (below three voters, too few live voters), is skipped
// for the next drained member: another's removal may be safe, and may make
// this one safe.
func (n *Node) retireDrainedVoters() {
	for _, m := range n.meta.State().Members() {
		if !m.Draining || n.meta.State().MemberPlaced(m.ID) {
			continue
		}
		if _, voter := n.meta.State().PeerByNodeID(m.ID); !voter {
			continue
		}
		if m.ID == n.cfg.NodeID {
			n.handLeadershipOver()
			return
		}
		if !n.quorumHeardWithout(m.ID) {
			continue
		}
		if n.removeVoter(m.ID) {
			return // one configuration change at a time
		}
	}
}

// quorumHeardWithout reports whether the voters other than id that this
// node heard from within an election timeout (itself included) make a
// quorum of the voters left: the metastore's own check counts members
// alive, which lags a crash by cluster.dead_after_ms.
func (n *Node) quorumHeardWithout(id string) bool {
	remaining, heard := 0, 0
	for _, peer := range n.meta.State().Peers() {
		if peer.ID == id {
			continue
		}
		remaining++
		if peer.ID == n.cfg.NodeID || n.heardLately(peer.ID) {
			heard++
		}
	}
	return heard >= remaining/2+1
}

// removeVoter proposes id's removal and reports whether a configuration
// change is now under way (proposed, or another in progress), so that no
// other may be proposed this round.
func (n *Node) removeVoter(id string) bool {
	_, err := n.meta.ProposeConfChange(meta.ConfChange{Kind: meta.RemoveVoter, Peer: meta.Peer{ID: id}, ExpectDraining: true, RecordNodeID: true})
	switch {
	case err == nil:
		chaos.Reached(chaos.MarkNodeVoterRemoved)
		n.observer.Event("voter-removal-proposed", id+" is drained")
		return true
	case errors.Is(err, meta.ErrConfChangeInProgress) || errors.Is(err, meta.ErrBarrierPending):
		return true
	case n.cluster.removalRefused[id]:
		// said once already: a drained member of a three-voter cluster
		// stays a voter, and the leader retries every round
	case errors.Is(err, meta.ErrTooFewVoters):
		// The normal end of a drain in a three-voter cluster (never
		// below three voters): a routine event, not an error.
		n.cluster.removalRefused[id] = true
		n.observer.Event("voter-removal-deferred", fmt.Sprintf("%s is drained and stays a voter while the cluster has three: %v (said once)", id, err))
	default:
		n.cluster.removalRefused[id] = true
		n.observer.Event("voter-removal-refused", fmt.Sprintf("%s: %v (it stays a voter; said once)", id, err))
	}
	return false
}

// handLeadershipOver transfers leadership to an alive, non-draining voter
// this node heard from within an election timeout, so that the new leader
// can remove this drained node. A voter not heard from is skipped even
// while the metastore still lists it alive: raft drops every proposal
// while a transfer is pending, the MarkMemberDead of that voter among
// them, so handing over to a dead voter again and again would stall the
// metastore until it came back (seed 4300073: ten seconds, and a joiner
// never admitted).
func (n *Node) handLeadershipOver() { n.transferLeadership("drained") }

// HandLeadershipOver hands the metastore's leadership, when this node
// holds it, to a live voter it heard from lately, and reports whether a
// transfer started: a node about to stop spares the others an election
// timeout without a leader. Call it on the loop.
func (n *Node) HandLeadershipOver() bool {
	return n.meta.IsLeader() && n.transferLeadership("stopping")
}

// transferLeadership starts the transfer to the first live, undrained
// voter heard from lately; why says why, for the event.
func (n *Node) transferLeadership(why string) bool {
	for _, peer := range n.meta.State().Peers() {
		m, ok := n.meta.State().Member(peer.ID)
		if peer.ID == n.cfg.NodeID || !ok || !m.Alive || m.Draining || !n.heardLately(peer.ID) {
			continue
		}
		chaos.Reached(chaos.MarkNodeLeadershipHandedOver)
		n.observer.Event("leadership-transfer", fmt.Sprintf("%s leader %s hands over to %s", why, n.cfg.NodeID, peer.ID))
		if err := n.meta.TransferLeadership(peer.ID); err != nil {
			n.observer.Event("leadership-transfer-failed", err.Error())
			return false
		}
		return true
	}
	return false
}

// decommission starts or cancels a member's drain. A cancel of a drain
// this replica shows also aborts the moves off the member whose
// destination has not copied a byte yet (handleOutcomes calls
// abortUncopiedMoves once the cancel applied); a cancel of a member not
// draining aborts nothing.
func (n *Node) decommission(id msg.RequestID, r msg.Decommission) {
	member, listed := n.meta.State().Member(r.ID)
	if !listed {
		n.reply(id, nil, n.decommissionOfUnlisted(r.ID, r.Cancel))
		return
	}
	if !r.Cancel && !member.Draining && !n.anotherReceiver(r.ID) { // a drain that runs is a retry: 204, as docs/api.md#cluster says
		n.reply(id, nil, msg.Conflict("no other member can take %s's partitions: every other member is dead or draining "+
			"(a single node cannot be decommissioned); add a node, or bring one back, first", r.ID))
		return
	}
	kind := proposalDecommission
	switch {
	case r.Cancel && member.Draining:
		kind = proposalCancelDecommission
	case r.Cancel:
		kind = proposalCancelUndrained
	}
	n.propose(id, kind, r.ID, meta.SetDraining{ID: r.ID, Draining: !r.Cancel})
}

// anotherReceiver reports whether a member other than id is alive and not
// draining, in this node's replica: one that a drain of id could move
// partitions to. Two drains started at once may both see the other's
// member as a receiver; the drains then wait until a node is added.
func (n *Node) anotherReceiver(id string) bool {
	for _, m := range n.meta.State().Members() {
		if m.ID != id && n.receiving(m) {
			return true
		}
	}
	return false
}

// abortUncopiedMoves aborts the moves off a member that no destination
// has started copying: a cancelled drain keeps what already moves, and
// what may (a destination that did not say).
func (n *Node) abortUncopiedMoves(member string) {
	// The creations the gathered moves are of, read with them: the answer
	// comes after the destinations', and a topic deleted and created again
	// meanwhile may move the same way (the abort names the gathered one).
	creations := map[string]meta.TopicIdentity{}
	for _, m := range n.meta.State().Moves() {
		creations[m.Topic] = n.creationOf(m.Topic)
	}
	n.gatherMoves(false, func(result msg.MovesResult, unheard []string) {
		for _, m := range result.Moves {
			// A destination that said nothing (unavailable, or its answer
			// lost) may be copying: its moves go on.
			if m.From != member || m.BytesCopied > 0 || (m.Phase != "" && m.Phase != movedest.PhaseCatchUp.String()) || contains(unheard, m.To) {
				continue
			}
			chaos.Reached(chaos.MarkNodeCancelAbortsMove)
			n.observer.Event("move-abort-on-cancel", fmt.Sprintf("%s/%d to %s: the drain of %s was cancelled", m.Topic, m.Partition, m.To, member))
			n.propose(0, proposalPlan, m.Topic, meta.AbortMove{Topic: m.Topic, Partition: m.Partition, ExpectedTarget: m.To,
				ExpectedStartedAtMs: m.StartedAtMs, ExpectedCreation: meta.Expecting(creations[m.Topic])})
		}
	})
}

// listMovesRouted lists the moves of the applied state with the progress
// their destinations report.
func (n *Node) listMovesRouted(id msg.RequestID) {
	n.gatherMoves(localOnly(id), func(result msg.MovesResult, _ []string) { n.reply(id, result, nil) })
}

// gatherMoves lists the moves of the applied state with this node's
// progress and, unless local, the progress the other destinations report;
// done also gets the destinations other than this node that reported
// nothing (not asked: local, or unavailable; or their answer failed).
func (n *Node) gatherMoves(local bool, done func(result msg.MovesResult, unheard []string)) {
	result := msg.MovesResult{Moves: []msg.Move{}}
	targets, unheard := []string{}, []string{}
	for _, m := range n.meta.State().Moves() {
		entry := msg.Move{Topic: m.Topic, Partition: m.Partition, From: m.Owner, To: m.Target, StartedAtMs: m.StartedAtMs}
		n.fillProgress(&entry)
		result.Moves = append(result.Moves, entry)
		switch {
		case m.Target == n.cfg.NodeID || contains(targets, m.Target) || contains(unheard, m.Target):
		case !local && n.ownerAvailable(m.Target, nil):
			targets = append(targets, m.Target)
		default:
			unheard = append(unheard, m.Target)
		}
	}
	if len(targets) == 0 {
		done(result, unheard)
		return
	}
	pending := len(targets)
	for _, target := range targets {
		n.forward(target, msg.ListMoves{}, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
			if theirs, ok := reply.Result.(msg.MovesResult); ok && reply.Err == nil {
				mergeProgress(result.Moves, target, theirs.Moves)
			} else {
				unheard = append(unheard, target)
			}
			pending--
			if pending == 0 {
				done(result, unheard)
			}
		})
	}
}

// fillProgress adds this node's session progress to a move into it.
func (n *Node) fillProgress(entry *msg.Move) {
	s, ok := n.moves[partitionKey{entry.Topic, entry.Partition}]
	if !ok || entry.To != n.cfg.NodeID {
		return
	}
	progress := s.machine.Progress()
	entry.Phase, entry.BytesCopied, entry.BytesTotal = progress.Phase.String(), progress.BytesCopied, progress.BytesTotal
}

// mergeProgress copies a destination's progress into the list: that of
// the same move, started at the same time. A destination that has not
// applied an abort yet lists the aborted move and its session's progress,
// which is not that of the move started again in its place.
func mergeProgress(moves []msg.Move, target string, theirs []msg.Move) {
	for _, m := range theirs {
		for i := range moves {
			if moves[i].Topic == m.Topic && moves[i].Partition == m.Partition && moves[i].To == target &&
				moves[i].StartedAtMs == m.StartedAtMs && m.Phase != "" {
				moves[i].Phase, moves[i].BytesCopied, moves[i].BytesTotal = m.Phase, m.BytesCopied, m.BytesTotal
			}
		}
	}
}

func contains(values []string, value string) bool {
	for _, v := range values {
		if v == value {
			return true
		}
	}
	return false
}
