package node

import (
	"fmt"
	"strings"

	"narad/chaos"
	"narad/msg"
)

// saveFrontiers opens the closed logs whose frontier moved meanwhile
// (noteFrontier), so that the commit persist that follows writes it.
func (n *Node) saveFrontiers() {
	for _, p := range n.sortedPartitions() {
		if p.frontierUnsaved {
			n.saveFrontier(p)
		}
	}
}

// scheduleCommitPersist queues a sync of every open log whose committed
// consumer offset changed since it was last persisted, a round refused for
// want of room included (committedWriteRefused): each interval retries it.
func (n *Node) scheduleCommitPersist() {
	for _, p := range n.sortedPartitions() {
		if p.log != nil && p.log.CommittedDirty() {
			n.markDirty(p)
		}
	}
}

// committedWriteRefused says, at most once per noSpaceSayEveryMs for the
// partition, that the disk had no room for its committed offset's file
// (storage.SyncRound.CommittedRefused): the first write of each of its
// two files creates it. The offset stays unpersisted (a crash delivers
// the records acknowledged since the last persist again) and the next
// commit persist tries again.
func (n *Node) committedWriteRefused(p *partition, err error) {
	chaos.Reached(chaos.MarkNodeCommittedOffsetRefused)
	if !n.noSpaceSayDue(&p.committedNoSpaceSaidMs) {
		return
	}
	n.observer.Event("committed-offset-write-refused", fmt.Sprintf("%s: the disk has no room for the committed consumer offset's file (%v): "+
		"acknowledged records since its last persist would be delivered again after a crash; written again every %d ms until it has",
		p.dir, err, n.cfg.CommitPersistIntervalMs))
}

// retentionFirstCheckAfterMs is when a node's first retention pass runs
// after its start (at most; a shorter check interval comes first): a
// whole interval, as before, served expired records up to that long
// after a restart, and a node restarting more often never applied
// retention and could fill its disk (retention audit). The few seconds
// let a restarted replica catch up with the metastore first.
const retentionFirstCheckAfterMs = 5_000

// retentionReopensPerPassMax bounds how many closed logs one retention
// pass opens (each open recovers the log on the loop).
const retentionReopensPerPassMax = 4

// applyRetention deletes expired sealed segments of the open logs, and of
// up to retentionReopensPerPassMax closed logs that have sealed segments
// (a partition nobody used since a restart or an idle close would
// otherwise keep its expired data), and moves consumer frontiers past what
// was deleted; then it tells the polls of the partitions whose dropped
// reservations freed a slot, once per topic.
func (n *Node) applyRetention() {
	n.reopenForRetention()
	var told partitionsToTell
	for _, p := range n.sortedPartitions() {
		t, ok := n.lookupTopic(p.key.topic)
		if !ok || p.log == nil || t.info.RetentionMs == retentionForever {
			continue
		}
		n.retain(t, p, &told)
	}
	n.tellPartitions(&told)
}

// reopenForRetention opens closed logs of owned partitions that hold more
// than one segment, starting after the last one it opened.
func (n *Node) reopenForRetention() {
	candidates := n.closedLogsWithSealedSegments()
	for i := range min(len(candidates), retentionReopensPerPassMax) {
		c := candidates[(n.retentionCursor+i)%len(candidates)]
		if _, err := n.openLog(c.topic, c.partition); err != nil {
			n.observer.Event("retention-open-failed", fmt.Sprintf("%s: %v", c.partition.dir, err))
		}
	}
	if len(candidates) > 0 {
		n.retentionCursor = (n.retentionCursor + retentionReopensPerPassMax) % len(candidates)
	}
}

type retentionCandidate struct {
	topic     *topic
	partition *partition
}

func (n *Node) closedLogsWithSealedSegments() []retentionCandidate {
	var out []retentionCandidate
	for _, name := range n.meta.State().TopicNames() {
		t, _ := n.lookupTopic(name)
		if t.info.RetentionMs == retentionForever {
			continue
		}
		for index := range t.info.Partitions {
			dir := PartitionDir(name, index)
			if !n.ownedHere(t, index) || n.store.IsOpen(dir) || !n.retentionMayDelete(t, index) || n.segmentFiles(dir) < 2 {
				continue
			}
			out = append(out, retentionCandidate{topic: t, partition: n.partitionOf(t, index)})
		}
	}
	return out
}

// retentionMayDelete reports whether retention may find a segment to
// delete in the closed log of t's partition index: unless the log closed
// intact, it cannot tell without opening it; if it did, only when the log
// had a sealed segment then whose newest record is now past retention (a
// segment of no record counts as past it, as retention counts it).
func (n *Node) retentionMayDelete(t *topic, index int) bool {
	p, ok := n.partitions[partitionKey{t.info.Name, index}]
	if !ok || !p.closedIntact {
		return true
	}
	return p.closed.Segments >= 2 && p.closed.OldestSegmentTimeMs < n.nowMs-t.info.RetentionMs
}

// segmentFiles counts the segment files of a partition directory.
func (n *Node) segmentFiles(dir string) int {
	names, err := n.fs.List(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			count++
		}
	}
	return count
}

// retain applies t's retention to p's open log, and marks p in told when
// that made a record deliverable.
func (n *Node) retain(t *topic, p *partition, told *partitionsToTell) {
	if p.log.Syncing() {
		p.retentionDeferred = true
		return
	}
	result, err := p.log.ApplyRetention(n.nowMs, t.info.RetentionMs)
	if err != nil {
		n.failLog(p, fmt.Errorf("retention: %w", err))
		return
	}
	if result.SegmentsDeleted > 0 {
		n.observer.RetentionDeleted(p.key.topic, p.key.index, result.BytesDeleted, result.RecordsDeleted)
	}
	deliverable := p.leases.Deliverable(p.log.HWM())
	if dropped := p.leases.AdvanceTo(p.log.Oldest()); dropped > 0 {
		n.observer.ConsumerDropped(p.key.topic, p.key.index, dropped)
	}
	if !deliverable && p.leases.Deliverable(p.log.HWM()) {
		// Dropped reservations freed in-flight slots: parked polls, here
		// and on the nodes subscribed, may take the next record now.
		told.add(p.key.topic, p.key.index)
	}
}

// retainDeferred retains a partition whose retention waited for its
// sync round, which has completed (Advance, which tells told).
func (n *Node) retainDeferred(p *partition, told *partitionsToTell) {
	if !p.retentionDeferred {
		return
	}
	p.retentionDeferred = false
	t, ok := n.lookupTopic(p.key.topic)
	if !ok || p.log == nil || t.info.RetentionMs == retentionForever {
		return
	}
	n.retain(t, p, told)
}

// closeIdleLogs closes logs unused for IdleLogCloseMs; they reopen on
// demand. Their lease tables stay in memory.
func (n *Node) closeIdleLogs() {
	closed, err := n.store.CloseIdle(n.nowMs, n.cfg.IdleLogCloseMs)
	if err != nil {
		n.observer.Event("idle-close-failed", err.Error())
	}
	if len(closed) == 0 {
		return
	}
	for _, p := range n.partitions { //determinism:ok each partition is updated on its own
		if p.log != nil && !n.store.IsOpen(p.dir) {
			n.dropLog(p, err == nil)
		}
	}
}

// listMembers describes the members the metastore knows, with how many
// partitions each owns and how many it is moving away.
func (n *Node) listMembers() msg.MembersResult {
	state := n.meta.State()
	owned, outbound, inbound := map[string]int{}, map[string]int{}, map[string]int{}
	for _, record := range state.Topics() {
		for _, a := range record.Assignments {
			owned[a.Owner]++
			if a.Target != "" {
				outbound[a.Owner]++
				inbound[a.Target]++
			}
		}
	}
	result := msg.MembersResult{Members: []msg.Member{}}
	for _, m := range state.Members() {
		status := "dead"
		if m.Alive {
			status = "alive"
		}
		_, voter := state.PeerByNodeID(m.ID)
		result.Members = append(result.Members, msg.Member{ID: m.ID, Addr: m.HTTPAddr, Status: status,
			Draining: m.Draining, Voter: voter, DiskLow: m.DiskLow, OwnedPartitions: owned[m.ID], OutboundMoves: outbound[m.ID], InboundMoves: inbound[m.ID]})
	}
	return result
}
