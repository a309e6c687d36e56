package node

import (
	"fmt"

	"narad/chaos"
	"narad/msg"
)

// freezeMovesFromHere freezes, at start, every partition moving from
// here, for its move: a source restarted during a move may have answered
// a freeze before (the destination may hold its final state), so it stays
// frozen until the move completes or aborts, whether or not a request
// ever touches the partition. Its state is built now, so the freeze's TTL
// runs from the start and expireFreezes asks for the move's abort even if
// no request comes: a move whose destination cannot finish would
// otherwise hold the partition, and a place among the moves in flight,
// until one did.
func (n *Node) freezeMovesFromHere() {
	for _, m := range n.meta.State().Moves() {
		if t, ok := n.lookupTopic(m.Topic); ok && m.Owner == n.cfg.NodeID && m.Partition < t.info.Partitions {
			n.beginFreeze(n.partitionOf(t, m.Partition), m.Target, m.StartedAtMs)
		}
	}
}

// reconcileMoves brings the node's partitions in line with the applied
// placement: a partition whose move target changed is unfrozen (and the
// polls that may take its records told, once per topic), and one this
// node no longer owns is let go (the flip: its log is closed, its queue
// state dropped; the directory stays until the stale-copy sweep proves
// it may go).
func (n *Node) reconcileMoves() {
	var unfrozen partitionsToTell
	for _, p := range n.sortedPartitions() {
		a, ok := n.meta.State().Assignment(p.key.topic, p.key.index)
		if !ok {
			continue // the topic is gone: dropTopicState handles it
		}
		if a.Owner != n.cfg.NodeID {
			n.letGo(p, a.Owner)
			continue
		}
		if p.freeze.Outdated(a.Target, a.MoveStartedAtMs) {
			chaos.Reached(chaos.MarkNodePartitionUnfrozen)
			target := p.freeze.Target()
			n.endFreeze(p)
			n.observer.Event("partition-unfrozen", fmt.Sprintf("%s: the move to %s ended without a flip", p.dir, target))
			unfrozen.add(p.key.topic, p.key.index) // its records are served again: polls parked here or elsewhere may take them
		}
	}
	n.tellPartitions(&unfrozen)
	n.driveMoves()
}

// releasePinnedPolls takes off this node the long polls pinned to a
// partition that moved away: nothing here will wake them, while the new
// owner may serve them at once (a move carries no reservation). A
// client's poll is served again with what is left of its wait (it goes
// to the new owner); a peer's is answered with nothing at once, and its
// client polls again, at the new owner.
func (n *Node) releasePinnedPolls(key partitionKey) {
	for _, w := range n.waiters.pinnedTo(key.topic, key.index) { // a copy: a poll handled again may park again
		n.waiters.remove(w.id)
		n.observer.ConsumeWait(key.topic, "moved", n.nowMs-w.parkedAtMs)
		if localOnly(w.id) {
			n.reply(w.id, msg.ConsumeResult{Messages: []msg.Message{}, Batch: w.request.Max > 0}, nil)
			continue
		}
		again := w.request
		again.WaitMs = max(0, w.deadlineMs-n.nowMs)
		n.handle(w.id, again)
	}
}

// letGo stops serving a partition that moved to newOwner.
func (n *Node) letGo(p *partition, newOwner string) {
	chaos.Reached(chaos.MarkNodePartitionFlippedAway)
	if p.freeze.Frozen() {
		n.endFreeze(p)
	}
	n.observer.Event("partition-moved-away", fmt.Sprintf("%s now owned by %s", p.dir, newOwner))
	n.failDependents(p, msg.NotOwner("partition %d of %s moved to %s", p.key.index, p.key.topic, newOwner))
	n.releasePinnedPolls(p.key)
	if err := n.store.Close(p.dir); err != nil && !isClosed(err) {
		n.observer.Event("log-close-failed", fmt.Sprintf("%s: %v", p.dir, err))
	}
	n.removePartition(p)
	n.sweeper.candidates[p.key] = true
}
