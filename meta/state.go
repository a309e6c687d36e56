package meta

import (
	"maps"
	"slices"
	"strings"
)

// TopicRecord is a topic as the metastore knows it.
type TopicRecord struct {
	Name string `json:"name"`
	// Partitions is the partition count. Invariant: equals
	// len(Assignments); it only grows.
	Partitions                int   `json:"partitions"`
	RetentionMs               int64 `json:"retention_ms"`
	VisibilityTimeoutMs       int64 `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition   int   `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int   `json:"max_acked_ahead_per_partition"`
	CreatedAtMs               int64 `json:"created_at_ms"`
	// Incarnation numbers the topic's creation among all the creations the
	// group applied (topicSequence): non-zero, and never that of another
	// topic, for a topic created by this release; 0 for one created
	// before it. With CreatedAtMs it is the topic's Identity.
	Incarnation uint64 `json:"incarnation,omitempty"`
	// CreatedBy is the user who created the topic; empty without auth.
	CreatedBy string `json:"created_by,omitempty"`
	// Assignments[p] places partition p.
	Assignments []Assignment `json:"assignments"`
	// Schemas are the kept versions of the topic's JSON Schema, oldest
	// first; empty for a topic without one. Invariant (checkSchemas):
	// consecutive versions, increasing ids, at most SchemaVersionsKept.
	Schemas []SchemaVersion `json:"schemas,omitempty"`
	// MaxDeliveries is how many deliveries a record gets before it goes to
	// DeadLetterTopic; 0: never. Invariant (checkDeadLetters): within
	// [0, MaxDeliveriesMax], and DeadLetterTopic is set when it is not 0.
	MaxDeliveries int `json:"max_deliveries,omitempty"`
	// DeadLetterTopic names the topic a record goes to once it exhausted
	// its deliveries; empty for none. Invariant: another topic of the
	// state (deleting that topic clears both fields here).
	DeadLetterTopic string `json:"dead_letter_topic,omitempty"`
	// Parent names the topic this one is a fan-out child of; empty for a
	// standalone topic or a parent. Invariant (checkFanoutLinks): the
	// parent exists, is not itself a child, and lists this topic in its
	// Children with the same AttachEpoch and FanoutDelayMs.
	Parent string `json:"parent,omitempty"`
	// AttachEpoch identifies the attach that linked this child to Parent;
	// non-zero exactly when Parent is set, and never the epoch of an
	// earlier attach (a re-attach starts fresh cursors).
	AttachEpoch uint64 `json:"attach_epoch,omitempty"`
	// FanoutDelayMs is how long after its commit in the parent a record
	// reaches this child; 0 for a plain fan-out child and for a topic
	// without a parent. Invariant: at most FanoutDelayMsMax, and the
	// parent's retention (unless forever) is at least the delay plus
	// FanoutRetentionMarginMs.
	FanoutDelayMs int64 `json:"fanout_delay_ms,omitempty"`
	// Children are the topic's fan-out children sorted by name, at most
	// FanoutChildrenMax; empty unless the topic is a parent. A topic has
	// children or a parent, never both (depth 1).
	Children []ChildLink `json:"children,omitempty"`
}

// TopicIdentity tells a topic from every other topic of its name: one
// deleted and created again (even within the millisecond of a proposer's
// clock) has another. Only topics created before Incarnation existed
// rely on CreatedAtMs alone.
type TopicIdentity struct {
	Incarnation uint64
	CreatedAtMs int64
}

// Identity returns the topic's identity.
func (r *TopicRecord) Identity() TopicIdentity {
	return TopicIdentity{Incarnation: r.Incarnation, CreatedAtMs: r.CreatedAtMs}
}

// ChildLink is one fan-out child as its parent's record lists it.
type ChildLink struct {
	// Name is the child topic's name.
	Name string `json:"name"`
	// Epoch is the child's AttachEpoch.
	Epoch uint64 `json:"epoch"`
	// DelayMs is the child's FanoutDelayMs.
	DelayMs int64 `json:"delay_ms,omitempty"`
	// AttachedAtMs is the proposer's clock when the attach was proposed.
	AttachedAtMs int64 `json:"attached_at_ms"`
}

// Role says whether the topic is a fan-out parent, a child, or neither.
func (t TopicRecord) Role() string {
	switch {
	case t.Parent != "":
		return RoleChild
	case len(t.Children) > 0:
		return RoleParent
	}
	return RoleStandalone
}

// The fan-out roles of a topic (TopicRecord.Role).
const (
	RoleStandalone = "standalone"
	RoleParent     = "parent"
	RoleChild      = "child"
)

// Assignment places one partition: Owner serves it now, Target is where
// it is moving (empty when stable).
type Assignment struct {
	// Owner is never empty. It changes only by CompleteMove or
	// ForcePromote, from the Target.
	Owner string `json:"owner"`
	// Target is empty when the partition is stable; never equal to Owner.
	Target string `json:"target,omitempty"`
	// MoveStartedAtMs names the running move: the proposer's clock at
	// SetTarget, raised past LastMoveStartedAtMs; 0 when stable.
	MoveStartedAtMs int64 `json:"move_started_at_ms,omitempty"`
	// LastMoveStartedAtMs is the start of the partition's latest move,
	// kept after it ended. A move starts strictly after it, so every move
	// of the partition has a start of its own: a SetTarget applied again
	// (a duplicated or late proposal) cannot revive a move that a withheld
	// flip still names. Set only by SetTarget.
	LastMoveStartedAtMs int64 `json:"last_move_started_at_ms,omitempty"`
}

// Move is a partition with a target, as listed by State.Moves.
type Move struct {
	Topic       string
	Partition   int
	Owner       string
	Target      string
	StartedAtMs int64
}

// Member is a broker node known to the cluster (created by its first
// heartbeat).
type Member struct {
	ID          string `json:"id"`
	HTTPAddr    string `json:"http_addr"`
	ClusterAddr string `json:"cluster_addr"`
	// Alive is set by every heartbeat and cleared by MarkMemberDead.
	Alive bool `json:"alive"`
	// LastHeartbeatMs is the largest NowMs of the heartbeats of the
	// member's Incarnation (its latest start whose beat applied): it
	// never decreases within one, and a later incarnation's first beat
	// replaces it. MarkMemberDead is guarded by it.
	LastHeartbeatMs int64  `json:"last_heartbeat_ms"`
	Incarnation     uint64 `json:"incarnation,omitempty"`
	// Draining is set while the member is being decommissioned.
	Draining bool `json:"draining"`
	// DiskLow is what the member's last applied heartbeat said of its
	// disk: its free space under its reserve, so it refuses writes into
	// its partitions. Others route keyless records and moves around it;
	// it changes no guard of the metastore's.
	DiskLow bool `json:"disk_low,omitempty"`
	// DataID names the data directory the member's partitions and
	// metastore replica live in, from the first of its beats that named
	// one; never changed after (a member removed and joined again starts
	// over). The same node id started on another directory holds none of
	// what the member acknowledged: its beats change nothing, so it is
	// never alive, never writes, and its node serves nothing.
	DataID string `json:"data_id,omitempty"`
}

// Receiving reports whether the member may take partitions: alive and
// not draining.
func (m Member) Receiving() bool { return m.Alive && !m.Draining }

// User is an account of the HTTP API.
type User struct {
	Username string `json:"username"`
	// PasswordHash is the hash of the password (bcrypt); never empty.
	PasswordHash []byte `json:"password_hash"`
	// Root marks the root administrator: undeletable, grants immutable;
	// at most one user is root.
	Root        bool    `json:"root,omitempty"`
	Grants      []Grant `json:"grants"`
	CreatedAtMs int64   `json:"created_at_ms"`
	UpdatedAtMs int64   `json:"updated_at_ms"`
}

// Grant allows Action on topics matching any of Patterns.
type Grant struct {
	Action   string   `json:"action"`
	Patterns []string `json:"patterns,omitempty"`
}

// The actions of a grant that GrantsAllow reads; auth names them all.
const (
	GrantProduce = "produce"
	GrantAdmin   = "admin" // global: carries no patterns
)

// GrantsAllow reports whether grants allow action on topic: the admin
// grant allows everything, else a grant of the action with a pattern
// that matches (PatternMatches). The HTTP layer checks callers with it
// (auth.Identity.Allowed), and the node the owner of a topic it writes
// on the topic's behalf.
func GrantsAllow(grants []Grant, action, topic string) bool {
	for _, grant := range grants {
		if grant.Action == GrantAdmin {
			return true
		}
	}
	for _, grant := range grants {
		if grant.Action == action && slices.ContainsFunc(grant.Patterns, func(p string) bool { return PatternMatches(p, topic) }) {
			return true
		}
	}
	return false
}

// PatternMatches reports whether pattern matches the topic name: a
// literal matches itself, "p*" every name starting with p ("*" every
// name).
func PatternMatches(pattern, topic string) bool {
	if prefix, wildcard := strings.CutSuffix(pattern, "*"); wildcard {
		return strings.HasPrefix(topic, prefix)
	}
	return pattern == topic
}

// ConfState is the raft voter configuration (never joint: meta changes
// one voter at a time).
type ConfState struct {
	// Voters are raft ids, sorted.
	Voters []uint64 `json:"voters"`
	// Learners are raft ids, sorted; meta adds none today.
	Learners []uint64 `json:"learners,omitempty"`
}

// State is the replicated state machine: topics and their assignments,
// members, users and grants, and the voter configuration with the peers'
// addresses. Meta changes it only while persisting a Ready (applying
// committed entries or installing a snapshot); the accessors return copies
// or sorted slices, never its maps. Not safe for concurrent use: read it
// on the loop that drives the Meta.
type State struct {
	// topics by name. Invariant: every record satisfies
	// TopicRecord.Partitions == len(Assignments), owners are non-empty and
	// a target never equals its owner.
	topics map[string]*TopicRecord
	// members by id.
	members map[string]*Member
	// users by username. Invariant: at most one is Root.
	users map[string]*User
	// confState is what raft's ApplyConfChange last returned.
	confState ConfState
	// peers by raft id. Invariant: its keys are exactly the voters.
	peers map[uint64]Peer
	// removedRaftIDs may never join again. removedNodeIDs are the node
	// ids of the voters removed by entries that asked for it
	// (ConfChange.RecordNodeID; a node's raft id need not be RaftIDOf its
	// node id: a cluster grown from one node keeps raft id 1 for it):
	// their decommission is complete. removedRaftIDs only grows, at the
	// apply of a removal; a node id leaves removedNodeIDs when a voter is
	// added under it again (with a raft id never used) by an entry that
	// asked for it.
	removedRaftIDs map[uint64]bool
	removedNodeIDs map[string]bool
	// usersVersion counts changes to users, for authentication caches.
	usersVersion uint64
	// schemaSequence is the id of the last schema version applied; it
	// only grows, so ids are never reused.
	schemaSequence uint64
	// topicSequence counts the topic creations applied; a creation's
	// Incarnation is its count, so incarnations never repeat over the
	// life of the group.
	topicSequence uint64
	// fanoutSequence counts the attaches applied; the epoch of an attach
	// is derived from it, so epochs never repeat over the life of the
	// group.
	fanoutSequence uint64
	// schemaEpoch grows whenever the latest schema of a topic may have
	// changed (SchemaEpoch); in memory only.
	schemaEpoch uint64
	// topicsVersion grows whenever a topic record may have changed: every
	// markTopic and every installed snapshot (TopicsVersion); in memory
	// only, so it never repeats within a process's State.
	topicsVersion uint64
	// moves is what Moves returned at topicsVersion movesVersion, valid
	// when movesKnown: every node asks on every tick, and the topics seldom
	// change. Cleared by replaceWith.
	moves        []Move
	movesVersion uint64
	movesKnown   bool
	// dirty lists the records changed since the last write to the store.
	// Only the apply functions add to it; only flushDirty empties it.
	dirty map[recordKey]bool
}

// newState returns an empty state machine.
func newState() *State {
	return &State{topics: map[string]*TopicRecord{}, members: map[string]*Member{},
		users: map[string]*User{}, peers: map[uint64]Peer{}, removedRaftIDs: map[uint64]bool{}, removedNodeIDs: map[string]bool{},
		dirty: map[recordKey]bool{}}
}

// Topic returns a copy of the named topic.
func (s *State) Topic(name string) (TopicRecord, bool) {
	record, found := s.topics[name]
	if !found {
		return TopicRecord{}, false
	}
	return record.clone(), true
}

// TopicNames returns the names of all topics, sorted.
func (s *State) TopicNames() []string { return slices.Sorted(maps.Keys(s.topics)) }

// TopicCount is the number of topics.
func (s *State) TopicCount() int { return len(s.topics) }

// TopicsVersion changes whenever a topic record may have changed (created,
// altered, deleted, moved, linked, or replaced by an installed snapshot);
// other commands (heartbeats, members, users) leave it. A reader may keep
// what it derived from the topics until it changes.
func (s *State) TopicsVersion() uint64 { return s.topicsVersion }

// Topics returns copies of all topics, sorted by name.
func (s *State) Topics() []TopicRecord {
	topics := make([]TopicRecord, 0, len(s.topics))
	for _, name := range s.TopicNames() {
		topics = append(topics, s.topics[name].clone())
	}
	return topics
}

// Assignment returns the placement of one partition.
func (s *State) Assignment(topic string, partition int) (Assignment, bool) {
	record, found := s.topics[topic]
	if !found || partition < 0 || partition >= len(record.Assignments) {
		return Assignment{}, false
	}
	return record.Assignments[partition], true
}

// Moves returns the partitions that have a target, sorted by topic and
// partition, in a slice of the caller's.
// Every node asks on every tick and a move is rare, so it gathers the
// few moves first and sorts only those, not every topic name; and it
// gathers them again only after a topic changed.
func (s *State) Moves() []Move {
	return s.AppendMoves(nil)
}

// AppendMoves is Moves appended to dst: a caller that asks on every
// tick reuses its slice instead of getting a new one each time.
func (s *State) AppendMoves(dst []Move) []Move {
	if !s.movesKnown || s.movesVersion != s.topicsVersion {
		s.moves, s.movesVersion, s.movesKnown = s.gatherMoves(), s.topicsVersion, true
	}
	return append(dst, s.moves...)
}

// gatherMoves lists the partitions that have a target, sorted.
func (s *State) gatherMoves() []Move {
	var moves []Move
	for name, record := range s.topics { //determinism:ok sorted below
		for partition, a := range record.Assignments {
			if a.Target != "" {
				moves = append(moves, Move{Topic: name, Partition: partition, Owner: a.Owner,
					Target: a.Target, StartedAtMs: a.MoveStartedAtMs})
			}
		}
	}
	slices.SortFunc(moves, func(a, b Move) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return a.Partition - b.Partition
	})
	return moves
}

// Member returns a member by id.
func (s *State) Member(id string) (Member, bool) {
	member, found := s.members[id]
	if !found {
		return Member{}, false
	}
	return *member, true
}

// HeartbeatingMembers counts the members that are alive and not retired:
// those whose heartbeats the leader's round of heartbeats waits for.
func (s *State) HeartbeatingMembers() int {
	count := 0
	for id, member := range s.members { //determinism:ok counts only
		if member.Alive && !s.Retired(id) {
			count++
		}
	}
	return count
}

// Members returns all members, sorted by id. The copies are sorted in
// place: one allocation, where sorting the ids first took eight for five
// members (dead-member detection calls it on the node's ticks).
func (s *State) Members() []Member {
	members := make([]Member, 0, len(s.members))
	for _, member := range s.members { //determinism:ok sorted below
		members = append(members, *member)
	}
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return members
}

// User returns a copy of a user.
func (s *State) User(username string) (User, bool) {
	user, found := s.users[username]
	if !found {
		return User{}, false
	}
	return user.clone(), true
}

// Users returns copies of all users, sorted by username.
func (s *State) Users() []User {
	users := make([]User, 0, len(s.users))
	for _, name := range slices.Sorted(maps.Keys(s.users)) {
		users = append(users, s.users[name].clone())
	}
	return users
}

// UserCount is the number of users.
func (s *State) UserCount() int { return len(s.users) }

// UsersVersion increases with every applied change to users; an
// authentication cache keyed by it is never stale.
func (s *State) UsersVersion() uint64 { return s.usersVersion }

// ConfState returns a copy of the voter configuration.
func (s *State) ConfState() ConfState { return s.confState.clone() }

// Peers returns the voters with their addresses, sorted by raft id.
func (s *State) Peers() []Peer {
	peers := make([]Peer, 0, len(s.peers))
	for _, raftID := range slices.Sorted(maps.Keys(s.peers)) {
		peers = append(peers, s.peers[raftID])
	}
	return peers
}

// PeerByRaftID returns the voter with the given raft id.
func (s *State) PeerByRaftID(raftID uint64) (Peer, bool) {
	peer, found := s.peers[raftID]
	return peer, found
}

// PeerByNodeID returns the voter with the given node id (the one with the
// lowest raft id, should two share it). It neither sorts nor allocates:
// the host asks after every sync round, for its readiness.
func (s *State) PeerByNodeID(nodeID string) (Peer, bool) {
	var found Peer
	ok := false
	for _, peer := range s.peers { //determinism:ok the lowest raft id wins whatever the order
		if peer.ID == nodeID && (!ok || peer.RaftID < found.RaftID) {
			found, ok = peer, true
		}
	}
	return found, ok
}

// RaftIDUsed reports whether raftID belongs to a voter or to a removed
// peer: a joining node needs an id for which it is false.
func (s *State) RaftIDUsed(raftID uint64) bool {
	_, voter := s.peers[raftID]
	return voter || s.removedRaftIDs[raftID]
}

func (t *TopicRecord) clone() TopicRecord {
	copied := *t
	copied.Assignments = slices.Clone(t.Assignments)
	copied.Schemas = slices.Clone(t.Schemas) // documents are shared: never changed
	copied.Children = slices.Clone(t.Children)
	return copied
}

func (u *User) clone() User {
	copied := *u
	copied.PasswordHash = slices.Clone(u.PasswordHash)
	copied.Grants = cloneGrants(u.Grants)
	return copied
}

func cloneGrants(grants []Grant) []Grant {
	if grants == nil {
		return nil
	}
	copied := make([]Grant, len(grants))
	for i, grant := range grants {
		copied[i] = Grant{Action: grant.Action, Patterns: slices.Clone(grant.Patterns)}
	}
	return copied
}

func (c ConfState) clone() ConfState {
	return ConfState{Voters: slices.Clone(c.Voters), Learners: slices.Clone(c.Learners)}
}
