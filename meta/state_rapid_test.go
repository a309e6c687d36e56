package meta

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"pgregory.net/rapid"
)

// model is a deliberately naive twin of State: plain maps, parallel slices
// per topic, every rule written out again by hand.
type model struct {
	topics       map[string]*modelTopic
	members      map[string]*Member
	users        map[string]*User
	usersVersion uint64
	// creations counts the topic creations applied: each numbers its
	// topic's incarnation.
	creations uint64
}

type modelTopic struct {
	config      CreateTopic // the creating command, with fields altered in place
	incarnation uint64
	owners      []string
	targets     []string
	started     []int64
	// lastStarted is each partition's latest move start, kept after it
	// ended.
	lastStarted []int64
}

func newModel() *model {
	return &model{topics: map[string]*modelTopic{}, members: map[string]*Member{}, users: map[string]*User{}}
}

// apply returns the sentinel the command should fail with, or nil after
// changing the model.
func (m *model) apply(cmd Command) error {
	if cmd.Validate() != nil {
		return ErrInvalidCommand
	}
	switch c := cmd.(type) {
	case CreateTopic, DeleteTopic, AlterTopic:
		return m.applyTopic(c)
	case MemberHeartbeat, MarkMemberDead, SetDraining, RemoveMember:
		return m.applyMember(c)
	case MemberHeartbeats:
		for _, beat := range c.Beats {
			if err := m.applyMember(beat); err != nil {
				return err
			}
		}
		return nil
	case SetTarget, CompleteMove, ForcePromote, AbortMove:
		return m.applyMove(c)
	case PutUser, DeleteUser, SetGrants, SetPassword:
		return m.applyUser(c)
	}
	panic(fmt.Sprintf("model does not know %T", cmd))
}

func (m *model) applyTopic(cmd Command) error {
	switch c := cmd.(type) {
	case CreateTopic:
		if m.topics[c.Name] != nil {
			return ErrTopicExists
		}
		if c.NamesFolded && m.namedIgnoringCase(c.Name) {
			return ErrTopicExistsIgnoringCase
		}
		if err := m.receiving(c.Owners); err != nil {
			return err
		}
		if c.DeadLetterTopic != "" && m.topics[c.DeadLetterTopic] == nil {
			return ErrDeadLetterTopicNotFound
		}
		n := len(c.Owners)
		var incarnation uint64
		if c.Numbered {
			m.creations++
			incarnation = m.creations
		}
		m.topics[c.Name] = &modelTopic{config: c, incarnation: incarnation, owners: slices.Clone(c.Owners), targets: make([]string, n), started: make([]int64, n), lastStarted: make([]int64, n)}
	case DeleteTopic:
		if m.topics[c.Name] == nil {
			return ErrTopicNotFound
		}
		delete(m.topics, c.Name)
		for _, topic := range m.topics {
			if topic.config.DeadLetterTopic == c.Name {
				topic.config.DeadLetterTopic, topic.config.MaxDeliveries = "", 0
			}
		}
	case AlterTopic:
		return m.alter(c)
	}
	return nil
}

func (m *model) alter(c AlterTopic) error {
	topic := m.topics[c.Name]
	if topic == nil {
		return ErrTopicNotFound
	}
	if c.Partitions != nil && (*c.Partitions < len(topic.owners) || *c.Partitions-len(topic.owners) != len(c.NewOwners)) {
		return ErrGuardFailed // the count the change grew from is not the topic's any more
	}
	if err := m.receiving(c.NewOwners); err != nil {
		return err
	}
	maxDeliveries, deadLetterTopic := topic.config.MaxDeliveries, topic.config.DeadLetterTopic
	if c.MaxDeliveries != nil {
		maxDeliveries = *c.MaxDeliveries
	}
	if c.DeadLetterTopic != nil {
		deadLetterTopic = *c.DeadLetterTopic
	}
	if maxDeliveries > 0 && deadLetterTopic == "" {
		return ErrInvalidCommand
	}
	if c.DeadLetterTopic != nil && deadLetterTopic != "" && m.topics[deadLetterTopic] == nil {
		return ErrDeadLetterTopicNotFound
	}
	topic.config.MaxDeliveries, topic.config.DeadLetterTopic = maxDeliveries, deadLetterTopic
	if c.RetentionMs != nil {
		topic.config.RetentionMs = *c.RetentionMs
	}
	if c.VisibilityTimeoutMs != nil {
		topic.config.VisibilityTimeoutMs = *c.VisibilityTimeoutMs
	}
	if c.MaxInFlightPerPartition != nil {
		topic.config.MaxInFlightPerPartition = *c.MaxInFlightPerPartition
	}
	if c.MaxAckedAheadPerPartition != nil {
		topic.config.MaxAckedAheadPerPartition = *c.MaxAckedAheadPerPartition
	}
	for _, owner := range c.NewOwners {
		topic.owners = append(topic.owners, owner)
		topic.targets = append(topic.targets, "")
		topic.started = append(topic.started, 0)
		topic.lastStarted = append(topic.lastStarted, 0)
	}
	return nil
}

// namedIgnoringCase: a topic holds name in another case.
func (m *model) namedIgnoringCase(name string) bool {
	for existing := range m.topics {
		if strings.ToLower(existing) == strings.ToLower(name) {
			return true
		}
	}
	return false
}

// receiving: new partitions go only to alive members that are not
// draining.
func (m *model) receiving(ids []string) error {
	if !m.allMembers(ids) {
		return ErrMemberNotFound
	}
	for _, id := range ids {
		if !m.members[id].Alive || m.members[id].Draining {
			return ErrMemberNotReceiving
		}
	}
	return nil
}

func (m *model) allMembers(ids []string) bool {
	for _, id := range ids {
		if m.members[id] == nil {
			return false
		}
	}
	return true
}

func (m *model) applyMember(cmd Command) error {
	switch c := cmd.(type) {
	case MemberHeartbeat:
		old := m.members[c.ID]
		if old != nil && (c.Incarnation < old.Incarnation || c.Incarnation == old.Incarnation && c.NowMs <= old.LastHeartbeatMs) {
			return nil // no news: an earlier start's beat, or one no later than the last
		}
		draining := old != nil && old.Draining
		m.members[c.ID] = &Member{ID: c.ID, HTTPAddr: c.HTTPAddr, ClusterAddr: c.ClusterAddr, Alive: true,
			LastHeartbeatMs: c.NowMs, Incarnation: c.Incarnation, Draining: draining}
	case MarkMemberDead:
		if m.members[c.ID] == nil {
			return ErrMemberNotFound
		}
		if m.members[c.ID].LastHeartbeatMs != c.ObservedHeartbeatMs {
			return ErrGuardFailed
		}
		m.members[c.ID].Alive = false
	case SetDraining:
		if m.members[c.ID] == nil {
			return ErrMemberNotFound
		}
		m.members[c.ID].Draining = c.Draining
	case RemoveMember:
		return m.removeMember(c.ID)
	}
	return nil
}

func (m *model) removeMember(id string) error {
	if m.members[id] == nil {
		return ErrMemberNotFound
	}
	for _, topic := range m.topics {
		if slices.Contains(topic.owners, id) || slices.Contains(topic.targets, id) {
			return ErrMemberInUse
		}
	}
	delete(m.members, id)
	return nil
}

// partition returns the topic of a partition, or the sentinel.
func (m *model) partition(name string, partition int) (*modelTopic, error) {
	topic := m.topics[name]
	if topic == nil {
		return nil, ErrTopicNotFound
	}
	if partition >= len(topic.owners) {
		return nil, ErrPartitionNotFound
	}
	return topic, nil
}

func (m *model) applyMove(cmd Command) error {
	switch c := cmd.(type) {
	case SetTarget:
		return m.setTarget(c)
	case CompleteMove:
		return m.flip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget)
	case ForcePromote:
		return m.flip(c.Topic, c.Partition, c.ExpectedOwner, c.ExpectedTarget)
	case AbortMove:
		topic, err := m.partition(c.Topic, c.Partition)
		if err != nil {
			return err
		}
		if topic.targets[c.Partition] != c.ExpectedTarget {
			return ErrGuardFailed
		}
		topic.targets[c.Partition], topic.started[c.Partition] = "", 0
	}
	return nil
}

func (m *model) setTarget(c SetTarget) error {
	topic, err := m.partition(c.Topic, c.Partition)
	if err != nil {
		return err
	}
	if topic.targets[c.Partition] != "" || topic.owners[c.Partition] != c.ExpectedOwner {
		return ErrGuardFailed
	}
	switch target := m.members[c.Target]; {
	case target == nil:
		return ErrMemberNotFound
	case !target.Alive || target.Draining:
		return ErrMemberNotReceiving
	case c.MovesMax > 0 && m.movesInFlight() >= c.MovesMax:
		return ErrGuardFailed
	}
	start := max(c.NowMs, topic.lastStarted[c.Partition]+1)
	topic.targets[c.Partition], topic.started[c.Partition], topic.lastStarted[c.Partition] = c.Target, start, start
	return nil
}

func (m *model) movesInFlight() int {
	count := 0
	for _, topic := range m.topics {
		for _, target := range topic.targets {
			if target != "" {
				count++
			}
		}
	}
	return count
}

func (m *model) flip(name string, partition int, owner, target string) error {
	topic, err := m.partition(name, partition)
	if err != nil {
		return err
	}
	if topic.owners[partition] != owner || topic.targets[partition] != target {
		return ErrGuardFailed
	}
	topic.owners[partition], topic.targets[partition], topic.started[partition] = target, "", 0
	return nil
}

func (m *model) applyUser(cmd Command) error {
	switch c := cmd.(type) {
	case PutUser:
		return m.putUser(c)
	case DeleteUser:
		if m.users[c.Username] == nil {
			return ErrUserNotFound
		}
		if m.users[c.Username].Root {
			return ErrUserIsRoot
		}
		delete(m.users, c.Username)
		for _, topic := range m.topics {
			if topic.config.CreatedBy == c.Username {
				topic.config.CreatedBy = ""
			}
		}
	case SetGrants:
		if m.users[c.Username] == nil {
			return ErrUserNotFound
		}
		if m.users[c.Username].Root {
			return ErrUserIsRoot
		}
		m.users[c.Username].Grants, m.users[c.Username].UpdatedAtMs = c.Grants, c.NowMs
	case SetPassword:
		if m.users[c.Username] == nil {
			return ErrUserNotFound
		}
		m.users[c.Username].PasswordHash, m.users[c.Username].UpdatedAtMs = c.PasswordHash, c.NowMs
	}
	m.usersVersion++
	return nil
}

func (m *model) putUser(c PutUser) error {
	old := m.users[c.Username]
	anyRoot := false
	for _, user := range m.users {
		anyRoot = anyRoot || user.Root
	}
	switch {
	case c.IfNoUsers && len(m.users) > 0:
		return ErrUserExists
	case old != nil && c.CreateOnly:
		return ErrUserExists
	case old != nil && old.Root && !(c.Root && fmt.Sprint(old.Grants) == fmt.Sprint(c.Grants)):
		return ErrUserIsRoot
	case old != nil && !old.Root && c.Root:
		return ErrUserIsRoot
	case old == nil && c.Root && anyRoot:
		return ErrUserExists
	}
	created := c.NowMs
	if old != nil {
		created = old.CreatedAtMs
	}
	m.users[c.Username] = &User{Username: c.Username, PasswordHash: c.PasswordHash, Root: c.Root, Grants: c.Grants,
		CreatedAtMs: created, UpdatedAtMs: c.NowMs}
	m.usersVersion++
	return nil
}

// image renders the model the way State renders itself.
func (m *model) image() stateImage {
	var image stateImage
	for _, name := range slices.Sorted(maps.Keys(m.topics)) {
		topic := m.topics[name]
		record := TopicRecord{Name: name, Partitions: len(topic.owners), RetentionMs: topic.config.RetentionMs,
			VisibilityTimeoutMs: topic.config.VisibilityTimeoutMs, MaxInFlightPerPartition: topic.config.MaxInFlightPerPartition,
			MaxAckedAheadPerPartition: topic.config.MaxAckedAheadPerPartition, CreatedAtMs: topic.config.CreatedAtMs,
			Incarnation: topic.incarnation, CreatedBy: topic.config.CreatedBy, MaxDeliveries: topic.config.MaxDeliveries, DeadLetterTopic: topic.config.DeadLetterTopic}
		for p := range topic.owners {
			record.Assignments = append(record.Assignments, Assignment{Owner: topic.owners[p], Target: topic.targets[p], MoveStartedAtMs: topic.started[p], LastMoveStartedAtMs: topic.lastStarted[p]})
		}
		image.Topics = append(image.Topics, record)
	}
	for _, id := range slices.Sorted(maps.Keys(m.members)) {
		image.Members = append(image.Members, *m.members[id])
	}
	for _, name := range slices.Sorted(maps.Keys(m.users)) {
		image.Users = append(image.Users, *m.users[name])
	}
	return image
}

var (
	topicNames = []string{"a", "b", "A"}          // "A" is "a" in another case
	memberIDs  = []string{"m1", "m2", "m3", "m4"} // m4 is not a member until it heartbeats
	usernames  = []string{"admin", "ann", "bob"}
)

// commandKinds weights the kinds drawCommand picks from: moves need a topic
// and the right owner and target, so they get more draws.
var commandKinds = []int{0, 0, 0, 1, 2, 2, 3, 3, 4, 5, 6, 7, 7, 7, 7, 8, 8, 8, 9, 9, 10, 10, 11, 11, 12, 13, 14, 15, 15}

// drawCommand draws a command; guarded ones often carry the values the
// model holds, so that both outcomes of each guard occur.
func drawCommand(t *rapid.T, m *model) Command {
	kind := rapid.SampledFrom(commandKinds).Draw(t, "kind")
	topic := rapid.SampledFrom(topicNames).Draw(t, "topic")
	member := rapid.SampledFrom(memberIDs).Draw(t, "member")
	partition := rapid.IntRange(0, 2).Draw(t, "partition")
	now := rapid.Int64Range(0, 50).Draw(t, "now")
	if kind >= 7 && kind <= 10 {
		topic, partition = m.drawPartition(t, topic, partition, kind != 7)
	}
	owner, target := m.currentPlacement(t, topic, partition)
	switch kind {
	case 0:
		create := createTopic(topic, rapid.SliceOfN(rapid.SampledFrom(memberIDs), 0, 3).Draw(t, "owners")...)
		create.NamesFolded = rapid.IntRange(0, 3).Draw(t, "an earlier release's create") != 0
		if rapid.Bool().Draw(t, "create with dead letters") {
			create.MaxDeliveries = rapid.IntRange(0, 2).Draw(t, "create max deliveries")
			create.DeadLetterTopic = rapid.SampledFrom(topicNames).Draw(t, "create dead-letter topic")
		}
		return create
	case 1:
		return DeleteTopic{Name: topic}
	case 2:
		return drawAlter(t, topic)
	case 3:
		return heartbeat(member, now)
	case 4:
		return MarkMemberDead{ID: member, ObservedHeartbeatMs: m.observedHeartbeat(t, member, now)}
	case 5:
		return SetDraining{ID: member, Draining: rapid.Bool().Draw(t, "draining")}
	case 6:
		return RemoveMember{ID: member}
	case 7:
		return SetTarget{Topic: topic, Partition: partition, ExpectedOwner: owner, Target: member, NowMs: now,
			MovesMax: rapid.IntRange(0, 2).Draw(t, "moves max")}
	case 8:
		return CompleteMove{Topic: topic, Partition: partition, ExpectedOwner: owner, ExpectedTarget: target}
	case 9:
		return ForcePromote{Topic: topic, Partition: partition, ExpectedOwner: owner, ExpectedTarget: target}
	case 10:
		return AbortMove{Topic: topic, Partition: partition, ExpectedTarget: target}
	case 15:
		return drawHeartbeats(t)
	}
	return drawUserCommand(t, kind)
}

// drawHeartbeats draws a round of heartbeats: some members in id order,
// each at its own time; sometimes none, or one member twice (both
// invalid).
func drawHeartbeats(t *rapid.T) MemberHeartbeats {
	var round MemberHeartbeats
	for _, id := range memberIDs {
		if rapid.Bool().Draw(t, "beats "+id) {
			round.Beats = append(round.Beats, heartbeat(id, rapid.Int64Range(0, 50).Draw(t, "now of "+id)))
		}
	}
	if len(round.Beats) > 0 && rapid.IntRange(0, 9).Draw(t, "a member twice") == 0 {
		round.Beats = append(round.Beats, round.Beats[len(round.Beats)-1])
	}
	return round
}

// currentPlacement returns the owner and target the model holds for a
// partition, or, a quarter of the time or when there is none, random
// members.
func (m *model) currentPlacement(t *rapid.T, topic string, partition int) (string, string) {
	owner := rapid.SampledFrom(memberIDs).Draw(t, "owner")
	target := rapid.SampledFrom(memberIDs).Draw(t, "target")
	record := m.topics[topic]
	if record == nil || partition >= len(record.owners) || rapid.IntRange(0, 3).Draw(t, "random placement") == 0 {
		return owner, target
	}
	if record.targets[partition] != "" {
		target = record.targets[partition]
	}
	return record.owners[partition], target
}

// drawPartition returns, most of the time, an existing partition (a
// moving one if movingOnly), so that moves start and flips and aborts meet
// a target; else the given one.
func (m *model) drawPartition(t *rapid.T, topic string, partition int, movingOnly bool) (string, int) {
	type place struct {
		topic     string
		partition int
	}
	var candidates []place
	for _, name := range slices.Sorted(maps.Keys(m.topics)) {
		for p, target := range m.topics[name].targets {
			if target != "" || !movingOnly {
				candidates = append(candidates, place{name, p})
			}
		}
	}
	if len(candidates) == 0 || rapid.IntRange(0, 3).Draw(t, "any partition") == 0 {
		return topic, partition
	}
	chosen := rapid.SampledFrom(candidates).Draw(t, "existing partition")
	return chosen.topic, chosen.partition
}

func (m *model) observedHeartbeat(t *rapid.T, member string, random int64) int64 {
	if m.members[member] != nil && rapid.Bool().Draw(t, "observe current heartbeat") {
		return m.members[member].LastHeartbeatMs
	}
	return random
}

func drawAlter(t *rapid.T, topic string) AlterTopic {
	alter := AlterTopic{Name: topic}
	if rapid.Bool().Draw(t, "alter retention") {
		alter.RetentionMs = new(rapid.Int64Range(-1, 100).Draw(t, "retention"))
	}
	if rapid.Bool().Draw(t, "alter in flight") {
		alter.MaxInFlightPerPartition = new(rapid.IntRange(0, 100).Draw(t, "in flight"))
	}
	if rapid.Bool().Draw(t, "alter dead letters") {
		alter.MaxDeliveries = new(rapid.IntRange(-1, 3).Draw(t, "max deliveries"))
		alter.DeadLetterTopic = new(rapid.SampledFrom(append([]string{""}, topicNames...)).Draw(t, "dead-letter topic"))
	}
	if rapid.Bool().Draw(t, "alter partitions") {
		alter.Partitions = new(rapid.IntRange(1, 5).Draw(t, "partitions"))
		alter.NewOwners = rapid.SliceOfN(rapid.SampledFrom(memberIDs), 0, 3).Draw(t, "new owners")
	}
	return alter
}

func drawUserCommand(t *rapid.T, kind int) Command {
	username := rapid.SampledFrom(usernames).Draw(t, "username")
	grants := rapid.SampledFrom([][]Grant{nil, {{Action: "produce", Patterns: []string{"a*"}}}, {{Action: "admin"}}}).Draw(t, "grants")
	now := rapid.Int64Range(0, 50).Draw(t, "user now")
	switch kind {
	case 11:
		return PutUser{Username: username, PasswordHash: []byte(rapid.SampledFrom([]string{"h1", "h2"}).Draw(t, "hash")),
			Root: rapid.IntRange(0, 3).Draw(t, "root") == 0, Grants: grants, CreateOnly: rapid.Bool().Draw(t, "create only"),
			IfNoUsers: rapid.IntRange(0, 3).Draw(t, "if no users") == 0, NowMs: now}
	case 12:
		return DeleteUser{Username: username}
	case 14:
		return SetPassword{Username: username, PasswordHash: []byte(rapid.SampledFrom([]string{"h1", "h3"}).Draw(t, "new hash")), NowMs: now}
	}
	return SetGrants{Username: username, Grants: grants, NowMs: now}
}

// Property: State behaves like the naive model on random command
// sequences (results and resulting state), its snapshot image round-trips,
// and the records it writes to bbolt after each command add up to the
// same state.
func TestStateMatchesModel(t *testing.T) {
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		store, err := OpenStore(filepath.Join(dir, fmt.Sprintf("run%d.db", run)), StoreOptions{NoSync: true})
		require.NoError(rt, err)
		defer store.Close()
		s, m := newState(), newModel()
		for _, id := range memberIDs[:3] {
			checkStep(rt, s, m, heartbeat(id, 0), -1)
		}
		steps := rapid.IntRange(20, 150).Draw(rt, "steps")
		for step := range steps {
			cmd := drawCommand(rt, m)
			checkStep(rt, s, m, cmd, step)
			require.NoError(rt, store.db.Update(s.flushDirty))
		}
		checkStored(rt, store, s)
	})
}

// checkStep applies one command to both and compares.
func checkStep(t *rapid.T, s *State, m *model, cmd Command, step int) {
	want := m.apply(cmd)
	got := cmd.apply(s)
	if want == nil {
		require.NoError(t, got, "step %d: %T %+v", step, cmd, cmd)
	} else {
		require.ErrorIs(t, got, want, "step %d: %T %+v", step, cmd, cmd)
	}
	image := m.image()
	require.Equal(t, image.Topics, nilIfEmpty(s.Topics()), "step %d: topics after %T", step, cmd)
	require.Equal(t, image.Members, nilIfEmpty(s.Members()), "step %d: members after %T", step, cmd)
	require.Equal(t, image.Users, nilIfEmpty(s.Users()), "step %d: users after %T", step, cmd)
	require.Equal(t, m.usersVersion, s.UsersVersion(), "step %d: users version after %T", step, cmd)
}

func nilIfEmpty[T any](items []T) []T {
	if len(items) == 0 {
		return nil
	}
	return items
}

// checkStored compares the state with what the store holds and with its
// own snapshot image.
func checkStored(t *rapid.T, store *Store, s *State) {
	var stored stateImage
	require.NoError(t, store.db.View(func(tx *bolt.Tx) error {
		var err error
		stored, err = loadImage(tx)
		return err
	}))
	loaded, err := stateFromImage(stored)
	require.NoError(t, err)
	require.Equal(t, string(s.encodeImage()), string(loaded.encodeImage()), "the store disagrees with the state")
	decoded, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	require.Equal(t, string(s.encodeImage()), string(decoded.encodeImage()))
}
