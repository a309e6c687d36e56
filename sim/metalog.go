package sim

import (
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
)

// metaLog rebuilds the metastore's committed log from the Raft messages on
// the wire, and from it the cluster's committed placement: which node owns
// each partition, and which moves are under way, at every simulated
// instant. No node's memory is read: leaders' appends carry every entry
// (an entry is committed only once sent to a quorum) with its
// predecessor, and leaders' messages carry the commit index.
//
// It checks Raft's promises on the way: two appends of the same entry
// never name different predecessors (log matching), and a committed
// entry is never replaced (state machine safety).
type metaLog struct {
	w *World
	// entries holds every entry a leader sent, by index and term, with
	// its predecessor. An (index, term) pair names one entry forever.
	entries map[entryID]loggedEntry
	// tips maps a term to the highest entry its leader sent: the leader's
	// log ends there or later, and its commit index never passes it.
	tips map[uint64]entryID
	// applied is the last committed entry applied to the shadow state. It
	// starts at the bootstrap entries (index 1..nodes, term 1), which every
	// node writes itself and no leader sends.
	applied entryID
	// settledVerdict caches World.placementUnsettled for the applied entry
	// it names: the verdict reads only the shadow state, which changes only
	// when an entry is applied, and the settle wait asks after every event.
	settledVerdict placementVerdict
	// members, voters and topics are the shadow state: the members
	// (created by a heartbeat, marked dead, draining, removed by
	// RemoveMember), the Raft voters by raft id (the bootstrap nodes, then
	// committed configuration changes) and each topic's assignments,
	// changed only by committed entries, as meta applies them.
	members map[string]*meta.Member
	voters  map[uint64]string
	// removedRaftIDs are the raft ids of removed voters: meta never lets
	// one back in; removedNodeIDs their node ids: their decommission is
	// complete and cannot be cancelled.
	removedRaftIDs map[uint64]bool
	removedNodeIDs map[string]bool
	topics         map[string][]meta.Assignment
	// identities holds each topic's identity as meta gives it: the
	// creation time its CreateTopic carries and, for a numbered create,
	// the count of numbered creates applied (topicSequence). A topic
	// change guarded by an identity (DeleteTopic, AlterTopic) applies only
	// to the topic that has it.
	identities    map[string]meta.TopicIdentity
	topicSequence uint64
	// createdIndex is, by topic name, the committed index of the create
	// of its current creation (controlRecords: a node that has not applied
	// it may still serve the creation before).
	createdIndex map[string]uint64
	// deletions holds, by topic name, each committed delete of the topic
	// in log order, with its owners at that moment: a node that has not
	// applied a delete may still write to the creation it removed
	// (ownerChecker.staleAppend).
	deletions map[string][]topicDeletion
	// creators holds, by topic name, the user who created the topic's
	// current creation ("" once that user is deleted): what a change
	// guarded by ExpectedOwner finds (meta's checkOwnedBy).
	creators map[string]string
	// ownedSince holds, by partition name, the index of the entry that
	// gave the partition its current owner (ownerSet).
	ownedSince map[string]uint64
	// applying is the index of the entry being applied (apply).
	applying uint64
	// moving caches anyMoveInFlight while movingKnown; only applyCommand
	// changes topics, and it clears movingKnown.
	moving, movingKnown bool
	// generations counts the committed flips of each partition, by
	// partitionName; a partition never flipped is absent.
	generations map[string]int
	// pastOwners lists, by partitionName, every node that ever owned the
	// partition in the committed log, in order; it only grows. A
	// replica's view is a committed prefix, so only these nodes can
	// believe they own the partition.
	pastOwners map[string][]string
	// pastOwnersVersion counts the additions to pastOwners, so that a
	// checker may keep what it derived from them until it changes.
	pastOwnersVersion int
	// movesStarted, movesCompleted, movesForced and movesAborted count the
	// committed targets, flips (ForcePromote ones also in movesForced)
	// and aborts.
	movesStarted, movesCompleted, movesForced, movesAborted int
	// listener hears of committed membership and ownership changes (the
	// moves scenario reacts to them); nil in worlds without one.
	listener membershipListener
	// users are the committed users (the users scenario checks them).
	users shadowUsers
}

type entryID struct{ index, term uint64 }

type loggedEntry struct {
	parent    entryID
	entryType raftpb.EntryType
	data      []byte
}

func newMetaLog(w *World) *metaLog {
	bootstrap := entryID{index: uint64(len(w.nodes)), term: 1}
	voters := map[uint64]string{}
	for _, n := range w.nodes {
		voters[meta.RaftIDOf(n.id)] = n.id
	}
	return &metaLog{w: w, entries: map[entryID]loggedEntry{}, tips: map[uint64]entryID{}, applied: bootstrap,
		members: map[string]*meta.Member{}, voters: voters, removedRaftIDs: map[uint64]bool{}, removedNodeIDs: map[string]bool{},
		topics: map[string][]meta.Assignment{}, identities: map[string]meta.TopicIdentity{}, createdIndex: map[string]uint64{}, deletions: map[string][]topicDeletion{}, ownedSince: map[string]uint64{}, creators: map[string]string{}, generations: map[string]int{}, pastOwners: map[string][]string{},
		users: shadowUsers{users: map[string]meta.User{}}}
}

// observe takes a leader's message: its entries, then its commit index.
func (l *metaLog) observe(msg *raftpb.Message) {
	if msg.GetType() == raftpb.MsgApp {
		l.record(msg)
	}
	if msg.GetType() == raftpb.MsgApp || msg.GetType() == raftpb.MsgHeartbeat {
		l.commit(msg.GetTerm(), msg.GetCommit())
	}
}

// record keeps an append's entries with their predecessors.
func (l *metaLog) record(msg *raftpb.Message) {
	parent := entryID{index: msg.GetIndex(), term: msg.GetLogTerm()}
	l.raiseTip(msg.GetTerm(), parent)
	for _, e := range msg.GetEntries() {
		id := entryID{index: e.GetIndex(), term: e.GetTerm()}
		if known, ok := l.entries[id]; ok && known.parent != parent {
			l.w.fail("raft-log-matching", "entry %d of term %d follows %+v in one append and %+v in another", id.index, id.term, known.parent, parent)
			return
		}
		l.entries[id] = loggedEntry{parent: parent, entryType: e.GetType(), data: e.GetData()}
		l.raiseTip(msg.GetTerm(), id)
		parent = id
	}
}

func (l *metaLog) raiseTip(term uint64, id entryID) {
	if id.index > l.tips[term].index {
		l.tips[term] = id
	}
}

// commit applies the entries up to index, as the leader of term's log
// holds them, to the shadow state.
func (l *metaLog) commit(term, index uint64) {
	if index <= l.applied.index {
		return
	}
	chain, ok := l.chainTo(l.tips[term], index)
	if !ok {
		return // the run failed (chainTo said why), or the commit waits for an entry not sent yet
	}
	for _, id := range chain {
		l.apply(id)
		l.applied = id
		l.w.removals.judgeDeferred(id.index)
	}
}

// chainTo walks back from tip to the applied entry and returns the entries
// after it up to index, oldest first. An entry above index that no leader
// has sent yet only defers the commit to a later message: a leader that
// crashed after persisting an entry and before sending it, and was
// elected again, probes its followers with that entry as the predecessor
// of its first append of the new term, and sends it only once they refuse
// (seed 204 of the three-node moves world with -deadletters). A committed
// entry never sent is a failure.
func (l *metaLog) chainTo(tip entryID, index uint64) ([]entryID, bool) {
	if tip.index < index {
		l.w.fail("meta-view", "a leader announced commit index %d but sent entries only up to %d", index, tip.index)
		return nil, false
	}
	var chain []entryID
	for id := tip; id.index > l.applied.index; id = l.entries[id].parent {
		if _, known := l.entries[id]; !known && id.index > index {
			return nil, false // not committed yet: a later message sends it
		} else if !known {
			l.w.fail("meta-view", "committed entry %d of term %d was never sent by a leader", id.index, id.term)
			return nil, false
		}
		if id.index <= index {
			chain = append(chain, id)
		}
		if l.entries[id].parent.index == l.applied.index && l.entries[id].parent != l.applied {
			l.w.fail("raft-state-machine-safety", "entry %d of term %d was applied, but the log committed at %d holds term %d there",
				l.applied.index, l.applied.term, index, l.entries[id].parent.term)
			return nil, false
		}
	}
	slices.Reverse(chain)
	return chain, true
}

// termBoundVersion is the version byte (the second byte of an encoded
// command) of the commands that apply only in the term they were
// proposed in: the metastore refuses one that raft appended in another
// term, and it changes nothing (docs/architecture.md, "The metastore").
const termBoundVersion = 2

// staleProposal reports whether a committed command, proposed in
// proposalTerm and appended in entryTerm, is one the metastore refuses
// for its term. Written here from the rule, not called from meta: the
// shadow state and the meta model check meta's apply against it.
func staleProposal(data []byte, proposalTerm, entryTerm uint64) bool {
	return len(data) > 1 && data[1] == termBoundVersion && proposalTerm != entryTerm
}

// apply applies one committed entry to the shadow state; entries that do
// not touch members or placement are skipped.
func (l *metaLog) apply(id entryID) {
	entry := l.entries[id]
	if entry.entryType == raftpb.EntryConfChange {
		removed := l.applyConfChange(id, entry.data)
		if l.w.metaModel != nil {
			l.w.metaModel.committed(id.index, id.term, entry.entryType, entry.data, removed)
		}
		return
	}
	if l.w.metaModel != nil {
		l.w.metaModel.committed(id.index, id.term, entry.entryType, entry.data, "")
	}
	if entry.entryType != raftpb.EntryNormal || len(entry.data) == 0 {
		return
	}
	proposal, command, err := meta.DecodeCommand(entry.data)
	if err != nil {
		l.w.fail("meta-view", "committed entry %d of term %d does not decode: %v", id.index, id.term, err)
		return
	}
	if staleProposal(entry.data, proposal.Term, id.term) {
		return // meta refuses it without a change
	}
	if valid, ok := command.(interface{ Validate() error }); ok && valid.Validate() != nil {
		return // meta rejects it without a change
	}
	l.applying = id.index
	l.applyCommand(command)
	l.w.removals.placementChanged(id.index, command)
}

func (l *metaLog) applyCommand(command meta.Command) {
	l.movingKnown = false
	switch c := command.(type) {
	case meta.MemberHeartbeat:
		l.heartbeat(c)
	case meta.MemberHeartbeats:
		for _, beat := range c.Beats {
			l.heartbeat(beat)
		}
	case meta.MarkMemberDead:
		l.markDead(c)
	case meta.SetDraining:
		l.setDraining(c)
	case meta.RemoveMember:
		l.removeMember(c.ID)
	case meta.CreateTopic:
		l.createTopic(c)
	case meta.DeleteTopic:
		_, exists := l.topics[c.Name]
		if exists && l.ownedBy(c.Name, c.ExpectedOwner) && l.identityHolds(c.Name, c.Expected()) {
			l.deletions[c.Name] = append(l.deletions[c.Name], l.deletion(c.Name))
			delete(l.topics, c.Name)
			delete(l.identities, c.Name)
			delete(l.creators, c.Name)
		}
	case meta.AlterTopic:
		l.growTopic(c)
	case meta.SetTarget:
		l.setTarget(c)
	case meta.CompleteMove:
		if l.identityHolds(c.Topic, c.Expected()) {
			l.flip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget, c.ExpectedStartedAtMs)
		}
	case meta.ForcePromote:
		if l.identityHolds(c.Topic, c.Expected()) &&
			l.flip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget, c.ExpectedStartedAtMs) {
			l.movesForced++
		}
	case meta.AbortMove:
		l.abortMove(c)
	case meta.PutUser, meta.DeleteUser, meta.SetGrants, meta.SetPassword:
		l.applyUser(c)
	}
}

// anyLeftVoters reports whether a member named left the voters (meta's
// checkVoting, which a placement of this release asks for).
func (l *metaLog) anyLeftVoters(ids []string) bool {
	for _, id := range ids {
		if l.removedNodeIDs[id] || l.removedRaftIDs[meta.RaftIDOf(id)] {
			return true
		}
	}
	return false
}

// allReceiving reports whether every member named may get a new
// partition (meta's checkOwners): a member, alive and not draining.
func (l *metaLog) allReceiving(ids []string) bool {
	for _, id := range ids {
		if member, ok := l.members[id]; !ok || !member.Alive || member.Draining {
			return false
		}
	}
	return true
}

// topicDeletion is one committed delete of a topic: its index, when the
// simulator saw it commit (no earlier than it did) and, by partition, the
// owners of the partitions it removed and the index of the entry that
// made each the owner.
type topicDeletion struct {
	index       uint64
	committedMs int64
	owners      []string
	ownedSince  []uint64
}

// deletion describes the delete of topic being applied.
func (l *metaLog) deletion(topic string) topicDeletion {
	d := topicDeletion{index: l.applying, committedMs: l.w.nowMs, owners: l.owners(topic)}
	for partition := range d.owners {
		d.ownedSince = append(d.ownedSince, l.ownedSince[partitionName(topic, partition)])
	}
	return d
}

func (l *metaLog) createTopic(c meta.CreateTopic) {
	_, exists := l.topics[c.Name]
	_, deadLetterExists := l.topics[c.DeadLetterTopic]
	if exists || c.NamesFolded && l.namedIgnoringCase(c.Name) || !l.creatorHolds(c.CreatedBy, c.CreatorCreatedAtMs) || !l.allReceiving(c.Owners) || c.OwnersVoting && l.anyLeftVoters(c.Owners) ||
		c.Limits.TopicsMax > 0 && len(l.topics) >= c.Limits.TopicsMax || l.overPerNodeLimit(c.Owners, c.Limits.PartitionsPerNodeMax) ||
		c.DeadLetterTopic != "" && !deadLetterExists {
		return // meta refuses it
	}
	l.creators[c.Name] = c.CreatedBy
	assignments := make([]meta.Assignment, len(c.Owners))
	for i, owner := range c.Owners {
		assignments[i] = meta.Assignment{Owner: owner}
		l.ownerSet(c.Name, i, owner)
	}
	l.topics[c.Name] = assignments
	l.createdIndex[c.Name] = l.applying
	identity := meta.TopicIdentity{CreatedAtMs: c.CreatedAtMs}
	if c.Numbered {
		l.topicSequence++
		identity.Incarnation = l.topicSequence
	}
	l.identities[c.Name] = identity
}

// namedIgnoringCase reports whether a topic holds name in another case
// (meta's checkNameCase, which a create of this release asks for).
func (l *metaLog) namedIgnoringCase(name string) bool {
	for existing := range l.topics { //determinism:ok a yes or no
		if existing != name && strings.EqualFold(existing, name) {
			return true
		}
	}
	return false
}

// overPerNodeLimit reports whether owners of new partitions would take a
// member past perNodeMax partitions (0: no limit; meta's
// checkPartitionsPerNode).
func (l *metaLog) overPerNodeLimit(added []string, perNodeMax int) bool {
	if perNodeMax <= 0 || len(added) == 0 {
		return false
	}
	owned := map[string]int{}
	for _, assignments := range l.topics { //determinism:ok counts only
		for _, a := range assignments {
			owned[a.Owner]++
		}
	}
	for _, owner := range added {
		owned[owner]++
		if owned[owner] > perNodeMax {
			return true
		}
	}
	return false
}

// creatorHolds reports whether a create's creator, checked as created at
// createdAtMs (0: unchecked), is still that user (meta's checkCreator).
func (l *metaLog) creatorHolds(username string, createdAtMs int64) bool {
	user, exists := l.users.users[username]
	return createdAtMs == 0 || exists && user.CreatedAtMs == createdAtMs
}

// ownedBy reports whether a change guarded by the topic's owner
// (expected; "": no guard) finds it that user's (meta's checkOwnedBy).
func (l *metaLog) ownedBy(topic, expected string) bool {
	return expected == "" || l.creators[topic] == expected
}

// identityHolds reports whether a change guarded by expected (zero: no
// guard) finds the topic it was checked against (meta's checkIdentity).
func (l *metaLog) identityHolds(name string, expected meta.TopicIdentity) bool {
	return expected == (meta.TopicIdentity{}) || l.identities[name] == expected
}

// growTopic adds the partitions of an AlterTopic that grows the topic.
func (l *metaLog) growTopic(c meta.AlterTopic) {
	assignments, exists := l.topics[c.Name]
	if !exists || !l.identityHolds(c.Name, c.Expected()) || !l.ownedBy(c.Name, c.ExpectedOwner) || l.overPerNodeLimit(c.NewOwners, c.Limits.PartitionsPerNodeMax) || c.Partitions == nil || *c.Partitions-len(assignments) != len(c.NewOwners) || !l.allReceiving(c.NewOwners) || c.OwnersVoting && l.anyLeftVoters(c.NewOwners) {
		return
	}
	for _, owner := range c.NewOwners {
		l.ownerSet(c.Name, len(assignments), owner)
		assignments = append(assignments, meta.Assignment{Owner: owner})
	}
	l.topics[c.Name] = assignments
}

// assignment returns the live assignment of a partition, or nil.
func (l *metaLog) assignment(topic string, partition int) *meta.Assignment {
	assignments := l.topics[topic]
	if partition < 0 || partition >= len(assignments) {
		return nil
	}
	return &assignments[partition]
}

func (l *metaLog) setTarget(c meta.SetTarget) {
	a := l.assignment(c.Topic, c.Partition)
	target, member := l.members[c.Target]
	receiving := member && target.Alive && !target.Draining && !l.removedNodeIDs[c.Target] && !l.removedRaftIDs[meta.RaftIDOf(c.Target)]
	if a == nil || a.Target != "" || a.Owner != c.ExpectedOwner || !receiving || (c.MovesMax > 0 && l.movesInFlight() >= c.MovesMax) {
		return
	}
	start := max(c.NowMs, a.LastMoveStartedAtMs+1) // every move of a partition has a start of its own
	a.Target, a.MoveStartedAtMs, a.LastMoveStartedAtMs = c.Target, start, start
	l.movesStarted++
	if l.w.lateProposals != nil {
		l.w.lateProposals.moveStarted(c.Topic, c.Partition)
	}
	l.w.tracef("meta: %s/%d moves %s -> %s", c.Topic, c.Partition, a.Owner, a.Target)
}

// flip applies a guarded ownership flip and reports whether it passed the
// guard.
func (l *metaLog) flip(topic string, partition int, expectedOwner, expectedTarget string, expectedStartedAtMs int64) bool {
	a := l.assignment(topic, partition)
	if a == nil || a.Owner != expectedOwner || a.Target != expectedTarget || a.Target == "" {
		return false
	}
	if expectedStartedAtMs != 0 && a.MoveStartedAtMs != expectedStartedAtMs {
		return false // a later move with the same owner and target (meta's guard)
	}
	a.Owner, a.Target, a.MoveStartedAtMs = a.Target, "", 0
	l.generations[partitionName(topic, partition)]++
	l.ownerSet(topic, partition, a.Owner)
	l.movesCompleted++
	l.w.leases.flipped(topic, partition)
	l.w.tracef("meta: %s/%d now owned by %s", topic, partition, a.Owner)
	if l.listener != nil {
		l.listener.flipped(topic, partition)
	}
	return true
}

func (l *metaLog) abortMove(c meta.AbortMove) {
	a := l.assignment(c.Topic, c.Partition)
	if a == nil || a.Target != c.ExpectedTarget || !l.identityHolds(c.Topic, c.Expected()) {
		return
	}
	if c.ExpectedStartedAtMs != 0 && a.MoveStartedAtMs != c.ExpectedStartedAtMs {
		return // a late abort of a move since replaced by one to the same target (meta's guard)
	}
	a.Target, a.MoveStartedAtMs = "", 0
	l.movesAborted++
	l.w.tracef("meta: %s/%d move aborted", c.Topic, c.Partition)
	if l.listener != nil {
		l.listener.aborted(c.Topic, c.Partition)
	}
}

// ownerSet records that the entry being applied made id a partition's
// owner (a create, a growth, a flip).
func (l *metaLog) ownerSet(topic string, partition int, id string) {
	l.ownedSince[partitionName(topic, partition)] = l.applying
	l.addPastOwner(topic, partition, id)
}

// addPastOwner records that id owns a partition now. When the list of
// past owners grows, every node on it is looked at again by the
// single-writer checker after this step (until now it could not have
// believed itself a second owner).
func (l *metaLog) addPastOwner(topic string, partition int, id string) {
	name := partitionName(topic, partition)
	if slices.Contains(l.pastOwners[name], id) {
		return
	}
	l.pastOwners[name] = append(l.pastOwners[name], id)
	l.pastOwnersVersion++
	for _, past := range l.pastOwners[name] {
		if n := l.w.nodeByID(past); n != nil {
			n.touched = true
		}
	}
}

// owners returns a topic's committed owners, by partition; nil when the
// topic does not exist.
func (l *metaLog) owners(topic string) []string {
	assignments, exists := l.topics[topic]
	if !exists {
		return nil
	}
	owners := make([]string, len(assignments))
	for i, a := range assignments {
		owners[i] = a.Owner
	}
	return owners
}

// movesInFlight counts the partitions with a target.
func (l *metaLog) movesInFlight() int {
	count := 0
	for _, assignments := range l.topics { //determinism:ok a count
		for _, a := range assignments {
			if a.Target != "" {
				count++
			}
		}
	}
	return count
}

// anyMoveInFlight reports whether some partition has a target: the moves
// scenario asks after every step, and stops at the first.
func (l *metaLog) anyMoveInFlight() bool {
	if !l.movingKnown {
		l.moving, l.movingKnown = l.findMoveInFlight(), true
	}
	return l.moving
}

func (l *metaLog) findMoveInFlight() bool {
	for _, assignments := range l.topics { //determinism:ok whether any: the order does not matter
		for _, a := range assignments {
			if a.Target != "" {
				return true
			}
		}
	}
	return false
}

// owner returns the committed owner of a partition; "" when the topic or
// the partition does not exist.
func (l *metaLog) owner(topic string, partition int) string {
	if a := l.assignment(topic, partition); a != nil {
		return a.Owner
	}
	return ""
}

// partitionName names a partition "topic/index". It runs after every step
// for every partition (the writer checker), so it concatenates rather than
// formats.
func partitionName(topic string, partition int) string { return topic + "/" + strconv.Itoa(partition) }
