package rebalance

import "errors"

// Errors Validate returns for an Input that Plan refuses. Each is wrapped
// with the values that broke the rule; test with errors.Is.
var (
	// ErrMaxInFlightMovesInvalid: MaxInFlightMoves is outside
	// [1, MaxInFlightMovesLimit].
	ErrMaxInFlightMovesInvalid = errors.New("rebalance: max in-flight moves out of range")
	// ErrPartitionInvalid: a partition has an empty topic or owner, a
	// negative index, or a target equal to its owner.
	ErrPartitionInvalid = errors.New("rebalance: invalid partition")
	// ErrPartitionDuplicate: two partitions have the same topic and index.
	ErrPartitionDuplicate = errors.New("rebalance: duplicate partition")
	// ErrMemberInvalid: a member has an empty id.
	ErrMemberInvalid = errors.New("rebalance: invalid member")
	// ErrMemberDuplicate: two members have the same id.
	ErrMemberDuplicate = errors.New("rebalance: duplicate member")
)
