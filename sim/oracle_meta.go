package sim

import (
	"fmt"
	"strings"

	"narad/meta"
)

// metaModel is a deliberately naive model of the metastore's state
// machine: the topics with their placement, and the members. It is
// written from the rules of the placement (every partition has one
// owner; a move sets a target on a stable partition; the flip is a
// compare-and-swap of owner, target and start time; an abort clears a
// target only if it is still the expected one) and from the documented
// meaning of each command, with plain maps and no code of meta's state
// machine: only meta's command types are read, as a client of the log
// would read them. The users, the voters and the topics' settings other
// than their placement are not modelled.
type metaModel struct {
	// topics holds every topic by name; a topic exists from its create
	// until its delete.
	topics map[string]*modelTopic
	// members holds every member by id, from its first heartbeat until a
	// RemoveMember that found it placed nowhere.
	members map[string]*modelMember
	// left holds the members that left the voters: their decommission
	// is complete and can no longer be cancelled.
	left map[string]bool
	// creations counts the numbered topic creations applied: the last
	// one's count is its topic's incarnation.
	creations uint64
}

// modelTopic is a topic's placement. Invariant: partitions only grows,
// and every owner is non-empty.
type modelTopic struct {
	partitions []modelPlacement
	// unmodelled is set for a topic with a schema: the schema rules are
	// not modelled, so the topic is left out of the comparison.
	unmodelled bool
	// owner is the user that created the topic, for the owner guard of
	// topic changes. Users are not modelled, so a user's deletion does
	// not clear it as meta does; the simulator's clients run without
	// security, so no topic has an owner and no change carries a guard.
	owner string
	// incarnation and createdAtMs tell the topic from the others of its
	// name, for the identity guard of topic changes (one checked against
	// an earlier topic of the name).
	incarnation uint64
	createdAtMs int64
}

// changedSince reports whether a change guarded by the identity of the
// topic it was checked against (zero: no guard) finds another topic.
func (t *modelTopic) changedSince(expected meta.ExpectedCreation) bool {
	guarded := expected.ExpectedIncarnation != 0 || expected.ExpectedCreatedAtMs != 0
	return guarded && (expected.ExpectedIncarnation != t.incarnation || expected.ExpectedCreatedAtMs != t.createdAtMs)
}

// modelPlacement places one partition. Invariant: target is empty or
// differs from owner; startedAtMs is 0 exactly when target is empty.
type modelPlacement struct {
	owner, target string
	startedAtMs   int64
	// lastStartedAtMs is the start of the latest move, kept after it
	// ended; a move starts strictly after it.
	lastStartedAtMs int64
}

// modelMember is a member as its heartbeats and the leader's verdicts
// left it. Invariant: lastHeartbeatMs never decreases.
type modelMember struct {
	alive, draining bool
	// diskLow is what the last beat that counted said of the disk.
	diskLow         bool
	lastHeartbeatMs int64
	// incarnation is the start the last beat that counted came from.
	incarnation uint64
	// dataID is the data directory the first beat that named one came
	// from; a beat from another one does not count.
	dataID string
}

func newMetaModel() *metaModel {
	return &metaModel{topics: map[string]*modelTopic{}, members: map[string]*modelMember{}, left: map[string]bool{}}
}

// apply applies one command and says what it did: "" when it changed
// the model, else why the model refuses it. touched names the topic or
// member the command is about.
func (m *metaModel) apply(command meta.Command) (refusal string, touched string) {
	switch c := command.(type) {
	case meta.CreateTopic:
		return m.createTopic(c), "topic " + c.Name
	case meta.DeleteTopic:
		return m.deleteTopic(c), "topic " + c.Name
	case meta.AlterTopic:
		return m.alterTopic(c), "topic " + c.Name
	case meta.SetTarget:
		return m.setTarget(c), "topic " + c.Topic
	case meta.CompleteMove:
		return m.flip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget, c.ExpectedStartedAtMs, c.ExpectedCreation), "topic " + c.Topic
	case meta.ForcePromote:
		return m.flip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget, c.ExpectedStartedAtMs, c.ExpectedCreation), "topic " + c.Topic
	case meta.AbortMove:
		return m.abortMove(c), "topic " + c.Topic
	}
	return m.applyMember(command)
}

func (m *metaModel) applyMember(command meta.Command) (refusal string, touched string) {
	switch c := command.(type) {
	case meta.MemberHeartbeat:
		return m.heartbeat(c), "member " + c.ID
	case meta.MemberHeartbeats:
		return m.heartbeats(c), "members"
	case meta.MarkMemberDead:
		return m.markDead(c), "member " + c.ID
	case meta.SetDraining:
		return m.setDraining(c), "member " + c.ID
	case meta.RemoveMember:
		return m.removeMember(c.ID), "member " + c.ID
	}
	return "", "" // users: not modelled
}

// allMembers reports whether every id names a member.
func (m *metaModel) allMembers(ids []string) bool {
	for _, id := range ids {
		if m.members[id] == nil {
			return false
		}
	}
	return true
}

// allReceiving reports whether every member named may get a new
// partition: alive and not draining.
func (m *metaModel) allReceiving(ids []string) bool {
	for _, id := range ids {
		if member := m.members[id]; member == nil || !member.alive || member.draining {
			return false
		}
	}
	return true
}

// anyLeft reports whether a member named left the voters.
func (m *metaModel) anyLeft(ids []string) bool {
	for _, id := range ids {
		if m.left[id] {
			return true
		}
	}
	return false
}

// ownedCounts counts the partitions each node owns.
func (m *metaModel) ownedCounts() map[string]int {
	counts := map[string]int{}
	for _, t := range m.topics { //determinism:ok counts only
		for _, p := range t.partitions {
			counts[p.owner]++
		}
	}
	return counts
}

// overPerNodeLimit reports whether adding owners would take a node past
// limit partitions (0: no limit).
func (m *metaModel) overPerNodeLimit(owners []string, limit int) bool {
	if limit <= 0 {
		return false
	}
	counts := m.ownedCounts()
	for _, owner := range owners {
		counts[owner]++
		if counts[owner] > limit {
			return true
		}
	}
	return false
}

func noEmpty(names ...string) bool {
	for _, name := range names {
		if name == "" {
			return false
		}
	}
	return true
}

func (m *metaModel) createTopic(c meta.CreateTopic) string {
	switch {
	case c.Name == "" || len(c.Owners) == 0 || !noEmpty(c.Owners...):
		return "malformed"
	case m.topics[c.Name] != nil:
		return "the topic exists"
	case c.NamesFolded && m.namedIgnoringCase(c.Name):
		return "a topic holds the name in another case"
	case !m.allMembers(c.Owners):
		return "an owner is not a member"
	case !m.allReceiving(c.Owners):
		return "an owner is dead or draining"
	case c.OwnersVoting && m.anyLeft(c.Owners):
		return "an owner left the voters"
	case c.Limits.TopicsMax > 0 && len(m.topics) >= c.Limits.TopicsMax:
		return "the topic limit is reached"
	case m.overPerNodeLimit(c.Owners, c.Limits.PartitionsPerNodeMax):
		return "an owner would pass its partition limit"
	case c.DeadLetterTopic != "" && m.topics[c.DeadLetterTopic] == nil:
		return "no such dead-letter topic"
	}
	t := &modelTopic{unmodelled: len(c.Schema) > 0, owner: c.CreatedBy, createdAtMs: c.CreatedAtMs}
	if c.Numbered {
		m.creations++
		t.incarnation = m.creations
	}
	for _, owner := range c.Owners {
		t.partitions = append(t.partitions, modelPlacement{owner: owner})
	}
	m.topics[c.Name] = t
	return ""
}

// namedIgnoringCase reports whether a topic holds name in another case
// (a create of this release is refused then: on a case-insensitive file
// system both would name one directory).
func (m *metaModel) namedIgnoringCase(name string) bool {
	for existing := range m.topics { //determinism:ok a yes or no
		if existing != name && strings.EqualFold(existing, name) {
			return true
		}
	}
	return false
}

func (m *metaModel) deleteTopic(c meta.DeleteTopic) string {
	t := m.topics[c.Name]
	switch {
	case t == nil:
		return "no such topic"
	case c.ExpectedOwner != "" && t.owner != c.ExpectedOwner:
		return "the topic is not the expected owner's"
	case t.changedSince(c.ExpectedCreation):
		return "the topic was created again since the check"
	}
	delete(m.topics, c.Name)
	return ""
}

func (m *metaModel) alterTopic(c meta.AlterTopic) string {
	t := m.topics[c.Name]
	changesNothing := c.RetentionMs == nil && c.VisibilityTimeoutMs == nil && c.MaxInFlightPerPartition == nil &&
		c.MaxAckedAheadPerPartition == nil && c.Partitions == nil && len(c.Schema) == 0 && c.MaxDeliveries == nil && c.DeadLetterTopic == nil
	switch {
	case changesNothing || (c.Partitions == nil && len(c.NewOwners) > 0) || !noEmpty(c.NewOwners...):
		return "malformed"
	case t == nil:
		return "no such topic"
	case c.ExpectedOwner != "" && t.owner != c.ExpectedOwner:
		return "the topic is not the expected owner's"
	case t.changedSince(c.ExpectedCreation):
		return "the topic was created again since the check"
	case len(c.Schema) > 0:
		t.unmodelled = true // the schema guard is not modelled
	}
	if c.Partitions == nil {
		return ""
	}
	return m.growTopic(t, *c.Partitions, c.NewOwners, c.Limits.PartitionsPerNodeMax, c.OwnersVoting)
}

// growTopic adds partitions placed on owners; the count only grows.
func (m *metaModel) growTopic(t *modelTopic, count int, owners []string, perNodeMax int, voting bool) string {
	switch {
	case count < len(t.partitions):
		return "the partition count may not shrink"
	case count-len(t.partitions) != len(owners):
		return "new owners do not match the added partitions"
	case !m.allMembers(owners):
		return "a new owner is not a member"
	case !m.allReceiving(owners):
		return "a new owner is dead or draining"
	case voting && m.anyLeft(owners):
		return "a new owner left the voters"
	case m.overPerNodeLimit(owners, perNodeMax):
		return "an owner would pass its partition limit"
	}
	for _, owner := range owners {
		t.partitions = append(t.partitions, modelPlacement{owner: owner})
	}
	return ""
}

// movesInFlight counts the partitions with a target.
func (m *metaModel) movesInFlight() int {
	count := 0
	for _, t := range m.topics { //determinism:ok a count
		for _, p := range t.partitions {
			if p.target != "" {
				count++
			}
		}
	}
	return count
}

// placement returns a partition's placement, or nil and why not.
func (m *metaModel) placement(topic string, partition int) (*modelPlacement, string) {
	t := m.topics[topic]
	if t == nil {
		return nil, "no such topic"
	}
	if partition < 0 || partition >= len(t.partitions) {
		return nil, "no such partition"
	}
	return &t.partitions[partition], ""
}

// setTarget starts a move: only of a stable partition still owned by the
// owner the proposer saw, to a member other than the owner.
func (m *metaModel) setTarget(c meta.SetTarget) string {
	if c.Target == "" || c.ExpectedOwner == "" || c.Target == c.ExpectedOwner {
		return "malformed"
	}
	p, why := m.placement(c.Topic, c.Partition)
	switch {
	case p == nil:
		return why
	case p.target != "":
		return "already moving"
	case p.owner != c.ExpectedOwner:
		return "owned by another node"
	case m.members[c.Target] == nil:
		return "the target is not a member"
	case !m.members[c.Target].alive || m.members[c.Target].draining:
		return "the target is dead or draining"
	case m.left[c.Target]:
		return "the target left the voters"
	case c.MovesMax > 0 && m.movesInFlight() >= c.MovesMax:
		return "the planner's bound of moves in flight is reached"
	}
	p.target, p.startedAtMs = c.Target, max(c.NowMs, p.lastStartedAtMs+1)
	p.lastStartedAtMs = p.startedAtMs
	return ""
}

// flip is the compare-and-swap of a move's end: the owner becomes the
// target only if owner and target are the ones the proposer saw and, when
// the proposer names the move's start, the move is still that one, and
// when it names the topic's creation, the topic is still that one.
func (m *metaModel) flip(topic string, partition int, expectedOwner, expectedTarget string, expectedStartedAtMs int64,
	expected meta.ExpectedCreation) string {
	if expectedOwner == "" || expectedTarget == "" {
		return "malformed"
	}
	p, why := m.placement(topic, partition)
	switch {
	case p == nil:
		return why
	case m.topics[topic].changedSince(expected):
		return "the topic was created again since the check"
	case p.owner != expectedOwner || p.target != expectedTarget:
		return fmt.Sprintf("placement is %s -> %q", p.owner, p.target)
	case expectedStartedAtMs != 0 && expectedStartedAtMs != p.startedAtMs:
		return fmt.Sprintf("the move that started at %d was replaced by one that started at %d", expectedStartedAtMs, p.startedAtMs)
	}
	*p = modelPlacement{owner: p.target, lastStartedAtMs: p.lastStartedAtMs} // the next move starts after this one
	return ""
}

// abortMove clears a target that is still the expected one.
func (m *metaModel) abortMove(c meta.AbortMove) string {
	if c.ExpectedTarget == "" || c.ExpectedStartedAtMs < 0 {
		return "malformed"
	}
	p, why := m.placement(c.Topic, c.Partition)
	switch {
	case p == nil:
		return why
	case m.topics[c.Topic].changedSince(c.ExpectedCreation):
		return "the topic was created again since the check"
	case p.target != c.ExpectedTarget:
		return fmt.Sprintf("the target is %q", p.target)
	case c.ExpectedStartedAtMs != 0 && c.ExpectedStartedAtMs != p.startedAtMs:
		return fmt.Sprintf("the move that started at %d was replaced by one that started at %d", c.ExpectedStartedAtMs, p.startedAtMs)
	}
	p.target, p.startedAtMs = "", 0
	return ""
}

func (m *metaModel) heartbeat(c meta.MemberHeartbeat) string {
	if c.ID == "" {
		return "malformed"
	}
	member := m.members[c.ID]
	switch {
	case member == nil:
		member = &modelMember{incarnation: c.Incarnation, lastHeartbeatMs: c.NowMs}
		m.members[c.ID] = member
	case member.dataID != "" && c.DataID != "" && c.DataID != member.dataID:
		return "" // the node id on another data directory: not this member
	case c.Incarnation > member.incarnation:
		member.incarnation, member.lastHeartbeatMs = c.Incarnation, c.NowMs // a new start's first beat
	case c.Incarnation < member.incarnation || c.NowMs <= member.lastHeartbeatMs:
		return "" // an earlier start's, or no later than the last: no news
	default:
		member.lastHeartbeatMs = c.NowMs
	}
	member.alive, member.diskLow = true, c.DiskLow
	if member.dataID == "" {
		member.dataID = c.DataID
	}
	return ""
}

// heartbeats applies a leader's round: every beat, or none when the round
// is empty, names a member twice, or is not in member order.
func (m *metaModel) heartbeats(c meta.MemberHeartbeats) string {
	if len(c.Beats) == 0 {
		return "malformed"
	}
	for i, beat := range c.Beats {
		if beat.ID == "" || (i > 0 && !(c.Beats[i-1].ID < beat.ID)) {
			return "malformed"
		}
	}
	for _, beat := range c.Beats {
		m.heartbeat(beat)
	}
	return ""
}

// markDead marks a member dead only if no heartbeat came after the one
// the proposer saw.
func (m *metaModel) markDead(c meta.MarkMemberDead) string {
	member := m.members[c.ID]
	switch {
	case member == nil:
		return "no such member"
	case member.lastHeartbeatMs != c.ObservedHeartbeatMs:
		return "a later heartbeat came"
	case c.ObservedIncarnation != 0 && member.incarnation != c.ObservedIncarnation:
		return "the member started again"
	}
	member.alive = false
	return ""
}

// leftVoters records that a member left the voters.
func (m *metaModel) leftVoters(id string) { m.left[id] = true }

func (m *metaModel) setDraining(c meta.SetDraining) string {
	member := m.members[c.ID]
	switch {
	case member == nil:
		return "no such member"
	case !c.Draining && m.left[c.ID]:
		return "the member left the voters: its decommission is complete"
	}
	member.draining = c.Draining
	return ""
}

// removeMember forgets a member that owns and targets nothing.
func (m *metaModel) removeMember(id string) string {
	if m.members[id] == nil {
		return "no such member"
	}
	for _, t := range m.topics { //determinism:ok answers yes or no
		for _, p := range t.partitions {
			if p.owner == id || p.target == id {
				return "the member is placed"
			}
		}
	}
	delete(m.members, id)
	return ""
}
