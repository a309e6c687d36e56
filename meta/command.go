package meta

import (
	"encoding/json"
	"fmt"
)

// Bounds on what a command may carry, checked by Validate on the proposer
// and again when the command is applied.
const (
	nameBytesMax         = 255 // topic, member and user names, addresses
	usernameBytesMax     = 64  // docs/api.md#authentication
	passwordHashBytesMax = 1024
	// PartitionsMax bounds the partitions of one topic: every replica
	// refuses a create or a growth past it, on the proposer and again when
	// it applies, so no version of any topic has a partition at or past
	// this index (a node's own policy, node.Config.PartitionsMax, set per
	// node, is usually lower).
	PartitionsMax       = 4096
	grantsPerUserMax    = 64
	patternsPerGrantMax = 256
	// UsersMax bounds the users of a cluster: a node proposes every user
	// creation with it (PutUser.UsersMax), and one past it is refused
	// (ErrLimitReached). Each user may hold up to grantsPerUserMax grants
	// of patternsPerGrantMax patterns, held by every replica and every
	// node's authenticator.
	UsersMax = 10_000
	// UsersBytesMax bounds the bytes of every user of a cluster together
	// (userBytes: names, hashes, grants): a node proposes every user
	// creation and grant change with it (PutUser.UsersBytesMax,
	// SetGrants.UsersBytesMax), and one that would pass it is refused
	// (ErrLimitReached). The users travel in every snapshot message
	// beside the schemas (SchemaBytesTotalMax), under the raft message
	// bound; without it 90 users of 64 grants of 256 long patterns made
	// an image past that bound, which no replica could then install.
	UsersBytesMax = 16 << 20
	// MaxDeliveriesMax bounds a topic's MaxDeliveries
	// (docs/api.md#dead-letters).
	MaxDeliveriesMax = 1000
	// LeaseCapMax bounds a topic's MaxInFlightPerPartition and
	// MaxAckedAheadPerPartition, which are at least 1: the largest cap a
	// node's lease table of a partition takes (the node holds the two
	// bounds equal at compile time).
	LeaseCapMax = 1 << 20
	// HeartbeatsPerEntryMax bounds the heartbeats one MemberHeartbeats
	// carries: one per member, and a cluster has at most wire.MembersMax.
	HeartbeatsPerEntryMax = 4096
)

// ProposalID identifies one proposal, so that its proposer can match the
// Outcome of the applied entry to the request that asked for it. It is
// unique over the life of the group: only the leader proposes, a term has
// at most one leader, and a restarted node can lead again only in a later
// term; within one term Sequence increases.
type ProposalID struct {
	// Node is the proposer's node id; empty for the bootstrap entries.
	Node string `json:"node"`
	// Term is the raft term in which the proposer led when proposing.
	Term uint64 `json:"term"`
	// Sequence counts the proposer's proposals since it started.
	Sequence uint64 `json:"sequence"`
}

func (id ProposalID) String() string {
	return fmt.Sprintf("%s/%d/%d", id.Node, id.Term, id.Sequence)
}

// CommandType numbers a command in the log. The numbers are append-only:
// a retired command keeps its number, which is never given to another.
type CommandType uint8

const (
	TypeCreateTopic      CommandType = 1
	TypeDeleteTopic      CommandType = 2
	TypeAlterTopic       CommandType = 3
	TypeMemberHeartbeat  CommandType = 4
	TypeMarkMemberDead   CommandType = 5
	TypeSetDraining      CommandType = 6
	TypeRemoveMember     CommandType = 7
	TypeSetTarget        CommandType = 8
	TypeCompleteMove     CommandType = 9
	TypeAbortMove        CommandType = 10
	TypeForcePromote     CommandType = 11
	TypePutUser          CommandType = 12
	TypeDeleteUser       CommandType = 13
	TypeSetGrants        CommandType = 14
	TypeSetPassword      CommandType = 15
	TypeAttachChild      CommandType = 16
	TypeDetachChild      CommandType = 17
	TypeMemberHeartbeats CommandType = 18
)

// Command is one change of the state machine. The set is closed: only the
// types of this package implement it.
type Command interface {
	// Type is the command's number in the log.
	Type() CommandType
	// Validate checks the command on its own, without the state: what
	// Propose refuses and apply rejects with ErrInvalidCommand.
	Validate() error
	// apply changes s, or returns a rejection and changes nothing.
	apply(s *State) error
}

// CreateTopic creates a topic with every partition already placed, and
// with version 1 of its JSON Schema when Schema is set.
type CreateTopic struct {
	Name                string `json:"name"`
	RetentionMs         int64  `json:"retention_ms"`
	VisibilityTimeoutMs int64  `json:"visibility_timeout_ms"`
	// MaxInFlightPerPartition and MaxAckedAheadPerPartition are the
	// partitions' lease caps, 1 to LeaseCapMax: the proposer resolved a
	// default of its own, so 0 is no value and is refused.
	MaxInFlightPerPartition   int   `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int   `json:"max_acked_ahead_per_partition"`
	CreatedAtMs               int64 `json:"created_at_ms"`
	// CreatedBy is the user who created the topic ("owner" in the API).
	CreatedBy string `json:"created_by,omitempty"`
	// CreatorCreatedAtMs, when not 0, is CreatedBy's CreatedAtMs as the
	// proposer authenticated it: the create fails (ErrUserChanged) if
	// that user was deleted meanwhile, created again or not, as a user
	// created again under a name must not get the old one's topics.
	CreatorCreatedAtMs int64 `json:"creator_created_at_ms,omitempty"`
	// Numbered is set by the proposers of this release: the apply numbers
	// the topic's incarnation (topicSequence). An entry of an earlier
	// release leaves it 0 on every replica, whichever release applies it,
	// and a replica of an earlier release stops at this field (strict
	// decoding) rather than number the topics otherwise.
	Numbered bool `json:"numbered,omitempty"`
	// Owners[p] is the member that will own partition p; its length is
	// the partition count. Every owner must be a member.
	Owners []string `json:"owners"`
	// Schema is the topic's JSON Schema; empty for none. The proposer
	// compiled it; the metastore checks only CheckSchemaDocument.
	Schema json.RawMessage `json:"schema,omitempty"`
	// MaxDeliveries and DeadLetterTopic are the topic's dead-letter
	// setting (TopicRecord); DeadLetterTopic must exist when this applies.
	MaxDeliveries   int    `json:"max_deliveries,omitempty"`
	DeadLetterTopic string `json:"dead_letter_topic,omitempty"`
	// Limits, when set, are the proposer's bounds, checked at apply (so
	// that racing creates cannot pass them together): the topics of the
	// cluster and the partitions one member owns.
	Limits PlacementLimits `json:"limits,omitzero"`
	// Parent, when set, names the topic the new one is attached to as a
	// fan-out child in the same command (so a failed attach creates
	// nothing), with FanoutDelayMs as in AttachChild.
	Parent        string `json:"parent,omitempty"`
	FanoutDelayMs int64  `json:"fanout_delay_ms,omitempty"`
	// ExpectedOwner, when set, is the user the proposer's caller was
	// checked against as the owner of Parent: the create applies only
	// while Parent is still that user's (ErrOwnerChanged).
	ExpectedOwner string `json:"expected_owner,omitempty"`
	// OwnersVoting is set by the proposers of this release: the apply
	// also refuses an owner that left the voters (checkVoting). A member
	// whose decommission is complete can be listed again, alive and not
	// draining, by a heartbeat proposed before its retirement and applied
	// after its removal, until the leader marks it draining again; a
	// placement proposed from a replica from before its drain and applied
	// then would give it a partition that nothing could move off (its
	// copy has no source). An entry of an earlier release leaves it false
	// and applies as it did on every replica, whichever release applies
	// it; a replica of an earlier release stops at this field (strict
	// decoding) rather than apply it otherwise.
	OwnersVoting bool `json:"owners_voting,omitempty"`
	// NamesFolded is set by the proposers of this release: the apply also
	// refuses a name equal to an existing topic's ignoring the case of
	// ASCII letters (ErrTopicExistsIgnoringCase; checkNameCase). An entry
	// of an earlier release leaves it false and applies as it did on every
	// replica, whichever release applies it (such a pair of topics keeps
	// working); a replica of an earlier release stops at this field
	// (strict decoding) rather than create the topic anyway.
	NamesFolded bool `json:"names_folded,omitempty"`
	// DeadLetterLinksChecked is set by the proposers of this release: a
	// create with a Parent is also refused when its DeadLetterTopic is
	// that parent (checkDeadLetterLink). An entry of an earlier release
	// leaves it false and applies as it did on every replica, whichever
	// release applies it; a replica of an earlier release stops at this
	// field (strict decoding) rather than apply it otherwise.
	DeadLetterLinksChecked bool `json:"dead_letter_links_checked,omitempty"`
	// SameSchemaAttached is set by the proposers of this release: a create
	// with a Parent and a Schema is taken when the schema is the same as
	// the parent's latest (SameSchema), as AttachChild.SameSchemaAttached.
	SameSchemaAttached bool `json:"same_schema_attached,omitempty"`
}

// PlacementLimits bound what a topic change may add; a zero field is no
// bound.
type PlacementLimits struct {
	TopicsMax            int `json:"topics_max,omitempty"`
	PartitionsPerNodeMax int `json:"partitions_per_node_max,omitempty"`
}

// ExpectedCreation names the creation of its topic a command was checked
// against, when either field is set: the command applies only to that
// creation, not to a topic deleted and created again under the name since
// (ErrGuardFailed). Zero is no guard, as in entries written before a
// command carried it.
type ExpectedCreation struct {
	ExpectedIncarnation uint64 `json:"expected_incarnation,omitempty"`
	ExpectedCreatedAtMs int64  `json:"expected_created_at_ms,omitempty"`
}

// Expecting is the guard on the creation identity.
func Expecting(identity TopicIdentity) ExpectedCreation {
	return ExpectedCreation{ExpectedIncarnation: identity.Incarnation, ExpectedCreatedAtMs: identity.CreatedAtMs}
}

// Expected is the creation the guard names (zero: none).
func (e ExpectedCreation) Expected() TopicIdentity {
	return TopicIdentity{Incarnation: e.ExpectedIncarnation, CreatedAtMs: e.ExpectedCreatedAtMs}
}

// creationGuarded is a command that embeds ExpectedCreation. Propose
// refuses one that names no creation: a proposer of this release always
// knows the topic it checked, and one that forgot would turn the guard
// off without any test noticing. Apply still takes it (entries written
// before the guard existed name none).
type creationGuarded interface{ Expected() TopicIdentity }

// checkNamesCreation is Propose's check of a creationGuarded command.
func checkNamesCreation(cmd Command) error {
	if guarded, ok := cmd.(creationGuarded); ok && guarded.Expected() == (TopicIdentity{}) {
		return invalidf("%T names no creation of its topic (ExpectedCreation)", cmd)
	}
	return nil
}

// DeleteTopic deletes a topic and its assignments.
type DeleteTopic struct {
	Name string `json:"name"`
	// ExpectedCreation is the topic the proposer checked: the delete
	// applies only to it.
	ExpectedCreation
	// ExpectedOwner, when set, is the user the proposer's caller was
	// checked against as the topic's owner (a caller who is not an
	// admin): the change applies only while the topic is still that
	// user's (CreatedBy), not to a topic deleted and created again by
	// another user between the check and this apply (ErrOwnerChanged).
	ExpectedOwner string `json:"expected_owner,omitempty"`
}

// AlterTopic changes the fields that are set. Partitions may only grow;
// NewOwners places the added partitions, in order. Schema, when set, is
// added as the next schema version, guarded: only if the latest version
// is still SchemaAfterVersion (0: the topic has none), and only if it
// evolves that version additively (CheckSchemaEvolution). With
// SameSchemaKept, a Schema that is the latest version's (SameSchema)
// adds none and passes whatever SchemaAfterVersion says.
type AlterTopic struct {
	Name string `json:"name"`
	// ExpectedCreation is the topic the proposer checked the change
	// against: it applies only to it.
	ExpectedCreation
	RetentionMs         *int64 `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs *int64 `json:"visibility_timeout_ms,omitempty"`
	// MaxInFlightPerPartition and MaxAckedAheadPerPartition, when set,
	// are 1 to LeaseCapMax, as in CreateTopic.
	MaxInFlightPerPartition   *int     `json:"max_in_flight_per_partition,omitempty"`
	MaxAckedAheadPerPartition *int     `json:"max_acked_ahead_per_partition,omitempty"`
	Partitions                *int     `json:"partitions,omitempty"`
	NewOwners                 []string `json:"new_owners,omitempty"`
	// Schema is the new schema version's document; empty to keep the
	// schema as it is.
	Schema             json.RawMessage `json:"schema,omitempty"`
	SchemaAfterVersion int             `json:"schema_after_version,omitempty"`
	// MaxDeliveries and DeadLetterTopic, when set, change the dead-letter
	// setting; the setting they leave must hold TopicRecord's invariant
	// (an empty DeadLetterTopic clears it).
	MaxDeliveries   *int    `json:"max_deliveries,omitempty"`
	DeadLetterTopic *string `json:"dead_letter_topic,omitempty"`
	// Limits bound the partitions NewOwners adds (PartitionsPerNodeMax).
	Limits PlacementLimits `json:"limits,omitzero"`
	// ExpectedOwner, when set, is the user the proposer's caller was
	// checked against as the topic's owner (a caller who is not an
	// admin): the change applies only while the topic is still that
	// user's (CreatedBy), not to a topic deleted and created again by
	// another user between the check and this apply (ErrOwnerChanged).
	ExpectedOwner string `json:"expected_owner,omitempty"`
	// OwnersVoting: NewOwners must not have left the voters, as for
	// CreateTopic.OwnersVoting.
	OwnersVoting bool `json:"owners_voting,omitempty"`
	// TupleItemsCompared is set by the proposers of this release: the
	// schema's evolution is also compared under an "items" array (the
	// tuple form of the drafts before 2020-12), position by position.
	// An entry of an earlier release leaves it false and applies as it
	// did on every replica, whichever release applies it.
	TupleItemsCompared bool `json:"tuple_items_compared,omitempty"`
	// PrefixItemsCompared is set by the proposers of this release: the
	// schema's evolution is also compared under "prefixItems" (the tuple
	// form of 2020-12), position by position, as under an "items" array.
	// An entry of an earlier release leaves it false and applies as it
	// did on every replica, whichever release applies it.
	PrefixItemsCompared bool `json:"prefix_items_compared,omitempty"`
	// DeadLetterLinksChecked is set by the proposers of this release: a
	// DeadLetterTopic that is the topic's fan-out parent, or one of its
	// children, is refused (checkDeadLetterLinks), as for
	// CreateTopic.DeadLetterLinksChecked.
	DeadLetterLinksChecked bool `json:"dead_letter_links_checked,omitempty"`
	// SameSchemaKept is set by the proposers of this release: a Schema
	// that is the same schema as the topic's latest version (SameSchema)
	// makes no version, and its guard is not checked (the latest is what
	// the alter asks for, whoever applied it first: a retry, or a racing
	// twin), so the alter changes only its other fields. An entry of an
	// earlier release leaves it false and adds a version even then, as it
	// did on every replica, whichever release applies it.
	SameSchemaKept bool `json:"same_schema_kept,omitempty"`
}

// AttachChild makes Child a fan-out child of Parent with a new attach
// epoch: records committed in Parent after the attach reach Child (after
// DelayMs when it is set). The rules are those of
// docs/api.md#fan-out-children; see checkAttach.
type AttachChild struct {
	Parent  string `json:"parent"`
	Child   string `json:"child"`
	DelayMs int64  `json:"delay_ms,omitempty"`
	// AttachedAtMs is the proposer's clock.
	AttachedAtMs int64 `json:"attached_at_ms"`
	// ExpectedOwner, when set, is the user the proposer's caller was
	// checked against as the owner of both topics: the attach applies
	// only while both are still that user's (ErrOwnerChanged).
	ExpectedOwner string `json:"expected_owner,omitempty"`
	// DeadLetterLinksChecked is set by the proposers of this release: an
	// attach is refused when Child's dead-letter topic is Parent, or
	// Parent's is Child (checkDeadLetterLink), as for
	// CreateTopic.DeadLetterLinksChecked.
	DeadLetterLinksChecked bool `json:"dead_letter_links_checked,omitempty"`
	// SameSchemaAttached is set by the proposers of this release: a child
	// with a schema may attach when its latest is the same schema as the
	// parent's latest (SameSchema: equal once decoded, key order and
	// whitespace aside), the comparison an alter makes (SameSchemaKept);
	// the stored documents keep their senders' key order, so two equal
	// schemas sent in another order could never be linked. An entry of
	// an earlier release leaves it false and compares the documents byte
	// for byte, as every replica did, whichever release applies it; a
	// replica of an earlier release stops at this field (strict decoding)
	// rather than refuse what the others take.
	SameSchemaAttached bool `json:"same_schema_attached,omitempty"`
}

// DetachChild removes the fan-out link of Child to Parent; both topics
// stay.
type DetachChild struct {
	Parent string `json:"parent"`
	Child  string `json:"child"`
	// ExpectedOwner, when set, is the user the proposer's caller was
	// checked against as the owner of the parent or of the child: the
	// detach applies only while one of them is still that user's
	// (ErrOwnerChanged).
	ExpectedOwner string `json:"expected_owner,omitempty"`
}

// MemberHeartbeat records that a member is alive at NowMs, creating it on
// its first heartbeat. Within one incarnation (one start of the member)
// LastHeartbeatMs never goes backwards; a later incarnation's first beat
// replaces it, as its clock may be behind the earlier start's; a beat of
// an earlier incarnation than the member's is a late copy and changes
// nothing.
type MemberHeartbeat struct {
	ID          string `json:"id"`
	HTTPAddr    string `json:"http_addr"`
	ClusterAddr string `json:"cluster_addr"`
	NowMs       int64  `json:"now_ms"`
	Incarnation uint64 `json:"incarnation,omitempty"`
	// DiskLow: the member's free disk space is under its reserve; each
	// beat that applies sets Member.DiskLow to it.
	DiskLow bool `json:"disk_low,omitempty"`
	// DataID names the data directory the beat's node runs on. A beat
	// from another directory than the member's (Member.DataID) changes
	// nothing; the first beat that names one gives it to the member.
	DataID string `json:"data_id,omitempty"`
}

// MemberHeartbeats applies the heartbeats the leader gathered from its
// members (msg.Heartbeat) and its own, each as a MemberHeartbeat: one
// entry for a whole round of heartbeats. Beats are sorted by ID, one per
// member, each NowMs on its member's own clock.
type MemberHeartbeats struct {
	Beats []MemberHeartbeat `json:"beats"`
}

// MarkMemberDead marks a member dead, only if no heartbeat was applied
// since the proposer saw ObservedHeartbeatMs (guarded).
type MarkMemberDead struct {
	ID                  string `json:"id"`
	ObservedHeartbeatMs int64  `json:"observed_heartbeat_ms"`
	// ObservedIncarnation, when not 0, is the member's Incarnation the
	// proposer saw: a later start of the member replaces LastHeartbeatMs
	// with its own clock, which may be behind and come to equal the
	// observed value, so a delayed or repeated MarkMemberDead would
	// otherwise mark a member dead right after it beat. 0 (entries of
	// earlier versions) checks the heartbeat time alone.
	ObservedIncarnation uint64 `json:"observed_incarnation,omitempty"`
}

// SetDraining starts (true) or cancels (false) a member's decommission.
type SetDraining struct {
	ID       string `json:"id"`
	Draining bool   `json:"draining"`
}

// RemoveMember forgets a member that owns and targets no partition.
type RemoveMember struct {
	ID string `json:"id"`
}

// SetTarget starts a move of a stable partition, only if the partition is
// still stable and owned by ExpectedOwner (guarded).
type SetTarget struct {
	Topic         string `json:"topic"`
	Partition     int    `json:"partition"`
	ExpectedOwner string `json:"expected_owner"`
	Target        string `json:"target"`
	NowMs         int64  `json:"now_ms"`
	// MovesMax, when set, is the planner's bound of moves in flight: the
	// move starts only while fewer partitions have a target
	// (ErrGuardFailed). A plan proposal held up on its way and applied
	// after the next plan's would otherwise pass the bound.
	MovesMax int `json:"moves_max,omitempty"`
}

// CompleteMove flips ownership to the target: Owner := Target, Target := "",
// only if Owner and Target are still the expected ones and, when
// ExpectedStartedAtMs is set, the move is still the one that started then
// (the guarded compare-and-swap of docs/architecture.md#moves; the start time
// tells a move from a later one with the same owner and target).
type CompleteMove struct {
	Topic               string `json:"topic"`
	Partition           int    `json:"partition"`
	ExpectedOwner       string `json:"expected_owner"`
	ExpectedTarget      string `json:"expected_target"`
	ExpectedStartedAtMs int64  `json:"expected_started_at_ms,omitempty"`
	// ExpectedCreation is the topic the move is of: a move's target and
	// start may repeat across two creations of a name, and a late end of
	// a deleted creation's move must not end the new creation's.
	ExpectedCreation
}

// AbortMove clears the target, only if it is still ExpectedTarget and,
// when ExpectedStartedAtMs is set, the move is still the one that started
// then: a late or repeated abort of a move must not end a later move of
// the partition to the same target (entries written before the field
// existed carry 0 and are checked on the target alone).
type AbortMove struct {
	Topic               string `json:"topic"`
	Partition           int    `json:"partition"`
	ExpectedTarget      string `json:"expected_target"`
	ExpectedStartedAtMs int64  `json:"expected_started_at_ms,omitempty"`
	// ExpectedCreation is the topic the move is of: a move's target and
	// start may repeat across two creations of a name, and a late end of
	// a deleted creation's move must not end the new creation's.
	ExpectedCreation
}

// ForcePromote is CompleteMove when the source died: the same guard, a
// different number so that metrics and audits can tell them apart.
type ForcePromote struct {
	Topic               string `json:"topic"`
	Partition           int    `json:"partition"`
	ExpectedOwner       string `json:"expected_owner"`
	ExpectedTarget      string `json:"expected_target"`
	ExpectedStartedAtMs int64  `json:"expected_started_at_ms,omitempty"`
	// ExpectedCreation is the topic the move is of: a move's target and
	// start may repeat across two creations of a name, and a late end of
	// a deleted creation's move must not end the new creation's.
	ExpectedCreation
}

// PutUser creates or replaces a user. With CreateOnly it fails if the
// user exists. CreatedAtMs of an existing user is kept.
type PutUser struct {
	Username     string  `json:"username"`
	PasswordHash []byte  `json:"password_hash"`
	Root         bool    `json:"root,omitempty"`
	Grants       []Grant `json:"grants"`
	CreateOnly   bool    `json:"create_only,omitempty"`
	// IfNoUsers makes the command fail (ErrUserExists) unless no user
	// exists at all. Root seeds carried it until seeds came to be
	// proposed beside users created with security off; it stays so that
	// the entries in existing logs decode and apply alike (CreateOnly and
	// the one-root rule keep a seed of two successive leaders to one).
	IfNoUsers bool  `json:"if_no_users,omitempty"`
	NowMs     int64 `json:"now_ms"`
	// UsersMax, when not 0, refuses a create once the cluster holds that
	// many users (ErrLimitReached). The proposer sets it (UsersMax), so
	// that entries of releases without the bound apply as they did.
	UsersMax int `json:"users_max,omitempty"`
	// UsersBytesMax, when not 0, refuses a change that would make the
	// users of the cluster hold more bytes than that (userBytes); set by
	// the proposer (UsersBytesMax) like UsersMax.
	UsersBytesMax int `json:"users_bytes_max,omitempty"`
	// NameFoldChecked is set by the proposers of this release: a create
	// is refused (ErrUserExists) when another user's name differs from
	// this one only in the case of its letters ("Admin" beside the root
	// "admin" reads as the root in the audit log and in user ls), as
	// topics are. An entry of an earlier release leaves it false and
	// applies as it did; a replica of an earlier release stops at the
	// field (strict decoding) rather than take such a user.
	NameFoldChecked bool `json:"name_fold_checked,omitempty"`
}

// DeleteUser deletes a user other than the root.
type DeleteUser struct {
	Username string `json:"username"`
	// UserCreatedAtMs, when not 0, is the CreatedAtMs of the user the
	// change was checked against: a user deleted and created again under
	// the name meanwhile is another account, and the change fails
	// (ErrUserChanged) instead of reaching it. 0 (entries of earlier
	// versions, and a change checked against no user) applies to
	// whichever user holds the name.
	UserCreatedAtMs int64 `json:"user_created_at_ms,omitempty"`
}

// SetGrants replaces the grants of a user other than the root.
type SetGrants struct {
	Username string  `json:"username"`
	Grants   []Grant `json:"grants"`
	NowMs    int64   `json:"now_ms"`
	// UserCreatedAtMs: as DeleteUser's.
	UserCreatedAtMs int64 `json:"user_created_at_ms,omitempty"`
	// UsersBytesMax: as PutUser's.
	UsersBytesMax int `json:"users_bytes_max,omitempty"`
}

// SetPassword replaces the password hash of a user, root included,
// leaving its grants and flags as they are.
type SetPassword struct {
	Username     string `json:"username"`
	PasswordHash []byte `json:"password_hash"`
	NowMs        int64  `json:"now_ms"`
	// UserCreatedAtMs: as DeleteUser's. A self-service change was checked
	// with the current password of that account; applied to a namesake
	// created later, it would hand its caller the new account.
	UserCreatedAtMs int64 `json:"user_created_at_ms,omitempty"`
}

func (CreateTopic) Type() CommandType      { return TypeCreateTopic }
func (DeleteTopic) Type() CommandType      { return TypeDeleteTopic }
func (AlterTopic) Type() CommandType       { return TypeAlterTopic }
func (MemberHeartbeat) Type() CommandType  { return TypeMemberHeartbeat }
func (MarkMemberDead) Type() CommandType   { return TypeMarkMemberDead }
func (SetDraining) Type() CommandType      { return TypeSetDraining }
func (RemoveMember) Type() CommandType     { return TypeRemoveMember }
func (SetTarget) Type() CommandType        { return TypeSetTarget }
func (CompleteMove) Type() CommandType     { return TypeCompleteMove }
func (AbortMove) Type() CommandType        { return TypeAbortMove }
func (ForcePromote) Type() CommandType     { return TypeForcePromote }
func (PutUser) Type() CommandType          { return TypePutUser }
func (DeleteUser) Type() CommandType       { return TypeDeleteUser }
func (SetGrants) Type() CommandType        { return TypeSetGrants }
func (SetPassword) Type() CommandType      { return TypeSetPassword }
func (AttachChild) Type() CommandType      { return TypeAttachChild }
func (DetachChild) Type() CommandType      { return TypeDetachChild }
func (MemberHeartbeats) Type() CommandType { return TypeMemberHeartbeats }
