package node

import (
	"fmt"
	"slices"
	"sort"

	"narad/invariant"
	"narad/meta"
	"narad/msg"
)

// metaDir names the metastore's work in a Ready's Syncs (traces, logs).
const metaDir = "metastore"

// metaTicksPerTickMax bounds the Raft ticks one node Tick catches up: a
// clock that jumps ahead, or a loop that stalled, must not fire a burst of
// ticks (a leader that processed no replies meanwhile would fail its
// quorum check and step down; followers would campaign). The stall is
// simply not counted in raft time.
const metaTicksPerTickMax = 2

// tickMeta ticks the metastore at its own period and heartbeats when due.
func (n *Node) tickMeta() {
	for range metaTicksPerTickMax {
		if n.nowMs < n.nextMetaTickMs {
			break
		}
		n.meta.Tick()
		n.nextMetaTickMs += n.cfg.MetaTickIntervalMs
	}
	n.nextMetaTickMs = max(n.nextMetaTickMs, n.nowMs-n.nowMs%n.cfg.MetaTickIntervalMs)
	n.maintainMeta()
}

// maintainMeta runs after every tick and every applied metastore Ready: a
// sole voter elects itself as soon as raft lets it (once its bootstrap
// configuration is applied), the node heartbeats when due, and the
// leader proposes the heartbeats it gathered (heartbeats.go).
func (n *Node) maintainMeta() {
	if _, err := n.meta.CampaignIfSoleVoter(); err != nil {
		n.observer.Event("campaign-failed", err.Error())
	}
	if n.nowMs >= n.nextHeartbeatMs { // only when due: no leader lookup at every input
		if leader, leaderKnown := n.meta.Leader(); leaderKnown {
			if !n.meta.State().Retired(n.cfg.NodeID) { // decommissioned: no member to keep alive
				n.heartbeat(leader)
			}
			interval := n.cfg.MemberHeartbeatIntervalMs
			n.nextHeartbeatMs = n.nowMs - n.nowMs%interval + interval // in step with the other members' clocks
		}
	}
	n.proposeHeartbeats()
}

// addMetaReady puts the metastore's Ready into rd: its persistence as one
// more Sync, its messages as envelopes. A Ready with nothing for the store
// (only Raft messages: heartbeats and their answers) is persisted here, in
// memory, and adds no Sync: it would otherwise make a sync round of every
// heartbeat, holding its answer and the node's inputs for the round.
// Should that Persist ever fail, the Sync stays, and the driver meets the
// failure as for any other.
func (n *Node) addMetaReady(rd *Ready) {
	if !n.meta.HasReady() {
		return
	}
	invariant.Check(n.metaReady == nil, "node: a metastore Ready is still in flight")
	n.metaReadyHeld = n.meta.Ready()
	metaReady := &n.metaReadyHeld
	n.metaReady = metaReady
	n.confirmReads(metaReady.Reads)
	if metaReady.NeedsStore() || n.meta.Persist(*metaReady) != nil {
		own := *metaReady // the Sync keeps a copy of its own
		n.metaReady = &own
		rd.Syncs = append(rd.Syncs, Sync{Dir: metaDir, meta: n.meta, metaReady: n.metaReady})
	}
	rd.Messages = slices.Grow(rd.Messages, len(metaReady.Messages))
	for _, message := range metaReady.Messages {
		peer, ok := n.meta.PeerByRaftID(message.GetTo())
		if !ok {
			n.warnUnknownPeer(message.GetTo())
			n.cluster.voterAddressUnknown = true
			continue
		}
		rd.Messages = append(rd.Messages, msg.Envelope{From: n.cfg.NodeID, To: peer.ID, Message: msg.RaftMessage{Message: message}})
	}
}

// unknownPeerWarnEveryMs: a raft id this replica cannot address (a voter
// added while it was away, until a JoinAccepted names it) is named in a
// raft-unknown-peer event at most once per this period, not at each of
// raft's messages to it (ten a second while a node joins).
const unknownPeerWarnEveryMs = 60_000

// warnUnknownPeer names a raft id this replica cannot address, at most
// once per unknownPeerWarnEveryMs for each.
func (n *Node) warnUnknownPeer(raftID uint64) {
	if !n.cluster.unknownPeerWarned.due(raftID, n.nowMs, unknownPeerWarnEveryMs) {
		return
	}
	n.observer.Event("raft-unknown-peer", fmt.Sprintf("raft id %d: no address known for it (a voter added while this node was away?); asking the peers", raftID))
}

// advanceMeta completes the metastore's Ready: outcomes answer proposals,
// the applied state may have deleted or re-created topics, and it or a
// read raft confirmed may settle held requests.
func (n *Node) advanceMeta() {
	if n.metaReady == nil {
		return
	}
	outcomes := n.meta.Advance(*n.metaReady)
	n.metaReady, n.metaReadyHeld = nil, meta.Ready{} // keeps no entry or message alive
	applied := n.meta.AppliedIndex()
	moved := applied != n.reconciledIndex // Readys that only carry Raft heartbeats change nothing
	if moved {
		n.reconciledIndex = applied
		n.reconcileTopics()
	}
	if moved || n.leaderReads.fresh {
		n.leaderReads.fresh = false
		n.serveHeld()
	}
	n.handleOutcomes(outcomes)
	n.settleStaleProposals()
	n.maintainMeta()
}

// rememberTopics records the topics of the applied state.
func (n *Node) rememberTopics() {
	for _, record := range n.meta.State().Topics() {
		n.known[record.Name] = record.Identity()
	}
}

// reconcileTopics brings the node's partitions in line with the applied
// state: a topic that disappeared (or was re-created under its name) loses
// its local data, and its parked polls are answered 404
// (dropTopicState); a changed topic passes new caps to its lease tables.
// The polls it wakes are those a change may serve: the polls pinned to
// the partitions whose caps let more records go (refreshLeaseConfig) or
// that this node gained (noteGainedPartitions), with their topic's
// unpinned polls; an unfrozen partition's are woken by reconcileMoves.
// Entries that change no topic record (the members' heartbeats, members,
// users) wake none, nor does a change of another topic, or one that makes
// nothing servable here (a retention, a schema, a move's target set):
// waking every topic's polls at each change looked at every pinned
// partition once per topic created, altered or moved anywhere in the
// cluster.
func (n *Node) reconcileTopics() {
	version := n.meta.State().TopicsVersion()
	changed := !n.topicsReconciled || version != n.reconciledTopics
	var servable partitionsToTell
	if changed {
		n.reconciledTopics, n.topicsReconciled = version, true
		servable = n.reconcileTopicRecords()
	}
	n.reconcileMoves() // first: a partition gained by a move is adopted there (its queue state)
	if !changed {
		return
	}
	for _, name := range n.waiters.topicNames() {
		n.subscribeNewOwners(name)
	}
	n.tellPartitions(&servable)
}

// subscribeNewOwners subscribes the topic's parked polls at its owners as
// they are now: a poll subscribed at the owners of when it parked, and a
// partition added or moved since to a node it never subscribed at, would
// not be told of a record there. subscribe skips the owners whose
// subscription already lasts long enough.
func (n *Node) subscribeNewOwners(name string) {
	t, ok := n.lookupTopic(name)
	if !ok {
		return
	}
	latest := int64(-1)
	for _, w := range n.waiters.unpinned(name) {
		if !w.noWait {
			latest = max(latest, w.deadlineMs)
		}
	}
	if latest < 0 {
		return
	}
	for _, owner := range n.subscribe(name, n.remoteOwners(t), latest+n.cfg.ForwardTimeoutMs) {
		// A record it held before the subscription sends no Notify: probe
		// it as if it had notified (after the Subscribe on the link).
		n.notifiedBy(name, owner)
	}
}

// reconcileTopicRecords drops the state of the topics that disappeared or
// were re-created, passes the current caps to the lease tables, and
// returns the partitions whose polls the change may serve.
func (n *Node) reconcileTopicRecords() partitionsToTell {
	records := n.meta.State().Topics() // copies every topic: once per change of the topics
	current := make(map[string]meta.TopicRecord, len(records))
	for _, record := range records {
		current[record.Name] = record
	}
	for _, name := range sortedNames(n.known) {
		if record, ok := current[name]; !ok || record.Identity() != n.known[name] {
			n.dropTopicState(name)
			delete(n.known, name)
		}
	}
	var servable partitionsToTell
	for _, record := range records {
		n.known[record.Name] = record.Identity()
		n.refreshLeaseConfig(record, &servable)
	}
	n.noteGainedPartitions(records, &servable)
	return servable
}

// noteGainedPartitions marks in servable the partitions this node gained
// since the last reconcile (a move's flip, a forced promotion, a
// partition added, an installed snapshot): their records are deliverable
// here at once (a move carries no reservation), to this node's unpinned
// polls and, through their subscriptions, to polls parked elsewhere,
// which would otherwise wait out their wait for a record that was ready.
// No poll here is pinned to a partition this node did not own (it went to
// the owner), so none but the unpinned ones is woken for it.
func (n *Node) noteGainedPartitions(records []meta.TopicRecord, servable *partitionsToTell) {
	owned := make(map[partitionKey]bool, len(n.ownedAtReconcile))
	for _, record := range records { // sorted by name
		for index, assignment := range record.Assignments {
			if assignment.Owner != n.cfg.NodeID {
				continue
			}
			key := partitionKey{record.Name, index}
			owned[key] = true
			if n.ownedAtReconcile != nil && !n.ownedAtReconcile[key] {
				servable.add(record.Name, index)
			}
		}
	}
	n.ownedAtReconcile = owned
}

// refreshLeaseConfig passes a topic's caps to its lease tables, and marks
// in servable the partitions whose table may now reserve a record it
// could not (lease.Config.MayReserveMoreThan: a cap raised, exhausted
// records put back in the queue): the polls parked here that may take
// them, and through their subscriptions those parked elsewhere, which
// cannot see this node's partitions change. A lowered cap marks none.
func (n *Node) refreshLeaseConfig(record meta.TopicRecord, servable *partitionsToTell) {
	t, _ := n.lookupTopic(record.Name)
	for i := range record.Partitions {
		if p := n.partitions[partitionKey{record.Name, i}]; p != nil && p.leases != nil {
			cfg := n.leaseConfig(t)
			if cfg.MayReserveMoreThan(p.leases.Config()) {
				servable.add(record.Name, i)
			}
			p.leases.SetConfig(cfg)
		}
	}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m { //determinism:ok sorted below
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
