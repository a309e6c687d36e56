package node

import (
	"errors"

	"narad/chaos"
	"narad/invariant"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

func (n *Node) ack(r msg.Ack) (msg.Result, error) {
	t, err := n.topic(r.Topic)
	if err != nil {
		return nil, err
	}
	if len(r.Handles) == 0 || len(r.Handles) > msg.AckBatchHandlesMax {
		return nil, msg.Invalid("an ack carries 1 to %d receipt handles, got %d", msg.AckBatchHandlesMax, len(r.Handles))
	}
	result := msg.AckResult{Results: make([]msg.AckItemResult, len(r.Handles)), Batch: r.Batch}
	var applied localAcks
	for i, handle := range r.Handles {
		index, freed, err := n.ackOne(t, handle, r.Action)
		result.Results[i] = msg.AckItemResult{Handle: handle, Err: err}
		applied.note(index, freed)
	}
	n.afterLocalAcks(t, r.Action, applied)
	if !r.Batch {
		return result, result.Results[0].Err
	}
	chaos.Reached(chaos.MarkNodeBatchAck)
	return result, nil
}

// localAcks is what the handles of one ack applied here did.
type localAcks struct {
	// partitions are those of the handles that named a partition owned
	// here, in the order of the handles, a partition listed again only
	// after another: at most msg.AckBatchHandlesMax.
	partitions []int
	// freed is set once a handle freed a record a cap held back.
	freed bool
}

// note adds what one handle did (ackOne): index is msg.PartitionNone
// when it reached no partition owned here.
func (a *localAcks) note(index int, freed bool) {
	a.freed = a.freed || freed
	if index != msg.PartitionNone && (len(a.partitions) == 0 || a.partitions[len(a.partitions)-1] != index) {
		a.partitions = append(a.partitions, index)
	}
}

// afterLocalAcks serves what acks applied here may have made deliverable:
// a nack or return releases its record, and an ack that freed a slot of a
// partition its caps held back (freed) lets its next record go. Either
// may answer a poll parked here (woken: the unpinned ones and those
// pinned to the acks' partitions, the only ones whose records an ack
// changes) or on another node (Notify to the subscribers); a nack may
// also exhaust its record.
func (n *Node) afterLocalAcks(t *topic, action msg.AckAction, applied localAcks) {
	if action == msg.AckExtend {
		return
	}
	released := action == msg.AckNack || action == msg.AckReturn
	if released || applied.freed {
		n.notifySubscribers(t.info.Name)
	}
	if released {
		n.sendDeadLetters()
	}
	if len(applied.partitions) > 0 {
		n.wakePartitions(t.info.Name, applied.partitions)
	}
	n.tellHeldBack() // acks at a frontier may have taken the node under its lease budget
}

// ackOne applies one handle of an ack; index is the partition it named
// when owned here (msg.PartitionNone before that is known: nothing here
// changed), and freed reports that it made a record deliverable that a
// cap held back (an in-flight slot, or room in the acked-ahead set).
func (n *Node) ackOne(t *topic, handle string, action msg.AckAction) (index int, freed bool, err error) {
	index, offset, nonce, err := n.handles.Verify(t.info.Name, handle) // nonce 0 when forged: matches no reservation
	if err != nil {
		return msg.PartitionNone, false, msg.Invalid("receipt handle is malformed")
	}
	if index >= t.info.Partitions {
		if n.meta.IsLeader() { // the replica that knows every growth: a larger topic's, deleted since, or forged
			return msg.PartitionNone, false, msg.Gone("receipt handle is stale: topic %s has no partition %d", t.info.Name, index)
		}
		// Partitions only grow: the handle names one this replica has not
		// applied yet. 410 would tell the client its ack can never land,
		// while the lease may be live at the owner. (An ack from a client
		// goes to the leader instead, ackRoute; this is an ack forwarded
		// to a leader deposed meanwhile, or one with no leader known.)
		return msg.PartitionNone, false, msg.Unavailable("partition %d of %s is not known to this node yet; retry", index, t.info.Name)
	}
	if !n.ownedHere(t, index) {
		return msg.PartitionNone, false, notOwner(t, index)
	}
	freed, err = n.ackOwned(t, n.partitionOf(t, index), handle, offset, nonce, action)
	return index, freed, err
}

// ackOwned applies one handle, of the record at offset of p, a partition
// owned here; freed is as for ackOne.
func (n *Node) ackOwned(t *topic, p *partition, handle string, offset, nonce uint64, action msg.AckAction) (freed bool, err error) {
	index := p.key.index
	if p.freeze.Frozen() && action == msg.AckCommit {
		return false, frozenError(t, index)
	}
	log, err := n.openLog(t, p)
	if err != nil {
		return false, msg.Unavailable("partition %d of %s is unavailable: %s", index, t.info.Name, storageCause(err))
	}
	deliverable := p.leases.Deliverable(log.HWM())
	if action == msg.AckCommit && chaos.Planted(chaos.BugAckAnsweredNotApplied) && nonce%3 == 0 {
		if p.leases.Nack(offset, nonce, n.nowMs) == nil { // planted: answered 204, released to be delivered again
			n.wakePartitions(t.info.Name, []int{index})
			return false, nil
		}
	}
	err = n.applyAck(t, p, log, offset, nonce, action)
	n.observer.Acked(t.info.Name, action, ackOutcome(err))
	if errors.Is(err, lease.ErrAcked) {
		if chaos.Planted(chaos.BugRepeatedAckStale) {
			return false, msg.Gone("receipt handle is stale (planted bug)")
		}
		return false, nil // a retried ack whose first attempt landed: it says so
	}
	if err != nil {
		return false, err
	}
	if action == msg.AckCommit {
		n.ackObserver.AckApplied(t.info.Name, index, offset, handle)
	}
	n.noteCommitted(p, log)
	return !deliverable && p.leases.Deliverable(log.HWM()), nil
}

// applyAck applies one handle to the lease table. An ack of a record
// already acknowledged (committed or acked ahead) returns lease.ErrAcked,
// which the caller answers as success; extend and nack of one are stale.
// A record below retention is stale whatever happened to it: the table
// cannot tell an acked record there from one retention dropped unacked.
func (n *Node) applyAck(t *topic, p *partition, log *storage.Log, offset, nonce uint64, action msg.AckAction) error {
	if offset < log.Oldest() {
		return msg.Gone("receipt handle is stale: offset %d aged out of retention (oldest retained: %d)", offset, log.Oldest())
	}
	if offset >= log.HWM() { // no record there was ever delivered: a forged or garbled handle
		return msg.Gone("receipt handle is stale: offset %d is past the end of partition %d (next offset: %d)", offset, p.key.index, log.HWM())
	}
	var err error
	switch action {
	case msg.AckCommit:
		err = p.leases.Ack(offset, nonce, n.nowMs)
	case msg.AckExtend:
		_, err = p.leases.Extend(offset, nonce, n.nowMs, t.info.VisibilityTimeoutMs)
		n.noteLeaseDeadlines(p)
	case msg.AckNack:
		err = p.leases.Nack(offset, nonce, n.nowMs)
	case msg.AckReturn:
		err = p.leases.Return(offset, nonce, n.nowMs)
	default:
		invariant.Broken("node: unknown ack action %d", action)
	}
	switch {
	case errors.Is(err, lease.ErrAcked):
		return err
	case errors.Is(err, lease.ErrStale) && action != msg.AckCommit && p.leases.Acknowledged(offset):
		return msg.Gone("receipt handle is stale: the record was already acked")
	case errors.Is(err, lease.ErrStale) && nonce == 0: // its tag did not verify here (lease.Handles.Verify)
		return msg.Gone("receipt handle is stale: it was issued before the partition moved or its owner restarted (or is not a handle of this topic); the record will be delivered again")
	case errors.Is(err, lease.ErrStale):
		return msg.Gone("receipt handle is stale: the lease expired or was re-reserved")
	case errors.Is(err, lease.ErrAckedAheadFull):
		return msg.Unavailable("acked-ahead set is full; head of queue may be stuck")
	case err != nil:
		return msg.Internal("ack failed: %v", err)
	}
	return nil
}

func ackOutcome(err error) string {
	if errors.Is(err, lease.ErrAcked) {
		return "repeat"
	}
	switch msg.CodeOf(err) {
	case msg.CodeGone:
		return "stale"
	case msg.CodeUnavailable:
		return "cap"
	}
	if err != nil {
		return "error"
	}
	return "ok"
}
