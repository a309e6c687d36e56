package meta

import "narad/chaos"

// apply starts a move of a stable partition owned by ExpectedOwner; the
// move's start is the proposer's clock, or one past the partition's latest
// move when that is later, so that no two moves share a start.
func (c SetTarget) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	a, err := s.assignment(c.Topic, c.Partition)
	if err != nil {
		return err
	}
	if a.Target != "" {
		return rejectf(ErrGuardFailed, "%s/%d is already moving from %q to %q", c.Topic, c.Partition, a.Owner, a.Target)
	}
	if a.Owner != c.ExpectedOwner {
		return rejectf(ErrGuardFailed, "%s/%d is owned by %q, proposer saw %q", c.Topic, c.Partition, a.Owner, c.ExpectedOwner)
	}
	if err := s.checkTarget(c.Target); err != nil {
		return err
	}
	if c.MovesMax > 0 && s.movesReach(c.MovesMax) {
		return rejectf(ErrGuardFailed, "%d moves in flight already, the planner's bound", c.MovesMax)
	}
	start := max(c.NowMs, a.LastMoveStartedAtMs+1)
	a.Target, a.MoveStartedAtMs, a.LastMoveStartedAtMs = c.Target, start, start
	s.markTopic(c.Topic)
	return nil
}

// movesReach reports whether at least bound partitions have a target. It
// counts in place and stops at the bound: Moves would copy and sort every
// move at each SetTarget, which changes the topics it caches them by.
func (s *State) movesReach(bound int) bool {
	count := 0
	for _, record := range s.topics { //determinism:ok a count
		for _, a := range record.Assignments {
			if a.Target != "" {
				if count++; count >= bound {
					return true
				}
			}
		}
	}
	return false
}

// checkTarget refuses a move to a member that could not take it: not a
// member, dead, draining, or out of the voters (its decommission
// complete). The planner chose the target on its replica; one planned
// before a drain and applied after it would move a partition onto a
// node on its way out, which no longer follows the metastore once it
// left the voters.
func (s *State) checkTarget(target string) error {
	if err := s.checkOwners([]string{target}); err != nil {
		return err
	}
	return s.checkVoting([]string{target}, true)
}

// checkVoting, when asked to, refuses a placement on a member that left
// the voters (its decommission complete): it no longer follows the
// metastore.
func (s *State) checkVoting(ids []string, asked bool) error {
	if !asked {
		return nil
	}
	for _, id := range ids {
		if s.leftVoters(id) {
			return rejectf(ErrMemberNotReceiving, "member %q left the voters", id)
		}
	}
	return nil
}

// apply flips ownership to the target (compare-and-swap).
func (c CompleteMove) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return s.flipOwner(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget, c.ExpectedStartedAtMs,
		c.Expected())
}

// apply flips ownership to the target (compare-and-swap), like
// CompleteMove.
func (c ForcePromote) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return s.flipOwner(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget, c.ExpectedStartedAtMs,
		c.Expected())
}

// apply clears the target if it is still the expected one.
func (c AbortMove) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	a, err := s.movingAssignment(c.Topic, c.Partition, c.Expected())
	if err != nil {
		return err
	}
	if a.Target != c.ExpectedTarget {
		return rejectf(ErrGuardFailed, "%s/%d targets %q, proposer expected %q", c.Topic, c.Partition, a.Target, c.ExpectedTarget)
	}
	if c.ExpectedStartedAtMs != 0 && a.MoveStartedAtMs != c.ExpectedStartedAtMs {
		return rejectf(ErrGuardFailed, "%s/%d: the move to %q that started at %d was replaced by one that started at %d",
			c.Topic, c.Partition, c.ExpectedTarget, c.ExpectedStartedAtMs, a.MoveStartedAtMs)
	}
	a.Target, a.MoveStartedAtMs = "", 0
	s.markTopic(c.Topic)
	return nil
}

// flipOwner is the guarded Owner := Target; Target := "" of
// docs/architecture.md#moves.
func (s *State) flipOwner(topic string, partition int, expectedOwner, expectedTarget string, expectedStartedAtMs int64, identity TopicIdentity) error {
	a, err := s.movingAssignment(topic, partition, identity)
	if err != nil {
		return err
	}
	if a.Owner != expectedOwner || a.Target != expectedTarget {
		return rejectf(ErrGuardFailed, "%s/%d is %q -> %q, proposer expected %q -> %q",
			topic, partition, a.Owner, a.Target, expectedOwner, expectedTarget)
	}
	if expectedStartedAtMs != 0 && a.MoveStartedAtMs != expectedStartedAtMs && !chaos.Planted(chaos.BugFlipOfReplacedMove) {
		return rejectf(ErrGuardFailed, "%s/%d: the move %q -> %q that started at %d was replaced by one that started at %d",
			topic, partition, expectedOwner, expectedTarget, expectedStartedAtMs, a.MoveStartedAtMs)
	}
	assert(a.Target != "", "%s/%d: a flip to an empty target passed the guard", topic, partition)
	a.Owner, a.Target, a.MoveStartedAtMs = a.Target, "", 0
	s.markTopic(topic)
	return nil
}

// movingAssignment is assignment for the end of a move of the topic's
// creation named by identity (zero: no guard): another creation of the
// name is refused (checkIdentity).
func (s *State) movingAssignment(topic string, partition int, identity TopicIdentity) (*Assignment, error) {
	a, err := s.assignment(topic, partition)
	if err != nil {
		return nil, err
	}
	if err := checkIdentity(s.topics[topic], identity); err != nil {
		return nil, err
	}
	return a, nil
}

// assignment returns a pointer to the live assignment of a partition.
func (s *State) assignment(topic string, partition int) (*Assignment, error) {
	record, found := s.topics[topic]
	if !found {
		return nil, rejectf(ErrTopicNotFound, "topic %q", topic)
	}
	if partition < 0 || partition >= len(record.Assignments) {
		return nil, rejectf(ErrPartitionNotFound, "topic %q has %d partitions, not %d", topic, len(record.Assignments), partition)
	}
	return &record.Assignments[partition], nil
}
