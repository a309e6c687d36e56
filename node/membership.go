package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
)

// Cadences of the membership work, in node milliseconds.
const (
	// joinRetryMs is how often a joining node asks the members to add it.
	joinRetryMs = 1_000
	// joinWaitWarnEveryMs is how often a node that is still asking to
	// join says so in its log (its peers' transport says a failed dial
	// once, then at debug level only).
	joinWaitWarnEveryMs = 30_000
	// subscribeForMsMax bounds how long one Subscribe lasts at the owner,
	// unless its own longest wait plus a forward timeout is longer
	// (subscriptionForMsMax).
	subscribeForMsMax = 60_000
)

// clusterState is the node's membership work. Only the node's own
// methods change it.
type clusterState struct {
	// subscribers maps a topic this node owns partitions of to the nodes
	// with parked long polls for it, each until a time of this node's
	// clock. Expired entries are dropped when notifying.
	subscribers map[string]map[string]int64
	// subscribedUntilMs maps topic+"\x00"+owner to when this node's
	// subscription there runs out (this node's clock, conservatively).
	subscribedUntilMs map[string]int64
	// notified maps a topic to owners that sent a Notify no parked poll
	// was free to act on yet; the next poll to go idle probes them.
	notified map[string][]string
	// nextSubscriptionSweepMs is when sweepSubscriptions runs next.
	nextSubscriptionSweepMs int64
	// seen maps a member to the last heartbeat the leader saw change and
	// when (this node's clock); nil unless this node is the leader past
	// its barrier. Dead detection compares ages on one clock only.
	seen map[string]heartbeatSeen
	// deadProposed holds the members this leader proposed dead, with the
	// heartbeat observed and when, so it does not propose again for that
	// heartbeat before the proposal timed out (a proposal raft dropped, or
	// lost in a change of leader, is made again). Emptied when the node
	// stops leading: a later term proposes afresh.
	deadProposed map[string]deadProposal
	// removalRefused holds the drained members whose removal from the
	// voters the metastore refused, so that is logged once.
	removalRefused map[string]bool
	// retiredSeenMs maps a retired member to when this node, leading,
	// first saw it retired (this node's clock); forgetRetiredMembers
	// forgets none sooner than retiredForgetAfterMs after. Emptied when
	// the node stops leading: a later leader counts afresh, later.
	retiredSeenMs map[string]int64
	// voterAddressUnknown is set when the metastore had a message for a
	// raft id this replica cannot address (a voter added while this node
	// was down, leading now: the replica cannot catch up on the entry
	// that names it without answering it). Such a voter asks its peers
	// for the voters' addresses as a joiner does, until a JoinAccepted
	// clears it.
	voterAddressUnknown bool
	// joinAskedSinceMs is when this node first asked to join without being
	// a voter since (0: not asking), and joinWarnAtMs when it next says
	// it is still asking; only noteJoinWait and askToJoin change them.
	joinAskedSinceMs, joinWarnAtMs int64
	// unknownPeerWarned holds the raft ids named in a raft-unknown-peer
	// event within its period (warnUnknownPeer).
	unknownPeerWarned onceEvery[uint64]
	// movedAddrs maps a voter that told this node (a Join) it listens on
	// another cluster address than the metastore records for it (a node
	// restarted at a new address) to that address: ClusterAddrs serves it
	// until the metastore records it (the voter's heartbeat, once it hears
	// from a leader again), since the raft messages that would tell it a
	// leader went to the old address. Each entry keeps the member's
	// heartbeat time when it was noted: any later heartbeat applied holds
	// the voter's current address, so the entry goes then, recorded or
	// not (a node moved back, or a stale Join). At most one per voter.
	movedAddrs map[string]movedAddr
	// heardMs holds when this node last received a message from each
	// voter of its replica (this node's clock); only voters are added, and
	// an id that is neither voter nor member any more is dropped
	// (pruneMemberState).
	heardMs map[string]int64
	// heartbeats is the round of members' heartbeats this leader gathers
	// (heartbeats.go).
	heartbeats heartbeatRound
	// nextDeadCheckMs and nextJoinMs schedule the periodic work.
	nextDeadCheckMs int64
	nextJoinMs      int64
	// selfMoved is addressMoved's answer per applied index, with the
	// address this node listened on then: every tick asks.
	selfMoved appliedMemo[selfAddressCheck]
}

// selfAddressCheck is whether this node, listening on listening, did so
// on another address than the metastore recorded for it.
type selfAddressCheck struct {
	listening string
	moved     bool
}

// movedAddr is a voter's cluster address learned from its Join, and the
// heartbeat time the metastore recorded for it then.
type movedAddr struct {
	addr        string
	heartbeatMs int64
}

type heartbeatSeen struct {
	heartbeatMs int64
	atMs        int64
}

func newClusterState() clusterState {
	return clusterState{subscribers: map[string]map[string]int64{}, subscribedUntilMs: map[string]int64{},
		notified: map[string][]string{}, deadProposed: map[string]deadProposal{}, removalRefused: map[string]bool{},
		retiredSeenMs: map[string]int64{}, heardMs: map[string]int64{}, unknownPeerWarned: onceEvery[uint64]{}, movedAddrs: map[string]movedAddr{}, heartbeats: heartbeatRound{beats: map[string]meta.MemberHeartbeat{}, retiredWarned: onceEvery[string]{}, otherDataWarned: onceEvery[string]{}}}
}

// maintainMembership runs on every tick: the leader marks silent members
// dead, and a joining node asks to be added.
func (n *Node) maintainMembership() {
	if n.nowMs >= n.cluster.nextDeadCheckMs {
		n.cluster.nextDeadCheckMs = n.nowMs + n.cfg.MemberHeartbeatIntervalMs/2
		n.detectDeadMembers()
		n.forgetRetiredMembers()
		n.pruneMemberState()
	}
	if (n.cfg.Meta.Join || n.cluster.voterAddressUnknown || n.addressMoved()) && n.nowMs >= n.cluster.nextJoinMs {
		n.cluster.nextJoinMs = n.nowMs + joinRetryMs
		n.askToJoin()
	}
	n.forgetRecordedMoves()
	if n.nowMs >= n.cluster.nextSubscriptionSweepMs {
		n.cluster.nextSubscriptionSweepMs = n.nowMs + subscribeForMsMax
		n.sweepSubscriptions()
	}
}

// sweepSubscriptions drops the expired subscribers of topics this node
// does not know: a Subscribe that arrived after the topic's delete applied
// here (sent by a node behind) left an entry that forgetSubscriptions had
// already cleared. Unexpired entries stay, as a Subscribe for a topic
// created elsewhere may arrive before its creation applies here. (This
// node's own subscriptions are made for known topics only, and a Notify of
// an unknown topic is dropped on arrival: neither needs a sweep.)
func (n *Node) sweepSubscriptions() {
	for topicName, subscribers := range n.cluster.subscribers { //determinism:ok only deletes
		if _, known := n.lookupTopic(topicName); known {
			continue
		}
		for id, untilMs := range subscribers { //determinism:ok only deletes
			if untilMs < n.nowMs {
				delete(subscribers, id)
			}
		}
		if len(subscribers) == 0 {
			delete(n.cluster.subscribers, topicName)
		}
	}
}

// heardFrom records that a message from peer arrived now, if it is a
// voter. It runs for every peer message: only a peer's first message
// (or a non-voter's) looks the voters up.
func (n *Node) heardFrom(peer string) {
	if _, known := n.cluster.heardMs[peer]; known {
		n.cluster.heardMs[peer] = n.nowMs
		return
	}
	if _, voter := n.meta.State().PeerByNodeID(peer); voter {
		n.cluster.heardMs[peer] = n.nowMs
	}
}

// heardLately reports whether a message from the voter arrived within an
// election timeout: a live voter answers the leader's raft heartbeat
// every tick.
func (n *Node) heardLately(peer string) bool {
	heardMs, heard := n.cluster.heardMs[peer]
	return heard && n.nowMs-heardMs <= n.electionTimeoutMs()
}

// deadProposal is one MarkMemberDead this leader proposed: the heartbeat
// it observed, and when (this node's clock).
type deadProposal struct {
	heartbeatMs  int64
	proposedAtMs int64
}

// proposedDead reports whether this leader proposed m dead for its
// current heartbeat, and that proposal may still apply.
func (n *Node) proposedDead(m meta.Member) bool {
	proposal, ok := n.cluster.deadProposed[m.ID]
	return ok && proposal.heartbeatMs == m.LastHeartbeatMs && n.nowMs-proposal.proposedAtMs < n.cfg.ProposalTimeoutMs
}

// detectDeadMembers proposes MarkMemberDead for every alive member whose
// heartbeat has not changed for MemberDeadAfterMs of the leader's clock.
// A new leader starts every member's age at zero.
func (n *Node) detectDeadMembers() {
	if !n.meta.IsLeader() || !n.meta.Barrier() {
		n.cluster.seen = nil
		clear(n.cluster.deadProposed)
		return
	}
	fresh := n.cluster.seen == nil
	if fresh {
		n.cluster.seen = map[string]heartbeatSeen{}
	}
	for _, m := range n.meta.State().Members() {
		last, known := n.cluster.seen[m.ID]
		if fresh || !known || last.heartbeatMs != m.LastHeartbeatMs {
			n.cluster.seen[m.ID] = heartbeatSeen{heartbeatMs: m.LastHeartbeatMs, atMs: n.nowMs}
			continue
		}
		silent := n.nowMs-last.atMs >= n.cfg.MemberDeadAfterMs
		if m.Alive && silent && m.ID != n.cfg.NodeID && !n.proposedDead(m) {
			n.cluster.deadProposed[m.ID] = deadProposal{heartbeatMs: m.LastHeartbeatMs, proposedAtMs: n.nowMs}
			chaos.Reached(chaos.MarkNodeMemberMarkedDead)
			n.observer.Event("member-dead", fmt.Sprintf("%s: no heartbeat for %d ms", m.ID, n.nowMs-last.atMs))
			if !n.propose(0, proposalMarkDead, "", meta.MarkMemberDead{ID: m.ID, ObservedHeartbeatMs: m.LastHeartbeatMs, ObservedIncarnation: m.Incarnation}) {
				delete(n.cluster.deadProposed, m.ID) // refused (a leadership transfer pending): the next tick asks again
			}
		}
	}
}

// forgetRetiredMembers has the leader remove from the members, one at a
// time, each member whose decommission is complete (meta.State.Retired),
// that is marked dead and that no partition names as owner or target:
// without it every node ever decommissioned would stay listed, and count
// against wire.MembersMax, for the cluster's life. A retired node's
// heartbeats are dropped (gatherHeartbeat), so a retired node still
// running is marked dead a cluster.dead_after_ms after its last beat
// applied, and one started again never comes back. A beat proposed before
// the retirement can still apply after the removal (a proposal held back,
// or forwarded late by a deposed leader) and list the member again, alive
// and not draining: it is first marked draining again here, and until
// then no placement takes it (receives, receivers, the planner's input);
// it dies and goes again. None is forgotten sooner than
// retiredForgetAfterMs after this leader first saw it retired.
func (n *Node) forgetRetiredMembers() {
	if !n.meta.IsLeader() || !n.meta.Barrier() {
		clear(n.cluster.retiredSeenMs)
		return
	}
	if n.proposalPending(proposalForgetMember) {
		return
	}
	state := n.meta.State()
	for _, m := range state.Members() {
		if m.ID == n.cfg.NodeID || !state.Retired(m.ID) {
			continue
		}
		if !m.Draining {
			n.observer.Event("member-listed-again", m.ID+": retired, listed again by a late heartbeat; marking it draining")
			n.propose(0, proposalForgetMember, "", meta.SetDraining{ID: m.ID, Draining: true})
			return
		}
		if _, seen := n.cluster.retiredSeenMs[m.ID]; !seen {
			n.cluster.retiredSeenMs[m.ID] = n.nowMs
		}
		if m.Alive || state.MemberPlaced(m.ID) || n.nowMs-n.cluster.retiredSeenMs[m.ID] < n.retiredForgetAfterMs() {
			continue
		}
		if n.propose(0, proposalForgetMember, "", meta.RemoveMember{ID: m.ID}) {
			chaos.Reached(chaos.MarkNodeRetiredMemberForgotten)
			n.observer.Event("member-forget-proposed", m.ID+": decommissioned, dead and placed nowhere")
		}
		return
	}
}

// retiredForgetAfterMs is how long after a member's retirement the
// leader may forget it: past the grace in which the retired node still
// forwards its clients' requests (cluster.dead_after_ms after it learned
// of its removal, a heartbeat interval or so after the leader applied
// it), and past a forward's timeout. Forgotten, its address goes from
// every replica, so a forward of its answered by a node that joined
// after it (one whose configured peers do not name it) could not be
// replied to: the retired node would time out and place the record
// again elsewhere, a second copy behind a single 202.
func (n *Node) retiredForgetAfterMs() int64 {
	return n.cfg.MemberDeadAfterMs + n.cfg.MemberHeartbeatIntervalMs + n.cfg.ForwardTimeoutMs
}

// pruneMemberState drops what this node keeps of ids that are neither
// members nor voters (retired members forgotten), so those maps are
// bounded by the cluster's size, not by its history; and the warnings of
// retired nodes' heartbeats older than retiredBeatWarnEveryMs.
func (n *Node) pruneMemberState() {
	state := n.meta.State()
	gone := func(id string) bool {
		if _, member := state.Member(id); member {
			return false // the common answer, without the scan of the voters
		}
		_, voter := state.PeerByNodeID(id)
		return !voter
	}
	maps.DeleteFunc(n.cluster.heardMs, func(id string, _ int64) bool { return gone(id) })
	maps.DeleteFunc(n.cluster.seen, func(id string, _ heartbeatSeen) bool { return gone(id) })
	maps.DeleteFunc(n.cluster.deadProposed, func(id string, _ deadProposal) bool { return gone(id) })
	maps.DeleteFunc(n.cluster.removalRefused, func(id string, _ bool) bool { return gone(id) })
	maps.DeleteFunc(n.cluster.retiredSeenMs, func(id string, _ int64) bool { return gone(id) })
	n.cluster.heartbeats.retiredWarned.prune(n.nowMs, retiredBeatWarnEveryMs)
	n.cluster.heartbeats.otherDataWarned.prune(n.nowMs, retiredBeatWarnEveryMs)
}

// askToJoin sends a Join to every configured peer until this node is a
// voter, or while it is a voter that cannot address a peer (any voter
// answers a voter's Join with the voters' addresses), or one whose cluster
// address moved (the Join tells the others where it listens now; the
// voters of its replica are asked too, as their addresses there hold). A
// node its replica knows was removed asks no more: it may not come back
// (its raft id may not be reused), and the leader would refuse.
func (n *Node) askToJoin() {
	self, _ := n.meta.PeerByNodeID(n.cfg.NodeID)
	_, voter := n.meta.State().PeerByNodeID(n.cfg.NodeID)
	moved := voter && n.addressMoved()
	if (n.meta.State().RaftIDUsed(self.RaftID) && !(voter && n.cluster.voterAddressUnknown) && !moved) || n.joiningUnderRetiredID() {
		n.cluster.joinAskedSinceMs = 0
		return // a voter that can address its peers, or removed, or told its id is retired
	}
	n.noteJoinWait(voter)
	join := msg.Join{RaftID: self.RaftID, ClusterAddr: n.cfg.ClusterAddr, HTTPAddr: n.cfg.AdvertiseAddr}
	asked := map[string]bool{n.cfg.NodeID: true}
	for _, peer := range n.cfg.Meta.Peers {
		if !asked[peer.ID] {
			asked[peer.ID] = true
			n.send(peer.ID, join)
		}
	}
	if !moved {
		return
	}
	for _, peer := range n.meta.State().Peers() {
		if !asked[peer.ID] {
			asked[peer.ID] = true
			n.send(peer.ID, join)
		}
	}
}

// noteJoinWait says, every joinWaitWarnEveryMs, that this node is still
// asking its peers to add it: a wrong peer list, or peers down, left a
// joining node silent (its readiness said only that no leader was known).
func (n *Node) noteJoinWait(voter bool) {
	if voter {
		n.cluster.joinAskedSinceMs = 0
		return
	}
	if n.cluster.joinAskedSinceMs == 0 {
		n.cluster.joinAskedSinceMs, n.cluster.joinWarnAtMs = max(n.nowMs, 1), n.nowMs+joinWaitWarnEveryMs
		return
	}
	if n.nowMs < n.cluster.joinWarnAtMs {
		return
	}
	n.cluster.joinWarnAtMs = n.nowMs + joinWaitWarnEveryMs
	waited := n.nowMs - n.cluster.joinAskedSinceMs
	peers := make([]string, 0, len(n.cfg.Meta.Peers))
	for _, peer := range n.cfg.Meta.Peers {
		if peer.ID != n.cfg.NodeID {
			peers = append(peers, peer.ID+"@"+peer.ClusterAddr)
		}
	}
	n.observer.Event("join-waiting", fmt.Sprintf("no member added this node in %d s of asking %s; check cluster.peers and that those nodes run and can reach %s, "+
		"and that no member ever had the id %s (ids are never reused: a member that hears this node then tells it so, and it logs join-refused)",
		waited/1000, strings.Join(peers, ", "), n.cfg.ClusterAddr, n.cfg.NodeID))
}

// addressMoved reports whether this node listens on another cluster
// address than the one its metastore records for it (it was restarted at
// a new address): its peers must be told, or their raft messages keep
// going to the old one.
func (n *Node) addressMoved() bool {
	applied := n.meta.AppliedIndex()
	if last, ok := n.cluster.selfMoved.lookup(applied); ok && last.listening == n.cfg.ClusterAddr {
		return last.moved
	}
	recorded := n.recordedClusterAddr(n.cfg.NodeID)
	moved := n.cfg.ClusterAddr != "" && recorded != "" && recorded != n.cfg.ClusterAddr
	return n.cluster.selfMoved.keep(applied, selfAddressCheck{listening: n.cfg.ClusterAddr, moved: moved}).moved
}

// recordedClusterAddr is the cluster address the metastore records for a
// node: its member entry's, else its voter entry's ("" when neither).
func (n *Node) recordedClusterAddr(id string) string {
	if member, ok := n.meta.State().Member(id); ok && member.ClusterAddr != "" {
		return member.ClusterAddr
	}
	if peer, ok := n.meta.State().PeerByNodeID(id); ok {
		return peer.ClusterAddr
	}
	return ""
}

// noteMovedVoter keeps the new address a voter's Join gives, when the
// metastore records another (ClusterAddrs serves it meanwhile).
func (n *Node) noteMovedVoter(id string, m msg.Join) {
	if _, voter := n.meta.State().PeerByNodeID(id); !voter || m.ClusterAddr == "" || id == n.cfg.NodeID {
		return
	}
	if m.ClusterAddr == n.recordedClusterAddr(id) || m.ClusterAddr == n.cluster.movedAddrs[id].addr {
		return
	}
	member, _ := n.meta.State().Member(id)
	n.cluster.movedAddrs[id] = movedAddr{addr: m.ClusterAddr, heartbeatMs: member.LastHeartbeatMs}
	n.observer.Event("voter-address-moved", fmt.Sprintf("%s listens on %s; the metastore records %s until its next heartbeat applies",
		id, m.ClusterAddr, n.recordedClusterAddr(id)))
}

// forgetRecordedMoves drops the moved addresses of nodes that are no
// longer voters, and those a heartbeat applied since (it records the
// voter's address of that moment, the moved one or not).
func (n *Node) forgetRecordedMoves() {
	for id, moved := range n.cluster.movedAddrs { //determinism:ok only deletes
		_, voter := n.meta.State().PeerByNodeID(id)
		member, _ := n.meta.State().Member(id)
		if !voter || n.recordedClusterAddr(id) == moved.addr || member.LastHeartbeatMs != moved.heartbeatMs {
			delete(n.cluster.movedAddrs, id)
		}
	}
}

// stepJoin adds the sender as a voter if this node leads. A follower
// answers a voter's Join itself (the voter cannot address some peer, and
// this replica's applied state names the voters: the leader may be the
// very peer it cannot reach, or there may be no leader until it can; sim
// seed 4601069). A follower relays a joiner's Join to the leader it knows.
func (n *Node) stepJoin(from string, m msg.Join) {
	n.noteMovedVoter(from, m)
	if n.meta.IsLeader() {
		n.addVoter(from, m)
		return
	}
	if _, voter := n.meta.State().PeerByNodeID(from); voter {
		n.send(from, msg.JoinAccepted{Voters: n.voterAddresses()})
		return
	}
	if leader, known := n.meta.Leader(); known && leader != from && leader != n.cfg.NodeID {
		n.send(leader, msg.JoinRelay{NodeID: from, Join: m})
		chaos.Reached(chaos.MarkNodeJoinRelayed)
	}
}

// stepJoinRelay adds the joiner a member relayed, if this node leads (a
// relay that reaches a former leader is dropped: the joiner asks again).
func (n *Node) stepJoinRelay(from string, m msg.JoinRelay) {
	if n.meta.IsLeader() && m.NodeID != "" && m.NodeID != n.cfg.NodeID {
		n.addVoter(m.NodeID, m.Join)
	}
}

// stepJoinAccepted learns the voters' addresses while this node is not a
// voter in its own replica yet, or is one that cannot address a peer.
func (n *Node) stepJoinAccepted(m msg.JoinAccepted) {
	_, voter := n.meta.State().PeerByNodeID(n.cfg.NodeID)
	joining := !voter && n.cfg.Meta.Join
	if !joining && !(voter && n.cluster.voterAddressUnknown) {
		return
	}
	n.cluster.voterAddressUnknown = false
	peers := make([]meta.Peer, len(m.Voters))
	for i, voter := range m.Voters {
		peers[i] = meta.Peer{ID: voter.ID, RaftID: voter.RaftID, ClusterAddr: voter.ClusterAddr}
	}
	n.meta.LearnPeers(peers)
	chaos.Reached(chaos.MarkNodeJoinAccepted)
}

// addVoter proposes the joiner as a voter. One that is a voter already
// still asks because it cannot reach the leader, or has not caught up:
// it is told the voters.
func (n *Node) addVoter(id string, m msg.Join) {
	if _, voter := n.meta.State().PeerByNodeID(id); voter {
		n.send(id, msg.JoinAccepted{Voters: n.voterAddresses()})
		return
	}
	_, err := n.meta.ProposeConfChange(meta.ConfChange{Kind: meta.AddVoter,
		Peer: meta.Peer{ID: id, RaftID: m.RaftID, ClusterAddr: m.ClusterAddr}, RecordNodeID: true})
	if err != nil && !errors.Is(err, meta.ErrConfChangeInProgress) && !errors.Is(err, meta.ErrBarrierPending) {
		n.observer.Event("join-refused", fmt.Sprintf("%s: %v", id, err))
		return
	}
	chaos.Reached(chaos.MarkNodeJoinProposed)
}

// stepSubscribe registers a peer's interest in a topic's new records.
func (n *Node) stepSubscribe(from string, m msg.Subscribe) {
	subscribers := n.cluster.subscribers[m.Topic]
	if subscribers == nil {
		subscribers = map[string]int64{}
		n.cluster.subscribers[m.Topic] = subscribers
	}
	subscribers[from] = max(subscribers[from], n.nowMs+min(max(m.ForMs, 0), n.subscriptionForMsMax()))
}

// subscriptionForMsMax is the longest a subscription lasts here: what a
// poll of this node's longest wait asks for (the peers of a cluster share
// the setting), and at least subscribeForMsMax. Capped shorter, a poll
// waiting past it was not told of a record that came after.
func (n *Node) subscriptionForMsMax() int64 {
	return max(subscribeForMsMax, n.subscriptionForMs())
}

// subscriptionForMs is how long a subscription this node asks for lasts:
// its longest wait plus a forward timeout.
func (n *Node) subscriptionForMs() int64 { return n.cfg.ConsumeWaitMaxMs + n.cfg.ForwardTimeoutMs }

// subscribeProber registers a peer that probed this node for a topic's
// records (an unpinned consume forwarded here, which a peer sends for a
// poll parked there, or for a consume that asks the other owners first)
// as a subscriber, as its own Subscribe does:
// the subscriptions a restart of this node forgot, or a lost Subscribe
// never made, are made again by the next probe, and a peer that thinks
// it is subscribed sends no Subscribe (consume review).
func (n *Node) subscribeProber(from string, req msg.Request) {
	if r, ok := req.(msg.Consume); ok && r.Partition == msg.PartitionNone {
		n.stepSubscribe(from, msg.Subscribe{Topic: r.Topic, ForMs: n.subscriptionForMs()})
	}
}

// notifySubscribers tells the nodes subscribed to a topic that records
// became available here.
func (n *Node) notifySubscribers(topicName string) {
	subscribers := n.cluster.subscribers[topicName]
	if len(subscribers) == 0 {
		return
	}
	ids := make([]string, 0, len(subscribers))
	for id := range subscribers { //determinism:ok sorted below
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if subscribers[id] < n.nowMs {
			delete(subscribers, id)
			continue
		}
		n.send(id, msg.Notify{Topic: topicName})
	}
	if len(subscribers) == 0 {
		delete(n.cluster.subscribers, topicName)
	}
}

// subscribe asks the owners to notify this node of new records of a
// topic, unless a subscription there already lasts until untilMs (the
// poll's deadline plus a forward timeout): a poll parked near the end of
// a subscription would otherwise outlive it, and the owner, which drops
// an expired subscriber, would notify nobody of a record it then took.
// It returns the owners it sent a Subscribe to.
func (n *Node) subscribe(topicName string, owners []string, untilMs int64) (subscribed []string) {
	forMs := n.subscriptionForMs()
	for _, owner := range owners {
		key := topicName + "\x00" + owner
		if n.cluster.subscribedUntilMs[key] >= untilMs {
			continue
		}
		if n.ownerAvailable(owner, nil) {
			// Recorded only where it may arrive: the transport drops what
			// it queues for a peer it cannot reach, and a Subscribe
			// recorded as made is not sent again for a whole wait.
			n.cluster.subscribedUntilMs[key] = n.nowMs + forMs
		}
		n.send(owner, msg.Subscribe{Topic: topicName, ForMs: forMs})
		subscribed = append(subscribed, owner)
	}
	return subscribed
}

// forgetSubscriptions drops what this node keeps of a topic's
// subscriptions (those of other nodes to it here, its own at the owners,
// the owners that notified it): a topic that is gone keeps none, so a
// client that keeps creating, polling and deleting topics cannot grow
// these tables.
func (n *Node) forgetSubscriptions(topicName string) {
	delete(n.cluster.subscribers, topicName)
	delete(n.cluster.notified, topicName)
	prefix := topicName + "\x00"
	for key := range n.cluster.subscribedUntilMs { //determinism:ok only deletes
		if strings.HasPrefix(key, prefix) {
			delete(n.cluster.subscribedUntilMs, key)
		}
	}
}

// stepNotify lets a parked long poll of the topic probe the owner that
// has new records.
func (n *Node) stepNotify(from string, m msg.Notify) {
	n.routing.forwards.Heard(from)
	if _, known := n.lookupTopic(m.Topic); !known {
		return // a Notify sent before its owner applied the delete: no poll of it here, and no state to keep
	}
	n.notifiedBy(m.Topic, from)
}

// notifiedBy probes owner for a parked poll of the topic now, or, when
// every poll is busy probing, remembers that owner has records.
func (n *Node) notifiedBy(topicName, owner string) {
	if n.probeForNotify(topicName, owner) {
		return
	}
	pending := n.cluster.notified[topicName]
	if slices.Contains(pending, owner) {
		return
	}
	n.cluster.notified[topicName] = append(pending, owner)
}

// voterAddresses lists the voters of this replica's state, by raft id.
func (n *Node) voterAddresses() []msg.PeerAddress {
	peers := n.meta.State().Peers()
	voters := make([]msg.PeerAddress, len(peers))
	for i, peer := range peers {
		voters[i] = msg.PeerAddress{ID: peer.ID, RaftID: peer.RaftID, ClusterAddr: peer.ClusterAddr}
	}
	return voters
}

// ClusterAddrs maps the id of every other node this node knows of (the
// configured peers, the metastore's voters and members) to its cluster
// address, so the driver can reach the To of any Envelope it is handed.
func (n *Node) ClusterAddrs() map[string]string {
	addrs := map[string]string{}
	for _, peer := range n.meta.KnownPeers() {
		addrs[peer.ID] = peer.ClusterAddr
	}
	for _, peer := range n.meta.State().Peers() {
		addrs[peer.ID] = peer.ClusterAddr
	}
	for _, member := range n.meta.State().Members() {
		if member.ClusterAddr != "" {
			addrs[member.ID] = member.ClusterAddr
		}
	}
	for id, moved := range n.cluster.movedAddrs { //determinism:ok a map is built
		addrs[id] = moved.addr
	}
	n.retiredAskerAddrs(addrs)
	delete(addrs, n.cfg.NodeID)
	return addrs
}

// electionTimeoutMs is the metastore's election timeout in node time (the
// least of raft's randomized range).
func (n *Node) electionTimeoutMs() int64 {
	return int64(n.cfg.Meta.ElectionTicks) * n.cfg.MetaTickIntervalMs
}
