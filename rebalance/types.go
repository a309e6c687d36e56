package rebalance

// MaxInFlightMovesDefault is the bound on moves in flight of
// docs/architecture.md#the-planner: enough to drain a node at a useful pace,
// few enough that copies do not crowd out produce and consume traffic.
const MaxInFlightMovesDefault = 8

// MaxInFlightMovesLimit is the largest MaxInFlightMoves that Validate
// accepts. Every move copies a whole partition while it serves traffic, so
// a bound above this is a configuration mistake, not a wish.
const MaxInFlightMovesLimit = 1024

// Input is one snapshot of the placement, read on the raft leader after a
// barrier. Plan does not modify it and does not care about its order.
type Input struct {
	// Partitions lists every partition of every topic. Invariant (checked
	// by Validate): no (Topic, Index) appears twice.
	Partitions []Partition
	// Members lists every member. Invariant (checked by Validate): no ID
	// appears twice. A partition may name an id that is not listed; the
	// planner treats it as down.
	Members []Member
	// MaxInFlightMoves bounds the partitions that have a Target, counting
	// the ones Plan starts. Invariant: 1 <= MaxInFlightMoves <=
	// MaxInFlightMovesLimit.
	MaxInFlightMoves int
	// Apart lists, for some partitions, the nodes they should not move
	// to: for a fan-out child's partition p, where its parent's partition
	// p is (owner and target); for a parent's partition p, where its
	// children's partitions p are. A move prefers a partition it keeps
	// apart (docs/api.md#fan-out-children); it never stops a move.
	Apart map[PartitionRef][]string
	// Counterparts lists, for the same partitions, the partitions of the
	// other side (a child's partition p: its parent's partition p; a
	// parent's: its children's partitions p): when Plan moves one, it
	// adds the destination to their Apart, so that a plan does not take a
	// pair to one node in two moves (a joining node took a parent's and
	// its child's partition p together: upgrade audit). Plan writes
	// Apart's lists of them; nil without fan-out.
	Counterparts map[PartitionRef][]PartitionRef
}

// PartitionRef names a partition.
type PartitionRef struct {
	Topic string
	Index int
}

// Partition is the placement of one partition, as meta.Assignment holds it.
type Partition struct {
	// Topic and Index name the partition. Invariant: Topic is not empty
	// and Index >= 0.
	Topic string
	Index int
	// Owner serves the partition now. Invariant: not empty.
	Owner string
	// Target is where the partition is moving; empty when it is stable.
	// Invariant: never equal to Owner.
	Target string
}

// Member is a node as the planner sees it.
type Member struct {
	// ID is the node id. Invariant: not empty.
	ID string
	// Alive is false once the leader marked the member dead.
	Alive bool
	// Draining is set while the member is being decommissioned.
	Draining bool
	// Resting is set by the leader for a member that is alive and not
	// draining but whose last moves in failed (the node's cooling-off of
	// a destination, docs/architecture.md#the-planner), or whose disk is
	// under its reserve: it takes no new partition until the rest ends or
	// it has room, and keeps its own.
	Resting bool
}

// Change starts a move: set the Target of Topic/Index, owned by From, to
// To. The node proposes meta.SetTarget with ExpectedOwner From, so a plan
// computed on a stale snapshot fails the guard instead of acting.
type Change struct {
	Topic string
	Index int
	// From is the partition's owner. Invariant: alive, and not To.
	From string
	// To is the new target. Invariant: a receiver (alive, not draining).
	To string
}

// Abort cancels a move in flight: clear the Target of Topic/Index if it is
// still Target (meta.AbortMove with ExpectedTarget Target).
type Abort struct {
	Topic  string
	Index  int
	Owner  string
	Target string
	// Reason says why the move has no point any more.
	Reason AbortReason
}

// AbortReason says why a move in flight should be aborted.
type AbortReason string

const (
	// AbortTargetDown: the target is not alive, or no longer a member.
	AbortTargetDown AbortReason = "target-down"
	// AbortTargetDraining: the target is draining while the owner is alive.
	AbortTargetDraining AbortReason = "target-draining"
)

// Result is what Plan decided. Both lists are sorted by (Topic, Index) and
// no partition appears in both.
type Result struct {
	// Changes are the moves to start. Invariant: the partitions with a
	// Target plus len(Changes) never exceed MaxInFlightMoves, unless the
	// input already did, in which case Changes is empty.
	Changes []Change
	// Aborts are the moves in flight to cancel.
	Aborts []Abort
}
