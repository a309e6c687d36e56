package meta

import (
	"errors"
	"fmt"
)

// Errors of the proposer: returned by Propose, ProposeConfChange and
// TransferLeadership, before anything reaches the log.
var (
	// ErrNoLeader: no leader is known; the caller answers 503 and retries.
	ErrNoLeader = errors.New("meta: no leader")
	// ErrNotLeader: another node leads; errors.As gives a *NotLeaderError
	// naming it, so the node can forward the request there.
	ErrNotLeader = errors.New("meta: not the leader")
	// ErrProposalDropped: raft refused the proposal (a leadership transfer
	// is under way, or the uncommitted log is over its byte bound).
	ErrProposalDropped = errors.New("meta: proposal dropped")
	// ErrBarrierPending: this leader has not yet applied an entry of its
	// own term, so it cannot vouch for the configuration it would change.
	ErrBarrierPending = errors.New("meta: leader has not caught up with its log yet")
	// ErrReadsFull: ReadRequestsMax read requests are outstanding; the
	// caller answers 503.
	ErrReadsFull = errors.New("meta: too many read requests outstanding")
	// ErrConfChangeInProgress: a configuration change of this term is not
	// applied yet; raft allows one at a time.
	ErrConfChangeInProgress = errors.New("meta: a configuration change is already in progress")
	// ErrRemovingLeader: the leader may not remove itself; transfer the
	// leadership first.
	ErrRemovingLeader = errors.New("meta: the leader cannot remove itself; transfer leadership first")
	// ErrMisdirected: Step got a message addressed to another raft id.
	ErrMisdirected = errors.New("meta: message addressed to another node")
	// ErrBadPeerMessage: Step got a raft message no replica sends, or
	// one whose fields would make raft panic (checkPeerMessage).
	ErrBadPeerMessage = errors.New("meta: refused raft message")
	// ErrClosed: the Meta or Store was closed.
	ErrClosed = errors.New("meta: closed")
	// ErrCommandTooLarge: an encoded command is over commandBytesMax.
	ErrCommandTooLarge = errors.New("meta: command too large")
)

// Errors of the decoders.
var (
	// ErrUnknownCommand: a command number or version this binary does not
	// know.
	ErrUnknownCommand = errors.New("meta: unknown command")
	// ErrMalformedCommand: the bytes do not decode as the command they
	// claim to be.
	ErrMalformedCommand = errors.New("meta: malformed command")
	// ErrStoreFormat: the bbolt file is not a meta store of a format this
	// binary reads.
	ErrStoreFormat = errors.New("meta: unknown store format")
	// ErrMalformedSnapshot: snapshot data that does not decode.
	ErrMalformedSnapshot = errors.New("meta: malformed snapshot")
	// ErrMessageTooLarge: an encoded raft message over messageBytesMax.
	ErrMessageTooLarge = errors.New("meta: raft message too large")
)

// Rejections: the result of applying a command or configuration change,
// identical on every replica, handed to the proposer in an Outcome. A
// rejected command changes nothing.
var (
	// ErrInvalidCommand: the command breaks a structural rule (a negative
	// limit, an owner list of the wrong length, a partition count that
	// shrinks). Also returned by Validate before proposing.
	ErrInvalidCommand = errors.New("meta: invalid command")
	// ErrGuardFailed: a guarded command found the state changed since its
	// proposer looked (compare-and-swap failed).
	ErrGuardFailed = errors.New("meta: guard failed")
	// ErrStaleProposal: a term-bound command reached the log in a later
	// term than the one it was proposed in (a forward that outlived its
	// leader): it changes nothing, and its proposer may propose it again.
	ErrStaleProposal = errors.New("meta: proposal from an earlier term")
	// ErrOwnerChanged: a change guarded by the owner its caller was
	// checked against found the topic owned by someone else (or by no
	// one): it was deleted and created again meanwhile.
	ErrOwnerChanged = errors.New("meta: topic owner changed")
	// ErrSchemaSpace: a schema version would take the schemas of all
	// topics over their byte bound.
	ErrSchemaSpace = errors.New("meta: no room for another schema version")
	// ErrLimitReached: the change would pass a bound it carries
	// (PlacementLimits).
	ErrLimitReached = errors.New("meta: limit reached")
	ErrTopicExists  = errors.New("meta: topic already exists")
	// ErrTopicExistsIgnoringCase: a create (of a release that asks for
	// the check, CreateTopic.NamesFolded) whose name equals an existing
	// topic's but for the case of its letters. A partition's directory is
	// named after its topic, so on a case-insensitive file system the two
	// topics would share their directories, and each would remove the
	// other's data as stale.
	ErrTopicExistsIgnoringCase = errors.New("meta: topic exists under the name in another case")
	ErrTopicNotFound           = errors.New("meta: topic not found")
	// ErrDeadLetterTopicNotFound: a topic names a dead-letter topic that
	// does not exist (or no longer does).
	ErrDeadLetterTopicNotFound = errors.New("meta: dead-letter topic not found")
	ErrPartitionNotFound       = errors.New("meta: partition not found")
	ErrMemberNotFound          = errors.New("meta: member not found")
	ErrMemberInUse             = errors.New("meta: member still owns or targets partitions")
	// ErrMemberLeftVoters: the decommission of a member that left the
	// voters cannot be cancelled: its raft id may never vote again, so
	// it could not follow the metastore as a member that receives
	// partitions.
	ErrMemberLeftVoters = errors.New("meta: member left the voters")
	// ErrMemberNotReceiving: a new partition placed on a member that is
	// dead or draining.
	ErrMemberNotReceiving = errors.New("meta: member dead or draining")
	ErrUserExists         = errors.New("meta: user already exists")
	// ErrUserNameCase: a create whose name another user's differs from
	// only in case (PutUser.NameFoldChecked); it is an ErrUserExists.
	ErrUserNameCase = fmt.Errorf("%w in other case", ErrUserExists)
	ErrUserNotFound = errors.New("meta: user not found")
	ErrUserIsRoot   = errors.New("meta: the root user cannot be deleted or regranted, and no existing user becomes root")
	// ErrUserChanged: a change checked against a user that was deleted
	// and created again under its name before the change applied.
	ErrUserChanged  = errors.New("meta: user changed since the change was checked")
	ErrPeerExists   = errors.New("meta: peer already a voter")
	ErrPeerNotFound = errors.New("meta: peer not found")
	ErrRaftIDReused = errors.New("meta: raft id belonged to a removed peer and may not be reused")
	ErrTooFewVoters = errors.New("meta: removal would leave fewer voters than the minimum")
	// ErrQuorumAtRisk: a decommission's removal would leave fewer live
	// voters than the new configuration's quorum.
	ErrQuorumAtRisk      = errors.New("meta: removal would leave too few live voters for a quorum")
	ErrUnknownConfChange = errors.New("meta: unknown configuration change kind")
	// ErrFanoutRole: an attach breaks a role rule of fan-out (depth 1,
	// one parent, not its own child, not attached twice), or dead letters
	// would run along a fan-out link (a child's to its parent, a
	// parent's to its child) or reach a delay child.
	ErrFanoutRole = errors.New("meta: fan-out role conflict")
	// ErrFanoutSchema: a child's schema differs from its parent's, or a
	// change of a child's schema, which its parent manages.
	ErrFanoutSchema = errors.New("meta: fan-out schema conflict")
	// ErrFanoutDelay: a delay the parent's retention does not cover by
	// FanoutRetentionMarginMs (or a retention that would stop covering
	// an attached delay).
	ErrFanoutDelay = errors.New("meta: fan-out delay not covered by the parent's retention")
	// ErrNotAttached: the named topic is not a child of the parent.
	ErrNotAttached = errors.New("meta: not attached")
)

// NotLeaderError names the leader when this node is not it. It matches
// ErrNotLeader under errors.Is.
type NotLeaderError struct {
	// LeaderID is the node id of the current leader, never empty.
	LeaderID string
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("meta: not the leader (leader is %s)", e.LeaderID)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// rejectf wraps a rejection sentinel with what the command found.
func rejectf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// Limit names the bound a LimitError reached.
type Limit uint8

const (
	LimitTopics              Limit = iota + 1 // PlacementLimits.TopicsMax
	LimitPartitionsPerMember                  // PlacementLimits.PartitionsPerNodeMax
	LimitUsers                                // PutUser.UsersMax
	LimitChildren                             // FanoutChildrenMax
	LimitUsersBytes                           // PutUser.UsersBytesMax, SetGrants.UsersBytesMax
)

// LimitError is the rejection of a change that would pass a bound it
// carries: errors.Is(err, ErrLimitReached) holds, and Limit says which
// bound, so that an answer can advise without reading the text.
type LimitError struct {
	Limit Limit
	// Text says what the limit is and what would pass it.
	Text string
}

func (e *LimitError) Error() string        { return ErrLimitReached.Error() + ": " + e.Text }
func (e *LimitError) Is(target error) bool { return target == ErrLimitReached }

// limitf makes a LimitError.
func limitf(limit Limit, format string, args ...any) error {
	return &LimitError{Limit: limit, Text: fmt.Sprintf(format, args...)}
}
