package meta

// apply creates the topic with its assignments.
func (c CreateTopic) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if _, exists := s.topics[c.Name]; exists {
		return rejectf(ErrTopicExists, "topic %q", c.Name)
	}
	if err := s.checkNameCase(c.Name, c.NamesFolded); err != nil {
		return err
	}
	if err := s.checkCreator(c.CreatedBy, c.CreatorCreatedAtMs); err != nil {
		return err
	}
	if err := s.checkOwners(c.Owners); err != nil {
		return err
	}
	if err := s.checkVoting(c.Owners, c.OwnersVoting); err != nil {
		return err
	}
	if c.Limits.TopicsMax > 0 && len(s.topics) >= c.Limits.TopicsMax {
		return limitf(LimitTopics, "the cluster holds its limit of %d topics", c.Limits.TopicsMax)
	}
	if err := s.checkPartitionsPerNode(c.Owners, c.Limits.PartitionsPerNodeMax); err != nil {
		return err
	}
	if err := s.checkDeadLetterTopic(c.DeadLetterTopic); err != nil {
		return err
	}
	record := &TopicRecord{Name: c.Name, Partitions: len(c.Owners), RetentionMs: c.RetentionMs,
		VisibilityTimeoutMs: c.VisibilityTimeoutMs, MaxInFlightPerPartition: c.MaxInFlightPerPartition,
		MaxAckedAheadPerPartition: c.MaxAckedAheadPerPartition, CreatedAtMs: c.CreatedAtMs,
		CreatedBy: c.CreatedBy, Assignments: assignmentsOf(c.Owners),
		MaxDeliveries: c.MaxDeliveries, DeadLetterTopic: c.DeadLetterTopic}
	if c.Parent != "" {
		if _, found := s.topics[c.Parent]; found { // the owner first: a parent created again by another user breaks no rule of its own
			if err := s.checkOwnedBy(c.ExpectedOwner, c.Parent); err != nil {
				return err
			}
		}
		if err := c.checkParent(s, record); err != nil {
			return err
		}
	}
	if len(c.Schema) > 0 {
		if err := s.addSchema(record, c.Schema, schemaComparison{}); err != nil { // a first version: nothing compared
			return err
		}
	}
	if c.Numbered {
		s.topicSequence++
		record.Incarnation = s.topicSequence
		s.markCluster()
	}
	s.topics[c.Name] = record
	s.markTopic(c.Name)
	if c.Parent != "" {
		return s.attach(s.topics[c.Parent], record, c.FanoutDelayMs, c.CreatedAtMs)
	}
	return nil
}

// checkNameCase refuses, when the create asks for it (folded), a new
// topic name equal to an existing topic's ignoring case: their partition
// directories would be one on a case-insensitive file system
// (docs/api.md#conventions). Only a create is checked: two such topics
// an earlier release created keep working.
func (s *State) checkNameCase(name string, folded bool) error {
	if !folded {
		return nil
	}
	if existing := s.topicNamedIgnoringCase(name); existing != "" {
		return rejectf(ErrTopicExistsIgnoringCase, "topic %q exists, and %q differs from it only in case", existing, name)
	}
	return nil
}

// topicNamedIgnoringCase returns the least (by bytes) name of an existing
// topic other than name that equals it ignoring case; "" when none does.
func (s *State) topicNamedIgnoringCase(name string) string {
	found := ""
	for existing := range s.topics { //determinism:ok the least match is kept, whatever the order
		if existing != name && equalFoldASCII(existing, name) && (found == "" || existing < found) {
			found = existing
		}
	}
	return found
}

// equalFoldASCII reports whether a and b are equal once their ASCII
// letters are folded to lower case. A topic name is ASCII (the node's
// rule, docs/api.md#conventions), and unlike strings.EqualFold the answer
// does not depend on the Unicode tables of the Go release that built the
// binary, so replicas built by different releases decide alike.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// lowerASCII folds an ASCII upper-case letter to lower case and leaves
// every other byte as it is.
func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// checkParent checks the attach of the new topic to its parent, as if
// its schema (if any) were already its version 1.
func (c CreateTopic) checkParent(s *State, record *TopicRecord) error {
	provisional := *record
	if len(c.Schema) > 0 {
		provisional.Schemas = []SchemaVersion{{Version: 1, Document: c.Schema}}
	}
	return s.checkCreateChild(c, &provisional)
}

// apply deletes the topic.
func (c DeleteTopic) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	record, exists := s.topics[c.Name]
	if !exists {
		return rejectf(ErrTopicNotFound, "topic %q", c.Name)
	}
	if err := s.checkOwnedBy(c.ExpectedOwner, c.Name); err != nil {
		return err
	}
	if err := checkIdentity(record, c.Expected()); err != nil {
		return err
	}
	if len(record.Schemas) > 0 {
		s.schemaEpoch++
	}
	s.unlinkDeleted(record)
	delete(s.topics, c.Name)
	s.markTopic(c.Name)
	s.clearDeadLetterTopic(c.Name)
	return nil
}

// clearDeadLetterTopic turns dead letters off in every topic that names
// deleted as its dead-letter topic, in the entry that deletes it
// (docs/api.md#dead-letters).
func (s *State) clearDeadLetterTopic(deleted string) {
	for name, record := range s.topics { //determinism:ok each topic changes on its own
		if record.DeadLetterTopic == deleted {
			record.DeadLetterTopic, record.MaxDeliveries = "", 0
			s.markTopic(name)
		}
	}
}

// checkDeadLetterTopic checks that a dead-letter topic (empty: none)
// exists. A delay child, once topics have delays, is refused here too:
// its records are due to arrive from its parent only.
func (s *State) checkDeadLetterTopic(name string) error {
	if name == "" {
		return nil
	}
	target, exists := s.topics[name]
	if !exists {
		return rejectf(ErrDeadLetterTopicNotFound, "topic %q", name)
	}
	if target.FanoutDelayMs > 0 {
		return rejectf(ErrFanoutRole, "topic %q is a delay child: a dead letter would reach it before its delay", name)
	}
	return nil
}

// changeDeadLetters checks the dead-letter setting an alter leaves and
// returns it, changing nothing.
func (c AlterTopic) changeDeadLetters(s *State, record *TopicRecord) (int, string, error) {
	maxDeliveries, deadLetterTopic := record.MaxDeliveries, record.DeadLetterTopic
	setIf(&maxDeliveries, c.MaxDeliveries)
	setIf(&deadLetterTopic, c.DeadLetterTopic)
	if err := checkDeadLetters(c.Name, maxDeliveries, deadLetterTopic); err != nil {
		return 0, "", err
	}
	if c.DeadLetterTopic == nil {
		return maxDeliveries, deadLetterTopic, nil
	}
	if err := s.checkDeadLetterTopic(deadLetterTopic); err != nil {
		return 0, "", err
	}
	if c.DeadLetterLinksChecked {
		return maxDeliveries, deadLetterTopic, s.checkDeadLetterLinks(record, deadLetterTopic)
	}
	return maxDeliveries, deadLetterTopic, nil
}

// apply changes the fields that are set, checking all before changing any.
func (c AlterTopic) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	record, exists := s.topics[c.Name]
	if !exists {
		return rejectf(ErrTopicNotFound, "topic %q", c.Name)
	}
	if err := s.checkOwnedBy(c.ExpectedOwner, c.Name); err != nil {
		return err
	}
	if err := checkIdentity(record, c.Expected()); err != nil {
		return err
	}
	if err := c.checkGrowth(s, record); err != nil {
		return err
	}
	maxDeliveries, deadLetterTopic, err := c.changeDeadLetters(s, record)
	if err != nil {
		return err
	}
	if err := c.checkFanoutAlter(s, record); err != nil {
		return err
	}
	if err := c.changeSchema(s, record); err != nil {
		return err
	}
	record.MaxDeliveries, record.DeadLetterTopic = maxDeliveries, deadLetterTopic
	setIf(&record.RetentionMs, c.RetentionMs)
	setIf(&record.VisibilityTimeoutMs, c.VisibilityTimeoutMs)
	setIf(&record.MaxInFlightPerPartition, c.MaxInFlightPerPartition)
	setIf(&record.MaxAckedAheadPerPartition, c.MaxAckedAheadPerPartition)
	record.Assignments = append(record.Assignments, assignmentsOf(c.NewOwners)...)
	record.Partitions = len(record.Assignments)
	s.markTopic(c.Name)
	return nil
}

// checkGrowth checks a change of the partition count: it may only grow,
// and NewOwners places exactly the added partitions on members. The node
// checked both against its replica before proposing, so a count that
// fails them here was changed meanwhile (another growth applied first):
// ErrGuardFailed, which the client sees as a topic changed meanwhile
// (409, retry), not as a bad request.
func (c AlterTopic) checkGrowth(s *State, record *TopicRecord) error {
	if c.Partitions == nil {
		return nil
	}
	if *c.Partitions < record.Partitions {
		return rejectf(ErrGuardFailed, "topic %q has %d partitions; the count may not shrink to %d", c.Name, record.Partitions, *c.Partitions)
	}
	if added := *c.Partitions - record.Partitions; added != len(c.NewOwners) {
		return rejectf(ErrGuardFailed, "topic %q grows by %d partitions but %d new owners are given", c.Name, added, len(c.NewOwners))
	}
	if err := s.checkOwners(c.NewOwners); err != nil {
		return err
	}
	if err := s.checkVoting(c.NewOwners, c.OwnersVoting); err != nil {
		return err
	}
	return s.checkPartitionsPerNode(c.NewOwners, c.Limits.PartitionsPerNodeMax)
}

// PartitionsOwned counts the partitions each member owns, by member id
// (a member that owns none is absent). A new map, the caller's to change.
func (s *State) PartitionsOwned() map[string]int {
	owned := map[string]int{}
	for _, record := range s.topics { //determinism:ok counts only
		for _, a := range record.Assignments {
			owned[a.Owner]++
		}
	}
	return owned
}

// checkPartitionsPerNode rejects added owners that would take a member
// past perNodeMax partitions (0: no bound).
func (s *State) checkPartitionsPerNode(added []string, perNodeMax int) error {
	if perNodeMax <= 0 || len(added) == 0 {
		return nil
	}
	owned := s.PartitionsOwned()
	for _, owner := range added {
		owned[owner]++
		if owned[owner] > perNodeMax {
			return limitf(LimitPartitionsPerMember, "member %s would own more than its limit of %d partitions", owner, perNodeMax)
		}
	}
	return nil
}

// changeSchema adds the new schema version, if one is set, after checking
// the guard; none when the alter keeps the latest (keepsSchema). It is
// the last check of apply: it changes record only when it succeeds.
func (c AlterTopic) changeSchema(s *State, record *TopicRecord) error {
	if len(c.Schema) == 0 || c.keepsSchema(record) {
		return nil
	}
	latest, _ := record.LatestSchema()
	if latest.Version != c.SchemaAfterVersion {
		return rejectf(ErrGuardFailed, "topic %q: schema version %d was checked, but version %d is the latest",
			c.Name, c.SchemaAfterVersion, latest.Version)
	}
	rules := schemaComparison{tupleItems: c.TupleItemsCompared, prefixItems: c.PrefixItemsCompared}
	if err := s.addSchema(record, c.Schema, rules); err != nil {
		return err
	}
	s.addChildSchemas(record, c.Schema, rules)
	return nil
}

// keepsSchema reports whether the alter's schema is the topic's latest
// version already (SameSchema), under the rules of SameSchemaKept: it
// then adds no version, to the topic or to its children.
func (c AlterTopic) keepsSchema(record *TopicRecord) bool {
	if !c.SameSchemaKept || len(c.Schema) == 0 {
		return false
	}
	latest, found := record.LatestSchema()
	return found && SameSchema(latest.Document, c.Schema)
}

// setIf sets *field to *value when value is set.
func setIf[T any](field *T, value *T) {
	if value != nil {
		*field = *value
	}
}

// assignmentsOf places one stable partition on each owner, in order.
func assignmentsOf(owners []string) []Assignment {
	assignments := make([]Assignment, len(owners))
	for i, owner := range owners {
		assignments[i] = Assignment{Owner: owner}
	}
	return assignments
}

// checkOwners rejects new partitions placed on a member that is not
// alive or is draining, which the proposer (placing on the members it
// saw alive and not draining) could not have chosen had its replica been
// current: a node just restarted may propose a topic from a replica from
// before a member drained, retired and died, and nothing could ever
// move a partition off such a member (its copy would have no source).
func (s *State) checkOwners(ids []string) error {
	if err := s.checkMembers(ids); err != nil {
		return err
	}
	for _, id := range ids {
		if member := s.members[id]; !member.Receiving() {
			return rejectf(ErrMemberNotReceiving, "member %q (alive %t, draining %t)", id, member.Alive, member.Draining)
		}
	}
	return nil
}

// checkMembers rejects a placement on a node that is not a member.
func (s *State) checkMembers(ids []string) error {
	for _, id := range ids {
		if _, found := s.members[id]; !found {
			return rejectf(ErrMemberNotFound, "member %q", id)
		}
	}
	return nil
}

// checkIdentity refuses a change checked against another topic of the
// same name (expected, zero for no guard): one deleted and created again
// since the check.
func checkIdentity(record *TopicRecord, expected TopicIdentity) error {
	if expected == (TopicIdentity{}) || record.Identity() == expected {
		return nil
	}
	return rejectf(ErrGuardFailed, "topic %q was deleted and created again since the check (incarnation %d, not %d)",
		record.Name, record.Incarnation, expected.Incarnation)
}

// checkOwnedBy refuses a change guarded by the owner its caller was
// checked against (expected, "" for no guard) unless one of the named
// topics is still that user's: a topic that is gone, or was deleted and
// created again by another user since the check, is not. The caller
// checks that the topics exist where that matters.
func (s *State) checkOwnedBy(expected string, names ...string) error {
	if expected == "" {
		return nil
	}
	for _, name := range names {
		if record, found := s.topics[name]; found && record.CreatedBy == expected {
			return nil
		}
	}
	return rejectf(ErrOwnerChanged, "%q owns none of %q now", expected, names)
}
