package meta

import (
	"fmt"
	"maps"
	"slices"
)

// stateFromImage builds a state from an image and checks its invariants.
func stateFromImage(image stateImage) (*State, error) {
	s := newState()
	for i := range image.Topics {
		s.topics[image.Topics[i].Name] = &image.Topics[i]
	}
	for i := range image.Members {
		s.members[image.Members[i].ID] = &image.Members[i]
	}
	for i := range image.Users {
		s.users[image.Users[i].Username] = &image.Users[i]
	}
	s.setClusterRecord(image.Cluster)
	if err := s.checkImage(image); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedSnapshot, err)
	}
	return s, nil
}

// setClusterRecord loads the cluster record into the state.
func (s *State) setClusterRecord(record clusterRecord) {
	s.confState = record.ConfState.clone()
	for _, peer := range record.Peers {
		s.peers[peer.RaftID] = peer
	}
	for _, raftID := range record.RemovedRaftIDs {
		s.removedRaftIDs[raftID] = true
	}
	for _, id := range record.RemovedNodeIDs {
		s.removedNodeIDs[id] = true
	}
	s.usersVersion = record.UsersVersion
	s.schemaSequence = record.SchemaSequence
	s.topicSequence = record.TopicSequence
	s.fanoutSequence = record.FanoutSequence
}

// checkImage checks what a decoded image must satisfy: no duplicate
// keys, and the invariants of State.
func (s *State) checkImage(image stateImage) error {
	if len(s.topics) != len(image.Topics) || len(s.members) != len(image.Members) ||
		len(s.users) != len(image.Users) || len(s.peers) != len(image.Cluster.Peers) {
		return fmt.Errorf("duplicate topic, member, user or peer")
	}
	for _, record := range image.Topics {
		if err := record.check(); err != nil {
			return err
		}
		if record.DeadLetterTopic != "" && s.topics[record.DeadLetterTopic] == nil {
			return fmt.Errorf("topic %q names dead-letter topic %q, which does not exist", record.Name, record.DeadLetterTopic)
		}
		if record.Incarnation > s.topicSequence {
			return fmt.Errorf("topic %q has incarnation %d past the sequence %d", record.Name, record.Incarnation, s.topicSequence)
		}
		if latest, found := record.LatestSchema(); found && latest.ID > s.schemaSequence {
			return fmt.Errorf("topic %q has schema id %d past the sequence %d", record.Name, latest.ID, s.schemaSequence)
		}
	}
	if err := s.checkFanoutLinks(); err != nil {
		return err
	}
	if !slices.Equal(slices.Sorted(maps.Keys(s.peers)), s.confState.Voters) {
		return fmt.Errorf("peers %v are not the voters %v", s.Peers(), s.confState.Voters)
	}
	if roots := countRoots(image.Users); roots > 1 {
		return fmt.Errorf("%d root users", roots)
	}
	return nil
}

// check checks the invariants of one topic record.
func (t TopicRecord) check() error {
	if t.Name == "" || t.Partitions != len(t.Assignments) || t.Partitions < 1 {
		return fmt.Errorf("topic %q: %d partitions, %d assignments", t.Name, t.Partitions, len(t.Assignments))
	}
	for partition, a := range t.Assignments {
		if a.Owner == "" || a.Owner == a.Target {
			return fmt.Errorf("topic %q partition %d: owner %q, target %q", t.Name, partition, a.Owner, a.Target)
		}
	}
	if err := checkDeadLetters(t.Name, t.MaxDeliveries, t.DeadLetterTopic); err != nil {
		return err
	}
	return t.checkSchemas()
}

// countRoots counts the root users.
func countRoots(users []User) int {
	roots := 0
	for _, user := range users {
		if user.Root {
			roots++
		}
	}
	return roots
}

// replaceWith makes s hold other's contents (installing a snapshot), so
// that the pointer returned by Meta.State stays valid.
func (s *State) replaceWith(other *State) {
	dirty, epoch, version := s.dirty, s.schemaEpoch, s.topicsVersion
	*s = *other
	s.dirty = dirty
	clear(s.dirty)
	s.schemaEpoch = epoch + 1 // the installed topics may have other schemas
	s.topicsVersion = version + 1
	s.moves, s.movesKnown = nil, false
}
