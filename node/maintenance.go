package node

import "fmt"

// scheduleCommitPersist queues a sync of every open log whose committed
// consumer offset changed since it was last persisted.
func (n *Node) scheduleCommitPersist() {
	for _, p := range n.sortedPartitions() {
		if p.log != nil && p.log.CommittedDirty() {
			n.markDirty(p)
		}
	}
}

// applyRetention deletes expired sealed segments of the open logs and
// moves consumer frontiers past what was deleted.
func (n *Node) applyRetention() {
	for _, p := range n.sortedPartitions() {
		t, ok := n.lookupTopic(p.key.topic)
		if !ok || p.log == nil || t.info.RetentionMs == retentionForever {
			continue
		}
		result, err := p.log.ApplyRetention(n.nowMs, t.info.RetentionMs)
		if err != nil {
			n.failLog(p, fmt.Errorf("retention: %w", err))
			continue
		}
		if result.SegmentsDeleted > 0 {
			n.observer.RetentionDeleted(p.key.topic, p.key.index, result.BytesDeleted, result.RecordsDeleted)
		}
		if dropped := p.leases.AdvanceTo(p.log.Oldest()); dropped > 0 {
			n.observer.ConsumerDropped(p.key.topic, p.key.index, dropped)
		}
	}
}

// closeIdleLogs closes logs unused for IdleLogCloseMs; they reopen on
// demand. Their lease tables stay in memory.
func (n *Node) closeIdleLogs() {
	closed, err := n.store.CloseIdle(n.nowMs, n.cfg.IdleLogCloseMs)
	if err != nil {
		n.observer.Event("idle-close-failed", err.Error())
	}
	for _, dir := range closed {
		for _, p := range n.sortedPartitions() {
			if p.dir == dir {
				p.log = nil
			}
		}
	}
}

// listMembers describes the members the metastore knows, with how many
// partitions each owns and how many it is moving away.
func (n *Node) listMembers() MembersResult {
	state := n.meta.State()
	owned, outbound := map[string]int{}, map[string]int{}
	for _, record := range state.Topics() {
		for _, a := range record.Assignments {
			owned[a.Owner]++
			if a.Target != "" {
				outbound[a.Owner]++
			}
		}
	}
	result := MembersResult{Members: []Member{}}
	for _, m := range state.Members() {
		status := "dead"
		if m.Alive {
			status = "alive"
		}
		result.Members = append(result.Members, Member{ID: m.ID, Addr: m.HTTPAddr, Status: status,
			Draining: m.Draining, OwnedPartitions: owned[m.ID], OutboundMoves: outbound[m.ID]})
	}
	return result
}
