package meta

import (
	"fmt"
	"slices"
)

// ConfChangeKind is what a configuration change does.
type ConfChangeKind uint8

const (
	// AddVoter adds Peer as a voter (a node joining).
	AddVoter ConfChangeKind = 1
	// RemoveVoter removes the voter with Peer.ID (decommission).
	RemoveVoter ConfChangeKind = 2
)

func (k ConfChangeKind) String() string {
	switch k {
	case AddVoter:
		return "add-voter"
	case RemoveVoter:
		return "remove-voter"
	}
	return fmt.Sprintf("conf-change-kind(%d)", uint8(k))
}

// ConfChange adds or removes one voter.
type ConfChange struct {
	Kind ConfChangeKind `json:"kind"`
	// Peer is the voter to add (all fields), or to remove (ID, or the
	// whole entry as listed by State.Peers).
	Peer Peer `json:"peer"`
	// ExpectDraining guards a removal: it applies only while the member
	// is still draining (a decommission's removal, proposed once the
	// member drained, is refused if the drain was cancelled meanwhile).
	ExpectDraining bool `json:"expect_draining,omitempty"`
	// RecordNodeID makes a removal record the member's node id as one
	// that left the voters (State.leftVoters), whatever its raft id, and
	// an addition clear it (a new node under the id). Entries proposed
	// without it leave the node ids as they are; since a replica applies
	// an entry alike whichever release it runs, the intent travels in the
	// entry, never in the applying code.
	RecordNodeID bool `json:"record_node_id,omitempty"`
}

// checkConfChange decides, from the state alone, whether a configuration
// change is accepted. Every replica decides the same; a rejected change is
// applied to raft as a no-op.
func (s *State) checkConfChange(change ConfChange) error {
	switch change.Kind {
	case AddVoter:
		return s.checkAddVoter(change.Peer)
	case RemoveVoter:
		if err := s.checkRemovalGuard(change); err != nil {
			return err
		}
		return s.checkRemoveVoter(change.Peer)
	}
	return rejectf(ErrUnknownConfChange, "%v", change.Kind)
}

// checkAddVoter accepts a new voter with fresh ids.
func (s *State) checkAddVoter(peer Peer) error {
	if err := peer.validate(); err != nil {
		return rejectf(ErrInvalidCommand, "%v", err)
	}
	if s.removedRaftIDs[peer.RaftID] {
		return rejectf(ErrRaftIDReused, "raft id %d", peer.RaftID)
	}
	if _, voter := s.peers[peer.RaftID]; voter {
		return rejectf(ErrPeerExists, "raft id %d", peer.RaftID)
	}
	if _, voter := s.PeerByNodeID(peer.ID); voter {
		return rejectf(ErrPeerExists, "node %q", peer.ID)
	}
	return nil
}

// checkRemoveVoter accepts removing a voter that leaves at least
// minVoters.
func (s *State) checkRemoveVoter(peer Peer) error {
	if _, voter := s.peers[peer.RaftID]; !voter {
		return rejectf(ErrPeerNotFound, "raft id %d (node %q)", peer.RaftID, peer.ID)
	}
	if len(s.confState.Voters)-1 < minVoters {
		return rejectf(ErrTooFewVoters, "%d voters, at least %d must stay", len(s.confState.Voters), minVoters)
	}
	return nil
}

// checkRemovalGuard refuses a guarded removal (ExpectDraining) of a voter
// whose member is no longer draining (the cancel of its decommission
// applied between the removal's proposal and its apply), and one that
// would leave fewer live voters than the new configuration's quorum: with
// two of five voters dead, removing a live third leaves four that need
// three votes and have two, and the metastore could never commit again.
// The drained node then stays a voter until enough voters are alive.
func (s *State) checkRemovalGuard(change ConfChange) error {
	if !change.ExpectDraining {
		return nil
	}
	if member, found := s.members[change.Peer.ID]; !found || !member.Draining {
		return rejectf(ErrGuardFailed, "member %q is not draining: its decommission was cancelled", change.Peer.ID)
	}
	if s.memberPlaced(change.Peer.ID) {
		// The leader saw it hold nothing; a move to it planned before its
		// drain applied since.
		return rejectf(ErrGuardFailed, "member %q still owns or is the target of a partition", change.Peer.ID)
	}
	remaining, alive := 0, 0
	for _, peer := range s.peers { //determinism:ok only counts
		if peer.ID == change.Peer.ID {
			continue
		}
		remaining++
		if member, found := s.members[peer.ID]; found && member.Alive {
			alive++
		}
	}
	if quorum := remaining/2 + 1; alive < quorum {
		return rejectf(ErrQuorumAtRisk, "removing %q leaves %d voters, %d of them alive, fewer than the quorum of %d",
			change.Peer.ID, remaining, alive, quorum)
	}
	return nil
}

// applyConfChange records an accepted change and the configuration raft
// returned for it.
func (s *State) applyConfChange(change ConfChange, confState ConfState) {
	switch change.Kind {
	case AddVoter:
		s.peers[change.Peer.RaftID] = change.Peer
		if change.RecordNodeID { // a new node under the id (a new raft id): a voter whose drain may be cancelled
			delete(s.removedNodeIDs, change.Peer.ID)
		}
	case RemoveVoter:
		if peer, voter := s.peers[change.Peer.RaftID]; voter && change.RecordNodeID {
			s.removedNodeIDs[peer.ID] = true
		}
		delete(s.peers, change.Peer.RaftID)
		s.removedRaftIDs[change.Peer.RaftID] = true
	}
	s.setConfState(confState)
}

// setConfState records the configuration raft returned.
func (s *State) setConfState(confState ConfState) {
	s.confState = confState.clone()
	slices.Sort(s.confState.Voters)
	slices.Sort(s.confState.Learners)
	s.markCluster()
}
