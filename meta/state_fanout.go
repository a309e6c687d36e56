package meta

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Bounds of fan-out (docs/api.md#fan-out-children), checked on every
// replica when a command applies.
const (
	// FanoutChildrenMax bounds the children of one parent.
	FanoutChildrenMax = 108
	// FanoutDelayMsMax bounds a delay child's delay: one year.
	FanoutDelayMsMax = 365 * 24 * 3_600_000
	// FanoutRetentionMarginMs is how much longer than its longest delay a
	// parent keeps its records, so that a delayed record is still there
	// when it falls due.
	FanoutRetentionMarginMs = 3_600_000
)

// apply links the child to the parent with a new epoch.
func (c AttachChild) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	parent, child, err := s.linkedPair(c.Parent, c.Child)
	if err != nil {
		return err
	}
	if err := s.checkOwnedBy(c.ExpectedOwner, c.Parent); err != nil {
		return err
	}
	if err := s.checkOwnedBy(c.ExpectedOwner, c.Child); err != nil {
		return err
	}
	rules := attachRules{deadLetterLinks: c.DeadLetterLinksChecked, sameSchema: c.SameSchemaAttached}
	if err := s.checkAttach(parent, child, c.DelayMs, rules); err != nil {
		return err
	}
	return s.attach(parent, child, c.DelayMs, c.AttachedAtMs)
}

// linkedPair returns the records of both topics of a fan-out command.
func (s *State) linkedPair(parentName, childName string) (*TopicRecord, *TopicRecord, error) {
	parent, found := s.topics[parentName]
	if !found {
		return nil, nil, rejectf(ErrTopicNotFound, "topic %q", parentName)
	}
	child, found := s.topics[childName]
	if !found {
		return nil, nil, rejectf(ErrTopicNotFound, "topic %q", childName)
	}
	return parent, child, nil
}

// attachRules are the rules of an attach that depend on the release of
// its proposer: deadLetterLinks (DeadLetterLinksChecked) also refuses a
// link along which a topic would send its dead letters
// (checkDeadLetterLink); sameSchema (SameSchemaAttached) compares a
// child's schema with its parent's as SameSchema does, not byte for byte.
type attachRules struct {
	deadLetterLinks bool
	sameSchema      bool
}

// checkAttach checks every rule of an attach; it changes nothing.
func (s *State) checkAttach(parent, child *TopicRecord, delayMs int64, rules attachRules) error {
	switch {
	case parent.Name == child.Name:
		return rejectf(ErrFanoutRole, "topic %q cannot be its own child", parent.Name)
	case child.Parent == parent.Name:
		return rejectf(ErrFanoutRole, "topic %q is already a child of %q", child.Name, parent.Name)
	case parent.Parent != "":
		return rejectf(ErrFanoutRole, "topic %q is a child of %q and cannot have children (depth 1)", parent.Name, parent.Parent)
	case len(child.Children) > 0:
		return rejectf(ErrFanoutRole, "topic %q is a parent and cannot become a child (depth 1)", child.Name)
	case child.Parent != "":
		return rejectf(ErrFanoutRole, "topic %q is already a child of %q (one parent)", child.Name, child.Parent)
	case len(parent.Children) >= FanoutChildrenMax:
		return limitf(LimitChildren, "topic %q has its limit of %d children", parent.Name, FanoutChildrenMax)
	}
	if err := checkDelayCovered(parent.Name, parent.RetentionMs, delayMs); err != nil {
		return err
	}
	if source := s.deadLetterSourceOf(child.Name); delayMs > 0 && source != "" {
		return rejectf(ErrFanoutRole, "topic %q is the dead-letter topic of %q: a dead letter would reach it before its delay", child.Name, source)
	}
	if rules.deadLetterLinks {
		if err := checkDeadLetterLink(parent, child); err != nil {
			return err
		}
	}
	return s.checkChildSchema(parent, child, rules.sameSchema)
}

// checkDeadLetterLink refuses a fan-out link along which one of its two
// topics sends its dead letters (docs/api.md#dead-letters).
func checkDeadLetterLink(parent, child *TopicRecord) error {
	switch {
	case child.DeadLetterTopic == parent.Name:
		return deadLettersToParent(child.Name, parent.Name)
	case parent.DeadLetterTopic == child.Name:
		return deadLettersToChild(parent.Name, child.Name)
	}
	return nil
}

// checkDeadLetterLinks checks a dead-letter topic (setting) an alter
// gives to record against record's fan-out links: it may be neither
// record's parent nor one of its children. Only the setting is checked:
// a parent's own setting, left as it is, is not this change's.
func (s *State) checkDeadLetterLinks(record *TopicRecord, setting string) error {
	if record.Parent != "" && setting == record.Parent {
		return deadLettersToParent(record.Name, setting)
	}
	if target, found := s.topics[setting]; found && target.Parent == record.Name {
		return deadLettersToChild(record.Name, setting)
	}
	return nil
}

// deadLettersToParent is the refusal of a child whose dead letters go to
// its own parent: the parent would copy each back to it, and to every
// sibling, without end.
func deadLettersToParent(child, parent string) error {
	return rejectf(ErrFanoutRole, "topic %q cannot send its dead letters to its fan-out parent %q: "+
		"the parent would copy each back to it and to every sibling, without end", child, parent)
}

// deadLettersToChild is the refusal of a parent whose dead letters go to
// one of its children: the child would get each twice, once through the
// fan-out and once as a dead letter.
func deadLettersToChild(parent, child string) error {
	return rejectf(ErrFanoutRole, "topic %q cannot send its dead letters to its fan-out child %q: "+
		"the child would get each twice, through the fan-out and as a dead letter", parent, child)
}

// deadLetterSourceOf names the first topic (by name) whose dead-letter
// topic is name; "" when none is.
func (s *State) deadLetterSourceOf(name string) string {
	for _, topic := range s.TopicNames() {
		if s.topics[topic].DeadLetterTopic == name {
			return topic
		}
	}
	return ""
}

// checkDelayCovered checks that a parent keeping records retentionMs (0:
// forever) still holds a record when a delay of delayMs makes it due.
func checkDelayCovered(parentName string, retentionMs, delayMs int64) error {
	if retentionMs == 0 || delayMs == 0 || delayMs <= retentionMs-FanoutRetentionMarginMs {
		return nil
	}
	return rejectf(ErrFanoutDelay, "topic %q keeps records %d ms; a delay of %d ms needs at least %d ms",
		parentName, retentionMs, delayMs, delayMs+FanoutRetentionMarginMs)
}

// checkChildSchema checks that the child has no schema or the parent's
// latest (the same schema with sameSchema, else byte for byte), and that
// adopting the parent's versions fits the bound on schema bytes. A child
// that keeps its own schema takes the parent's later versions, each
// checked against the child's latest as against the parent's: the same
// schema decodes to the same value, which that check compares.
func (s *State) checkChildSchema(parent, child *TopicRecord, sameSchema bool) error {
	childLatest, childHas := child.LatestSchema()
	parentLatest, parentHas := parent.LatestSchema()
	same := bytes.Equal
	if sameSchema {
		same = SameSchema
	}
	if childHas && (!parentHas || !same(childLatest.Document, parentLatest.Document)) {
		return rejectf(ErrFanoutSchema, "topic %q has a schema other than its parent %q's; a child's schema must be absent or identical", child.Name, parent.Name)
	}
	if childHas {
		return nil
	}
	if total := s.schemaBytes() + schemaBytesOf(parent.Schemas); total > SchemaBytesTotalMax {
		return rejectf(ErrSchemaSpace, "the schemas of all topics would hold %d bytes, at most %d", total, SchemaBytesTotalMax)
	}
	return nil
}

// schemaBytesOf is the size of the documents of versions.
func schemaBytesOf(versions []SchemaVersion) int {
	total := 0
	for _, version := range versions {
		total += len(version.Document)
	}
	return total
}

// attach links a checked pair: a child without a schema adopts its
// parent's versions.
func (s *State) attach(parent, child *TopicRecord, delayMs, attachedAtMs int64) error {
	s.fanoutSequence++
	s.markCluster()
	epoch := attachEpochOf(s.fanoutSequence)
	if len(child.Schemas) == 0 && len(parent.Schemas) > 0 {
		child.Schemas = slices.Clone(parent.Schemas)
		s.schemaEpoch++
	}
	child.Parent, child.AttachEpoch, child.FanoutDelayMs = parent.Name, epoch, delayMs
	link := ChildLink{Name: child.Name, Epoch: epoch, DelayMs: delayMs, AttachedAtMs: attachedAtMs}
	parent.Children = append(slices.Clone(parent.Children), link)
	slices.SortFunc(parent.Children, func(a, b ChildLink) int { return strings.Compare(a.Name, b.Name) })
	s.markTopic(parent.Name)
	s.markTopic(child.Name)
	return nil
}

// attachEpochOf spreads an attach sequence number over 64 bits (the
// finalizer of splitmix64, a bijection that maps only 0 to 0), so that
// epochs look unrelated while never repeating.
func attachEpochOf(sequence uint64) uint64 {
	z := sequence
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// apply removes the link; both topics stay.
func (c DetachChild) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	parent, found := s.topics[c.Parent]
	if !found {
		return rejectf(ErrTopicNotFound, "topic %q", c.Parent)
	}
	child, found := s.topics[c.Child]
	if !found || child.Parent != c.Parent {
		return rejectf(ErrNotAttached, "topic %q is not a child of %q", c.Child, c.Parent)
	}
	if err := s.checkOwnedBy(c.ExpectedOwner, c.Parent, c.Child); err != nil {
		return err
	}
	s.unlink(parent, child)
	return nil
}

// unlink removes the link between a parent and one of its children; the
// child keeps the schema versions it adopted.
func (s *State) unlink(parent, child *TopicRecord) {
	parent.Children = slices.DeleteFunc(slices.Clone(parent.Children), func(l ChildLink) bool { return l.Name == child.Name })
	child.Parent, child.AttachEpoch, child.FanoutDelayMs = "", 0, 0
	s.markTopic(parent.Name)
	s.markTopic(child.Name)
}

// unlinkDeleted dissolves the links of a topic being deleted: a deleted
// parent leaves its children standalone, a deleted child leaves its
// parent's list.
func (s *State) unlinkDeleted(record *TopicRecord) {
	for _, link := range record.Children {
		if child, found := s.topics[link.Name]; found {
			s.unlink(record, child)
		}
	}
	if parent, found := s.topics[record.Parent]; found && record.Parent != "" {
		s.unlink(parent, record)
	}
}

// checkCreateChild checks the attach of a topic about to be created with
// a parent; record is the new topic, not yet in the state.
func (s *State) checkCreateChild(c CreateTopic, record *TopicRecord) error {
	parent, found := s.topics[c.Parent]
	if !found {
		return rejectf(ErrTopicNotFound, "topic %q", c.Parent)
	}
	return s.checkAttach(parent, record, c.FanoutDelayMs, attachRules{deadLetterLinks: c.DeadLetterLinksChecked, sameSchema: c.SameSchemaAttached})
}

// checkFanoutAlter checks what an alter may not do to a fan-out topic:
// take a parent's retention below a delay's cover, or change a child's
// schema (its parent manages it).
func (c AlterTopic) checkFanoutAlter(s *State, record *TopicRecord) error {
	if len(c.Schema) > 0 && record.Parent != "" {
		return rejectf(ErrFanoutSchema, "topic %q is a child of %q, which manages its schema", record.Name, record.Parent)
	}
	if c.RetentionMs != nil {
		for _, link := range record.Children {
			if err := checkDelayCovered(record.Name, *c.RetentionMs, link.DelayMs); err != nil {
				return err
			}
		}
	}
	if len(c.Schema) > 0 && len(record.Children) > 0 && !c.keepsSchema(record) {
		added := len(c.Schema) * (1 + len(record.Children))
		if total := s.schemaBytes() + added; total > SchemaBytesTotalMax {
			return rejectf(ErrSchemaSpace, "the schemas of all topics would hold %d bytes, at most %d", total, SchemaBytesTotalMax)
		}
	}
	return nil
}

// addChildSchemas gives each child of a parent the schema version just
// added to the parent. Each child's latest equals the parent's previous
// latest, so the evolution the parent passed passes here too.
func (s *State) addChildSchemas(parent *TopicRecord, document []byte, rules schemaComparison) {
	for _, link := range parent.Children {
		child := s.topics[link.Name]
		err := s.addSchema(child, document, rules)
		assert(err == nil, "topic %q: the schema its parent %q took was refused: %v", link.Name, parent.Name, err)
		s.markTopic(link.Name)
	}
}

// checkFanoutLinks checks that the two sides of every fan-out link agree
// (a loaded image must satisfy it).
func (s *State) checkFanoutLinks() error {
	for _, name := range s.TopicNames() {
		record := s.topics[name]
		if err := s.checkParentSide(record); err != nil {
			return err
		}
		if record.Parent == "" && (record.AttachEpoch != 0 || record.FanoutDelayMs != 0) {
			return fmt.Errorf("topic %q has an attach epoch or delay without a parent", name)
		}
		if record.Parent == "" {
			continue
		}
		parent, found := s.topics[record.Parent]
		want := ChildLink{Name: name, Epoch: record.AttachEpoch, DelayMs: record.FanoutDelayMs}
		if !found || record.AttachEpoch == 0 || !slices.ContainsFunc(parent.Children, want.sameLink) {
			return fmt.Errorf("topic %q names parent %q, which does not list it with epoch %d", name, record.Parent, record.AttachEpoch)
		}
	}
	return nil
}

// checkParentSide checks a parent's list of children.
func (s *State) checkParentSide(record *TopicRecord) error {
	if len(record.Children) > 0 && record.Parent != "" {
		return fmt.Errorf("topic %q has both a parent and children", record.Name)
	}
	if len(record.Children) > FanoutChildrenMax {
		return fmt.Errorf("topic %q has %d children, at most %d", record.Name, len(record.Children), FanoutChildrenMax)
	}
	for i, link := range record.Children {
		if i > 0 && record.Children[i-1].Name >= link.Name {
			return fmt.Errorf("topic %q lists its children out of order", record.Name)
		}
		child, found := s.topics[link.Name]
		if !found || child.Parent != record.Name {
			return fmt.Errorf("topic %q lists child %q, which does not name it as parent", record.Name, link.Name)
		}
	}
	return nil
}

// sameLink reports whether two links name the same child, epoch and
// delay.
func (l ChildLink) sameLink(other ChildLink) bool {
	return l.Name == other.Name && l.Epoch == other.Epoch && l.DelayMs == other.DelayMs
}
