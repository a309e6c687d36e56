package sim

import (
	"maps"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/meta"
	"narad/rebalance"
)

// metaVotersMin mirrors meta's floor on voters: a removal that would leave
// fewer is refused when it applies.
const metaVotersMin = 3

// membershipListener hears of committed membership and ownership
// changes, in commit order.
type membershipListener interface {
	// flipped: a partition's ownership flipped to its target; aborted:
	// its move was aborted.
	flipped(topic string, partition int)
	aborted(topic string, partition int)
	// memberAdded: the first heartbeat of a member was committed.
	memberAdded(id string)
	// drainingSet: a decommission (true) or its cancel (false) committed.
	drainingSet(id string, draining bool)
	// voterRemoved: a node left the Raft voters.
	voterRemoved(id string)
}

func (l *metaLog) heartbeat(c meta.MemberHeartbeat) {
	member, found := l.members[c.ID]
	if found && c.Incarnation < member.Incarnation {
		return // a late beat of an earlier start changes nothing
	}
	if !found {
		member = &meta.Member{ID: c.ID}
		l.members[c.ID] = member
	}
	member.HTTPAddr, member.ClusterAddr = c.HTTPAddr, c.ClusterAddr
	member.Alive = true
	switch {
	case c.Incarnation > member.Incarnation:
		member.Incarnation, member.LastHeartbeatMs = c.Incarnation, c.NowMs // a new start, on its own clock
	default:
		member.LastHeartbeatMs = max(member.LastHeartbeatMs, c.NowMs)
	}
	if !found && l.listener != nil {
		l.listener.memberAdded(c.ID)
	}
}

// markDead is MarkMemberDead, guarded by the heartbeat the proposer saw.
func (l *metaLog) markDead(c meta.MarkMemberDead) {
	member, found := l.members[c.ID]
	if !found || member.LastHeartbeatMs != c.ObservedHeartbeatMs {
		return
	}
	member.Alive = false
	l.w.tracef("meta: %s marked dead", c.ID)
}

func (l *metaLog) setDraining(c meta.SetDraining) {
	member, found := l.members[c.ID]
	if !found || (!c.Draining && l.removedNodeIDs[c.ID]) {
		return // a member that left the voters stays decommissioned
	}
	member.Draining = c.Draining
	l.w.tracef("meta: %s draining %t", c.ID, c.Draining)
	if l.listener != nil {
		l.listener.drainingSet(c.ID, c.Draining)
	}
}

// removeMember forgets a member that no partition refers to.
func (l *metaLog) removeMember(id string) {
	if _, found := l.members[id]; !found || l.placed(id) {
		return
	}
	delete(l.members, id)
}

// placed reports whether a partition is owned by or moving to id.
func (l *metaLog) placed(id string) bool {
	for _, assignments := range l.topics { //determinism:ok only answers whether the member is placed
		for _, a := range assignments {
			if a.Owner == id || a.Target == id {
				return true
			}
		}
	}
	return false
}

// applyConfChange applies a committed change of the Raft voters with
// meta's checks: an addition of a fresh raft id, a removal that leaves at
// least metaVotersMin voters of a member still draining and placed
// nowhere (nodes propose removals only for drained members, guarded by
// the drain); anything
// else applies as a no-op. It returns the node a removal took out of the
// voters, "" for none.
func (l *metaLog) applyConfChange(id entryID, data []byte) (removed string) {
	change := &raftpb.ConfChange{}
	if err := proto.Unmarshal(data, change); err != nil {
		l.w.fail("meta-view", "committed conf change %d of term %d does not decode: %v", id.index, id.term, err)
		return ""
	}
	raftID := change.GetNodeId()
	nodeID, voter := l.voters[raftID]
	switch change.GetType() {
	case raftpb.ConfChangeAddNode:
		if !voter && !l.removedRaftIDs[raftID] && raftID != 0 {
			l.addVoter(raftID)
		}
	case raftpb.ConfChangeRemoveNode:
		if member, found := l.members[nodeID]; voter && found && member.Draining && !l.placed(nodeID) && len(l.voters)-1 >= metaVotersMin {
			l.removeVoter(raftID)
			return nodeID
		}
	}
	return ""
}

func (l *metaLog) addVoter(raftID uint64) {
	for _, n := range l.w.nodes {
		if meta.RaftIDOf(n.id) == raftID {
			l.voters[raftID] = n.id
			delete(l.removedNodeIDs, n.id)
			l.w.tracef("meta: %s is a voter", n.id)
			return
		}
	}
	l.w.fail("meta-view", "raft id %d became a voter, but no node of the world has it", raftID)
}

func (l *metaLog) removeVoter(raftID uint64) {
	id := l.voters[raftID]
	delete(l.voters, raftID)
	l.removedRaftIDs[raftID] = true
	l.removedNodeIDs[id] = true
	l.w.tracef("meta: %s is no longer a voter", id)
	if l.listener != nil {
		l.listener.voterRemoved(id)
	}
}

// Retired reports whether id left the voters (its decommission is
// complete) and is not a voter again.
func (l *metaLog) Retired(id string) bool {
	return !l.isVoter(id) && (l.removedNodeIDs[id] || l.removedRaftIDs[meta.RaftIDOf(id)])
}

// isVoter reports whether a node is a committed voter.
func (l *metaLog) isVoter(id string) bool {
	_, voter := l.voters[meta.RaftIDOf(id)]
	return voter
}

// Topics returns the committed topics, sorted by name, with their
// assignments (the planner's view; only names and assignments are kept).
func (l *metaLog) Topics() []meta.TopicRecord {
	var records []meta.TopicRecord
	for _, name := range slices.Sorted(maps.Keys(l.topics)) {
		assignments := slices.Clone(l.topics[name])
		records = append(records, meta.TopicRecord{Name: name, Partitions: len(assignments), Assignments: assignments})
	}
	return records
}

// Members returns the committed members, sorted by id.
func (l *metaLog) Members() []meta.Member {
	members := make([]meta.Member, 0, len(l.members))
	for _, id := range slices.Sorted(maps.Keys(l.members)) {
		members = append(members, *l.members[id])
	}
	return members
}

var _ rebalance.StateReader = (*metaLog)(nil)

// member returns a committed member; false when there is none.
func (l *metaLog) member(id string) (meta.Member, bool) {
	member, found := l.members[id]
	if !found {
		return meta.Member{}, false
	}
	return *member, true
}
