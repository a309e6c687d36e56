package meta

// apply creates or refreshes the member and marks it alive. A beat that
// brings no news changes nothing: one of an earlier start, or one of the
// same start no later than the last recorded (a beat proposed late or
// twice), which applied after MarkMemberDead would revive a member the
// leader, seeing the same last heartbeat, would never mark dead again.
func (c MemberHeartbeat) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	member, found := s.members[c.ID]
	switch {
	case !found:
		member = &Member{ID: c.ID}
		s.members[c.ID] = member
	case member.DataID != "" && c.DataID != "" && c.DataID != member.DataID:
		return nil // the same node id on another data directory: not this member
	case c.Incarnation < member.Incarnation:
		return nil // a late beat of an earlier start
	case c.Incarnation == member.Incarnation && c.NowMs <= member.LastHeartbeatMs:
		return nil // no later than the last beat: a late or repeated one
	}
	member.HTTPAddr, member.ClusterAddr = c.HTTPAddr, c.ClusterAddr
	member.Alive, member.DiskLow = true, c.DiskLow
	if member.DataID == "" {
		member.DataID = c.DataID
	}
	if c.Incarnation > member.Incarnation {
		member.Incarnation, member.LastHeartbeatMs = c.Incarnation, c.NowMs
	} else {
		member.LastHeartbeatMs = max(member.LastHeartbeatMs, c.NowMs)
	}
	s.markMember(c.ID)
	return nil
}

// apply applies every beat, or none when one is invalid.
func (c MemberHeartbeats) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	for _, beat := range c.Beats {
		if err := beat.apply(s); err != nil { // guarded: the arguments would allocate on every call
			assert(false, "a validated heartbeat was rejected: %v", err)
		}
	}
	return nil
}

// apply marks the member dead if its last heartbeat is the one the
// proposer saw.
func (c MarkMemberDead) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	member, found := s.members[c.ID]
	if !found {
		return rejectf(ErrMemberNotFound, "member %q", c.ID)
	}
	if member.LastHeartbeatMs != c.ObservedHeartbeatMs {
		return rejectf(ErrGuardFailed, "member %q heartbeat at %d ms, proposer saw %d ms",
			c.ID, member.LastHeartbeatMs, c.ObservedHeartbeatMs)
	}
	if c.ObservedIncarnation != 0 && member.Incarnation != c.ObservedIncarnation {
		return rejectf(ErrGuardFailed, "member %q started again (incarnation %d), proposer saw incarnation %d",
			c.ID, member.Incarnation, c.ObservedIncarnation)
	}
	member.Alive = false
	s.markMember(c.ID)
	return nil
}

// apply sets or clears the draining flag.
func (c SetDraining) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	member, found := s.members[c.ID]
	if !found {
		return rejectf(ErrMemberNotFound, "member %q", c.ID)
	}
	if !c.Draining && s.leftVoters(c.ID) {
		return rejectf(ErrMemberLeftVoters, "member %q: its decommission is complete", c.ID)
	}
	member.Draining = c.Draining
	s.markMember(c.ID)
	return nil
}

// leftVoters reports whether the node was removed from the voters: its
// decommission is complete. Removals proposed before they recorded node
// ids left only raft ids, so a removed raft id derived from the node id
// (RaftIDOf, as a cluster bootstrapped from a peer list assigns them)
// counts too.
func (s *State) leftVoters(id string) bool {
	return s.removedNodeIDs[id] || s.removedRaftIDs[RaftIDOf(id)]
}

// Retired reports whether the member's decommission is complete: it left
// the voters (leftVoters) and no voter holds its id again (a new node
// that joined under the id). A retired member's heartbeats are no longer
// recorded, and the leader forgets it once it is dead and placed nowhere
// (node: forgetRetiredMembers).
func (s *State) Retired(id string) bool {
	if !s.leftVoters(id) { // two map lookups: the common answer, asked of every peer message and request
		return false
	}
	_, voter := s.PeerByNodeID(id)
	return !voter
}

// apply forgets the member if no partition refers to it.
func (c RemoveMember) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if _, found := s.members[c.ID]; !found {
		return rejectf(ErrMemberNotFound, "member %q", c.ID)
	}
	if s.memberPlaced(c.ID) {
		return rejectf(ErrMemberInUse, "member %q", c.ID)
	}
	delete(s.members, c.ID)
	s.markMember(c.ID)
	return nil
}

// MemberPlaced reports whether any partition is owned by or moving to
// id, reading the topics in place (no copy).
func (s *State) MemberPlaced(id string) bool { return s.memberPlaced(id) }

// memberPlaced reports whether any partition is owned by or moving to id.
func (s *State) memberPlaced(id string) bool {
	for _, record := range s.topics { //determinism:ok the loop only answers yes or no
		for _, a := range record.Assignments {
			if a.Owner == id || a.Target == id {
				return true
			}
		}
	}
	return false
}
