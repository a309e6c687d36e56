package node

import (
	"errors"
	"fmt"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

// The source side of a move: it answers the destination's MoveStatus,
// MoveRead and MoveFreeze from the partition's log, refuses writes while
// frozen, asks for the move's abort when a freeze outlives its TTL, and
// lets go of the partition when ownership moves (reconcileMoves).

// writable reports whether this node may accept writes now: its own
// heartbeat was applied less than half of MemberDeadAfterMs ago (on its
// own clock) and it is not marked dead. A node cut off from the
// metastore stops writing before the leader can declare it dead and let
// another node take its partitions over (force-promote).
func (n *Node) writable() error {
	if err := n.writeFence(); err != nil {
		return err
	}
	return n.diskLow()
}

// writeFence is writable's check of the node's standing in the
// metastore, which readiness shares (Serving): a node that may not write
// now is not ready either. Its member must be known by this data
// directory (datadir.go), alive, and heard from lately.
func (n *Node) writeFence() error {
	member, ok := n.meta.State().Member(n.cfg.NodeID)
	if err := n.otherDataDirOf(member, ok); err != nil {
		return err
	}
	switch {
	case !ok || !member.Alive:
		return msg.Unavailable("node %s is not an alive member; retry on another node", n.cfg.NodeID)
	case member.Incarnation != n.incarnation && (n.nowMs-member.LastHeartbeatMs >= n.cfg.MemberDeadAfterMs/2 || member.LastHeartbeatMs > n.nowMs):
		// The stamp is an earlier start's: stale, or ahead of this start's
		// clock (set back across the restart), it says nothing of this
		// start's contact with the metastore.
		chaos.Reached(chaos.MarkNodeWriteFenced)
		return msg.Unavailable("node %s started again and waits for the metastore to apply its first heartbeat; retry on another node", n.cfg.NodeID)
	case n.nowMs-member.LastHeartbeatMs >= n.cfg.MemberDeadAfterMs/2:
		chaos.Reached(chaos.MarkNodeWriteFenced)
		return msg.Unavailable("node %s lost contact with the metastore; retry on another node", n.cfg.NodeID)
	}
	return nil
}

// frozen reports whether partition index of t is frozen here. A
// partition moving from here when the node started has had its state
// since then, frozen (freezeMovesFromHere); one without state is not.
func (n *Node) frozen(t *topic, index int) bool {
	p, ok := n.partitions[partitionKey{t.info.Name, index}]
	return ok && p.freeze.Frozen()
}

func frozenError(t *topic, index int) *msg.Error {
	return msg.Unavailable("partition %d of %s is frozen for a move; retry", index, t.info.Name)
}

// sourceState describes what a move copies from p now, for the move to
// target started at startedAtMs: Frozen only if p is frozen for that move,
// every record accepted before the freeze is durable, and its log's
// corruption is known in full (verifyForMove). A status asked
// while those records wait for their sync round is not final: its HWM
// lacks them, and a destination that force-promotes a Frozen answer
// would lose records the producer is about to be acknowledged.
func (n *Node) sourceState(p *partition, log *storage.Log, target string, startedAtMs int64) msg.MoveSourceState {
	frozen := p.freeze.For(target, startedAtMs) && !log.Dirty() && !log.Unverified()
	state := msg.MoveSourceState{HWM: log.HWM(), Committed: min(p.leases.Committed(), log.HWM()), Frozen: frozen,
		Cursors: n.sourceCursors(p)}
	if frozen {
		addLeases(&state, p.leases.Snapshot())
	}
	corruption := log.Corruption()
	state.CorruptCount, state.CorruptOffsets = corruption.Count, corruption.Offsets
	for i, s := range log.Segments() {
		invariant.Check(s.Size >= 0 && (i == 0 || s.Base > state.Segments[i-1].Base),
			"node: segment %d of %s has %d bytes or is out of order", s.Base, p.dir, s.Size)
		state.Segments = append(state.Segments, msg.MoveSegment{Base: s.Base, Size: s.Size, Sealed: s.Sealed})
	}
	return state
}

// addLeases puts a frozen source's queue state into its answer, so that
// the new owner carries on with its delivery counts and acks
// (docs/architecture.md#moves).
func addLeases(state *msg.MoveSourceState, snapshot lease.Snapshot) {
	if snapshot.Committed != state.Committed || len(snapshot.Entries) > msg.MoveLeasesMax {
		return // nothing consistent (or small enough) to carry: the counts start over
	}
	state.NextUndelivered = snapshot.NextUndelivered
	state.Leases = make([]msg.MoveLease, len(snapshot.Entries))
	for i, entry := range snapshot.Entries {
		state.Leases[i] = msg.MoveLease{Offset: entry.Offset, DeliveryCount: entry.DeliveryCount, ReturnedUnseen: entry.ReturnedUnseen}
	}
}

// sourceLog returns the open log of a partition this node owns, for the
// move m names, which its replica must show (msg.MoveOf): a replica that
// does not show it answers Conflict (asked again). One behind may still
// list a deleted creation of the topic, owned here, whose directory the
// node has not yet removed, and a move of the new creation must copy
// nothing of it (the copy would hold the deleted records past the final
// state's high-watermark, and recovery of the installed copy would serve
// them).
func (n *Node) sourceLog(m msg.MoveOf) (*partition, *storage.Log, error) {
	topicName, index := m.Topic, m.Partition
	t, err := n.topic(topicName)
	if err != nil {
		return nil, nil, err
	}
	if index < 0 || index >= t.info.Partitions {
		return nil, nil, invalidPartition(t, index)
	}
	if !n.ownedHere(t, index) {
		return nil, nil, notOwner(t, index)
	}
	creation := meta.TopicIdentity{Incarnation: m.TopicIncarnation, CreatedAtMs: m.TopicCreatedAtMs}
	if a := t.assignments[index]; a.Target != m.Target || a.MoveStartedAtMs != m.MoveStartedAtMs || t.identity != creation {
		return nil, nil, msg.Conflict("partition %d of %s is not moving to %s (move of %d) here yet", index, topicName, m.Target, m.MoveStartedAtMs)
	}
	p := n.partitionOf(t, index)
	log, err := n.openLog(t, p)
	if err != nil {
		return nil, nil, msg.Unavailable("partition %d of %s is unavailable: %v", index, topicName, err)
	}
	if err := n.verifyForMove(p, log); err != nil {
		return nil, nil, msg.Unavailable("partition %d of %s could not be verified for its move: %v; retry", index, topicName, err)
	}
	return p, log, nil
}

func (n *Node) moveStatus(r msg.MoveStatus) (msg.Result, error) {
	p, log, err := n.sourceLog(r.MoveOf)
	if err != nil {
		return nil, err
	}
	return n.sourceState(p, log, r.Target, r.MoveStartedAtMs), nil
}

func (n *Node) moveRead(r msg.MoveRead) (msg.Result, error) {
	_, log, err := n.sourceLog(r.MoveOf)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n.cfg.Log.ChunkBytesMax)
	read, err := log.ReadChunk(r.Base, r.Position, buf)
	if errors.Is(err, storage.ErrNoSegment) || errors.Is(err, storage.ErrChunkPosition) {
		return nil, msg.Gone("segment %d at %d is gone from partition %d of %s (retention?): %v", r.Base, r.Position, r.Partition, r.Topic, err)
	}
	if err != nil {
		return nil, msg.Unavailable("read of partition %d of %s failed: %v", r.Partition, r.Topic, err)
	}
	return msg.MoveChunk{Data: buf[:read]}, nil
}

// moveFreeze freezes the partition for the move to r.Target. The answer
// leaves once every record accepted before the freeze is durable: with
// unsynced records pending it waits for this Ready's sync round.
func (n *Node) moveFreeze(id msg.RequestID, r msg.MoveFreeze) {
	p, log, err := n.sourceLog(r.MoveOf)
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	if n.beginFreeze(p, r.Target, r.MoveStartedAtMs) {
		// A new freeze, or one held since a restart for a move this
		// replica had not yet seen replaced: from now on it is this move's.
		chaos.Reached(chaos.MarkNodePartitionFrozen)
		n.observer.Event("partition-frozen", fmt.Sprintf("%s for the move to %s", p.dir, r.Target))
	}
	if log.Dirty() {
		p.freeze.Wait(id)
		return
	}
	n.reply(id, n.sourceState(p, log, r.Target, r.MoveStartedAtMs), nil)
}

// answerFreezes answers the freezes that waited for p's sync round.
func (n *Node) answerFreezes(p *partition) {
	// Records appended while the round was in flight are not durable yet:
	// the next round, which covers them, answers.
	if !p.freeze.Waiting() || p.log == nil || p.log.Dirty() {
		return
	}
	state := n.sourceState(p, p.log, p.freeze.Target(), p.freeze.MoveStartedAtMs())
	for _, id := range p.freeze.TakeWaiting() {
		n.reply(id, state, nil)
	}
}

// beginFreeze freezes p for the move to target (movesource.Freeze.Begin,
// whose report it returns) and keeps the set of frozen partitions.
func (n *Node) beginFreeze(p *partition, target string, moveStartedAtMs int64) bool {
	begun := p.freeze.Begin(target, moveStartedAtMs, n.nowMs)
	if p.freeze.Frozen() {
		n.frozenPartitions[p.key] = p
	} else {
		delete(n.frozenPartitions, p.key)
	}
	return begun
}

// endFreeze ends p's freeze, which holds, and reports how long it held.
func (n *Node) endFreeze(p *partition) {
	n.moveObserver.FreezeEnded(p.freeze.End(n.nowMs))
	delete(n.frozenPartitions, p.key)
}

// frozenInKeyOrder lists the frozen partitions in key order.
func (n *Node) frozenInKeyOrder() []*partition {
	invariant.Costly(n.checkFrozen)
	if len(n.frozenPartitions) == 0 {
		return nil
	}
	return sortedValues(n.frozenPartitions)
}

// checkFrozen verifies that the frozen set holds exactly the tracked
// partitions whose freeze holds.
func (n *Node) checkFrozen() error {
	frozen := 0
	for _, p := range n.sortedPartitions() {
		if !p.freeze.Frozen() {
			continue
		}
		frozen++
		if n.frozenPartitions[p.key] != p {
			return fmt.Errorf("node: %s is frozen but not in the frozen set", p.dir)
		}
	}
	if frozen != len(n.frozenPartitions) {
		return fmt.Errorf("node: the frozen set holds %d partitions, %d are frozen", len(n.frozenPartitions), frozen)
	}
	return nil
}

// expireFreezes asks for the abort of moves whose freeze outlived its
// TTL, again every proposal timeout until it applies (a leader change may
// lose the proposal); the partition resumes writes when the abort applies.
// It looks at the frozen partitions only: a walk over every partition at
// every tick took a tenth to a fifth of a busy node's CPU with 20,000
// partitions.
func (n *Node) expireFreezes() {
	for _, p := range n.frozenInKeyOrder() {
		if chaos.Planted(chaos.BugFreezeTTLIgnored) || !p.freeze.Expire(n.nowMs, n.cfg.Moves.FreezeTTLMs, n.cfg.ProposalTimeoutMs) {
			continue
		}
		chaos.Reached(chaos.MarkNodeFreezeExpired)
		n.observer.Event("freeze-expired", fmt.Sprintf("%s: the move to %s did not complete; aborting it", p.dir, p.freeze.Target()))
		abort := meta.AbortMove{Topic: p.key.topic, Partition: p.key.index, ExpectedTarget: p.freeze.Target(), ExpectedStartedAtMs: p.freeze.MoveStartedAtMs(),
			ExpectedCreation: meta.Expecting(n.creationOf(p.key.topic))}
		if !n.propose(0, proposalMove, p.key.topic, abort) {
			// No leader to propose to (this node restarted, or stands for
			// election): ask again once one is likely known, not a whole
			// proposal timeout later, while the partition refuses writes.
			p.freeze.AbortRefused(n.nowMs, n.electionTimeoutMs(), n.cfg.ProposalTimeoutMs)
		}
	}
}

// FrozenPartition is a partition this node keeps frozen for a move.
type FrozenPartition struct {
	Topic     string
	Partition int
	Target    string
}

// FrozenPartitions lists the partitions frozen here, sorted (the
// simulator checks that none of them accepts a write).
func (n *Node) FrozenPartitions() []FrozenPartition {
	var out []FrozenPartition
	for _, p := range n.frozenInKeyOrder() {
		out = append(out, FrozenPartition{Topic: p.key.topic, Partition: p.key.index, Target: p.freeze.Target()})
	}
	return out
}

// AcceptsWrites reports whether this node would append to the partition
// now: it owns it in its replica, it is not frozen, and the node is
// writable. The simulator's single-owner checker asks every node after
// every step: at most one may answer true. It makes localWriteRefusal's
// checks in the same order but builds no error for a partition owned
// elsewhere or frozen, the usual answers.
func (n *Node) AcceptsWrites(topicName string, index int) bool {
	t, ok := n.lookupTopic(topicName)
	if !ok || index < 0 || index >= t.info.Partitions {
		return false
	}
	accepts := n.ownedHere(t, index) && !n.frozen(t, index) && n.writable() == nil
	invariant.Costly(func() error {
		if refusal := n.localWriteRefusal(t, index); accepts != (refusal == nil) {
			return fmt.Errorf("node: AcceptsWrites says %t for %s/%d, localWriteRefusal %v", accepts, topicName, index, refusal)
		}
		return nil
	})
	return accepts
}

// verifyForMove scans one more of the segments of log that its recovery
// took from their index files (storage.Log.VerifySegments) at each move
// request of the partition, so no request holds the loop for more than
// one segment's read, and the copy's reads (a chunk at a time, many a
// segment) have verified them all long before the copy ends. The copy
// carries exactly the corruption the source knows, and a destination
// refuses a copy with more, so damage the medium did since the index
// files were written must be known first: sourceState reports no frozen
// (final) state while a segment is unverified.
func (n *Node) verifyForMove(p *partition, log *storage.Log) error {
	if !log.Unverified() {
		return nil
	}
	before := log.Corruption().Count
	if err := log.VerifySegments(verifySegmentsPerMoveRequest); err != nil {
		return err
	}
	if after := log.Corruption().Count; after != before {
		n.observer.Event("log-verified", fmt.Sprintf("%s: a move's verification found %d corrupt records its index files did not show (now %d in all)",
			p.dir, after-before, after))
	}
	return nil
}
