// Package rebalance holds the rebalance planner
// (docs/architecture.md#the-planner): a pure function from a snapshot of the
// placement (every partition's Owner and Target), the members (alive,
// draining) and the bound on moves in flight, to the moves to start and the
// moves to abort. It is part of the deterministic core: no goroutines, no
// clock, no randomness, no I/O, and its output does not depend on the order
// of its input.
//
// # What it owns
//
// The rules of where partitions should live: which nodes receive, what
// share each receiver gets, which partitions leave, where they go, and when
// a move in flight has become pointless. It owns no state; the metastore
// holds the placement and the node (the raft leader) acts on the result.
//
// # Inputs
//
// Plan takes an Input: partitions (topic, index, owner, target), members
// (id, alive, draining) and MaxInFlightMoves. InputFromState builds one from
// a meta.State. Input order does not matter: Plan sorts partitions by
// (topic, index) and members by id before it looks at them.
//
// # Outputs
//
// A Result: Changes, each "set the target of topic/index, owned by From, to
// To" (the node proposes meta.SetTarget with ExpectedOwner From), and
// Aborts, each "clear the target of topic/index, which is Target"
// (meta.AbortMove with ExpectedTarget Target). Both are sorted by (topic,
// index). The planner is level-triggered: it is meant to be called every
// tick on a fresh snapshot, and a plan that could not be carried out is
// simply computed again.
//
// # The rules
//
// Members fall in four roles. A receiver is alive, not draining and not
// resting. A shedder is alive and draining: it must end with no
// partitions. A resting member is alive and not draining, but the leader
// saw its last moves in fail, or its disk is under its reserve
// (Member.Resting, which the node decides): it receives nothing until
// the rest ends. Anything else is
// down: a member that is not alive, or an id that is not a member at all.
//
// Aborts. A partition with a Target is a move in flight. The planner aborts
// it when its target is down, or when its target is a shedder while its
// owner is alive. A move from a down owner to a shedder is kept: the
// shedder's copy is the partition's only way back to a live node (by
// ForcePromote), after which the shedder sheds it like any other. (A move
// from a down owner whose copy may not be promoted is aborted by its
// destination, not by the planner: node/movedest.)
//
// Placement. A partition is counted where it will be once the moves in
// flight settle: at its Target for a move that is kept, at its Owner for a
// stable partition and for a move being aborted.
//
// The total T counts the partitions placed on a receiver or on a shedder.
// A partition placed on a down node is pinned: it cannot move (the planner
// never moves a dead owner's partition, and a dead node cannot receive), so
// it is left out of T and its node is not a receiver. A partition placed
// on a resting member is pinned likewise: the rest is short, and moving a
// resting node's partitions away would only bring them back after it. A
// move in flight to a resting member is kept (placed there, so pinned):
// the rest stops new moves, it does not undo those that may yet succeed.
// Without the rest, a receiver that heartbeats but cannot take copies (a
// full disk) would get every move its deficit allows, each aborted after
// its restarts, and a drain whose partitions it must take would never end;
// at rest, the others' shares grow and take them. With R receivers,
// base = floor(T/R) and extra = T mod R; the extra receivers that hold the
// most (ties by smaller id) get a share of base+1, the others base. Giving
// the ceiling to the largest loads minimises the number of moves.
//
// Movable partitions are the stable ones (no Target) whose owner is alive:
// all of a shedder's, and up to surplus = load - share of a receiver's.
// A partition in flight, or being aborted, is not movable.
//
// Bound. Every partition with a Target, kept or being aborted, holds one
// of the MaxInFlightMoves slots. The planner starts at most
// MaxInFlightMoves minus that many moves (none when the bound is already
// reached or exceeded).
//
// Order. While slots remain, the planner takes a source (shedders before
// receivers; then the larger number of partitions still to leave; then the
// smaller id) and a destination (the receiver with the largest remaining
// deficit = share - load; then the smaller id). From the source it takes a
// partition of the topic with the most movable partitions on that source
// (ties by smaller topic name), the highest index of that topic, so that a
// node's partitions of one topic spread out rather than leave together;
// except that when that partition should stay apart from the destination
// (Input.Apart: a fan-out child's partition p and its parent's partition
// p), the first partition in that order that need not goes instead, if
// there is one; a move the plan already made counts (Input.Counterparts:
// the destination joins its counterparts' Apart), so one plan does not
// take a pair to one node in two moves. Only which partition moves
// changes, never how many.
//
// # Why it converges (proof sketch)
//
// Call an epoch a stretch of time in which the receivers, the shedders, T
// and the set of pinned partitions do not change. Within an epoch the loads
// change only by the planner's own moves: completing a move keeps the
// partition where it was counted (at its target), and the planner asks for
// an abort only when a target stops being a receiver, which ends the epoch
// (so does an abort the node decides on for its own reasons, such as a
// mover that gave up, and a rest that starts or ends: a resting member is
// not a receiver). A destination that never takes a copy thus ends an
// epoch at every rest: the cluster converges around it while it rests,
// and moves towards it again, to fail, after each rest.
//
// Deficits cover sources. The shares sum to T, the receivers' loads sum to
// T minus the partitions placed on shedders, so the sum of deficits is at
// least the sum of surpluses plus the partitions on shedders. Every source
// partition therefore finds a destination, and a plan stops early only for
// lack of slots or of movable partitions.
//
// Receivers never turn into sources. Let P be "at most extra receivers hold
// more than base". When P holds, every receiver holding more than base
// ranks in the top extra and gets share base+1, so a receiver is a source
// only if it holds more than base+1; a destination is filled to at most its
// share, at most base+1, and the receivers above base stay within the top
// extra, so P still holds after the plan. When P does not hold, every
// ceiling receiver holds more than base (each ranks above a floor receiver
// that does), so the destinations are floor receivers, filled to at most
// base: they never exceed base and so never become sources, and sources
// only shrink. Either way a partition that arrived at a receiver in this
// epoch is never chosen to leave it, so every partition moves at most once
// per epoch, and each plan that has a free slot makes progress until no
// receiver has a surplus and no shedder has a movable partition.
//
// Minimality. Each plan moves only surplus partitions and shedders'
// partitions, each once, to a node that needs it; the ceiling shares go to
// the largest loads, which is the assignment of shares that needs the
// fewest moves (exchanging a ceiling between a larger and a smaller load
// never lowers the surplus sum).
//
// Fixpoint. With every planned change applied as a Target, each source has
// given up exactly its surplus and each destination gained at most its
// deficit, so recomputing finds no surplus (or no slot) and plans nothing.
//
// # Assertions
//
// Cheap checks run always and panic through package invariant, naming what
// broke.
// Built with the "invariants" tag, Plan also checks the whole result against
// its input (checkResult) before returning it.
package rebalance
