package node

import (
	"errors"

	"narad/chaos"
	"narad/node/lease"
	"narad/storage"
)

func (n *Node) ack(r Ack) (any, error) {
	t, err := n.topic(r.Topic)
	if err != nil {
		return nil, err
	}
	if len(r.Handles) == 0 || len(r.Handles) > AckBatchHandlesMax {
		return nil, Invalid("an ack carries 1 to %d receipt handles, got %d", AckBatchHandlesMax, len(r.Handles))
	}
	result := AckResult{Results: make([]AckItemResult, len(r.Handles)), Batch: r.Batch}
	for i, handle := range r.Handles {
		result.Results[i] = AckItemResult{Handle: handle, Err: n.ackOne(t, handle, r.Action)}
	}
	// An ack frees an in-flight slot, a nack releases a record: either may
	// serve a parked long poll (a released record, one on another node).
	if r.Action == AckNack {
		n.notifySubscribers(t.info.Name)
	}
	n.wake(t.info.Name)
	if !r.Batch {
		return result, result.Results[0].Err
	}
	chaos.Reached("node-batch-ack")
	return result, nil
}

func (n *Node) ackOne(t *topic, handle string, action AckAction) error {
	index, offset, nonce, err := lease.VerifyHandle(n.cfg.HandleKey, t.info.Name, handle) // nonce 0 when forged: matches no reservation
	if err != nil {
		return Invalid("receipt handle is malformed")
	}
	if index >= t.info.Partitions {
		return Gone("receipt handle is stale")
	}
	if !n.ownedHere(t, index) {
		return notOwner(t, index)
	}
	p := n.partitionOf(t, index)
	if p.frozenFor != "" && action == AckCommit {
		return frozenError(t, index)
	}
	log, err := n.openLog(t, p)
	if err != nil {
		return Unavailable("partition %d of %s is unavailable: %s", index, t.info.Name, storageCause(err))
	}
	err = n.applyAck(t, p, log, offset, nonce, action)
	n.observer.Acked(t.info.Name, action, ackOutcome(err))
	if errors.Is(err, lease.ErrAcked) {
		if chaos.Planted(chaos.BugRepeatedAckStale) {
			return Gone("receipt handle is stale (planted bug)")
		}
		return nil // a retried ack whose first attempt landed: it says so
	}
	if err != nil {
		return err
	}
	if action == AckCommit {
		n.ackObserver.AckApplied(t.info.Name, index, offset, handle)
	}
	n.noteCommitted(p, log)
	return nil
}

// applyAck applies one handle to the lease table. An ack of a record
// already acknowledged (committed or acked ahead) returns lease.ErrAcked,
// which the caller answers as success; extend and nack of one are stale.
// A record below retention is stale whatever happened to it: the table
// cannot tell an acked record there from one retention dropped unacked.
func (n *Node) applyAck(t *topic, p *partition, log *storage.Log, offset, nonce uint64, action AckAction) error {
	if offset < log.Oldest() {
		return Gone("receipt handle is stale: offset %d aged out of retention (oldest retained: %d)", offset, log.Oldest())
	}
	var err error
	switch action {
	case AckCommit:
		err = p.leases.Ack(offset, nonce, n.nowMs)
	case AckExtend:
		_, err = p.leases.Extend(offset, nonce, n.nowMs, t.info.VisibilityTimeoutMs)
	case AckNack:
		err = p.leases.Nack(offset, nonce, n.nowMs)
	default:
		assert(false, "node: unknown ack action %d", action)
	}
	switch {
	case errors.Is(err, lease.ErrAcked):
		return err
	case errors.Is(err, lease.ErrStale) && action != AckCommit && p.leases.Acknowledged(offset):
		return Gone("receipt handle is stale: the record was already acked")
	case errors.Is(err, lease.ErrStale):
		return Gone("receipt handle is stale: the lease expired or was re-reserved")
	case errors.Is(err, lease.ErrAckedAheadFull):
		return Unavailable("acked-ahead set is full; head of queue may be stuck")
	case err != nil:
		return Internal("ack failed: %v", err)
	}
	return nil
}

func ackOutcome(err error) string {
	if errors.Is(err, lease.ErrAcked) {
		return "repeat"
	}
	switch CodeOf(err) {
	case CodeGone:
		return "stale"
	case CodeUnavailable:
		return "cap"
	}
	if err != nil {
		return "error"
	}
	return "ok"
}
