package node

import (
	"errors"
	"hash/fnv"

	"narad/chaos"
	"narad/msg"
	"narad/node/route"
	"narad/storage"
)

// produce places the records and appends those this node owns; records
// owned by other nodes travel there (route_produce.go). The reply leaves
// only with the sync round of every touched partition, wherever it is.
func (n *Node) produce(id msg.RequestID, r msg.Produce) {
	t, placements, err := n.placeRecords(r, localOnly(id))
	if err != nil && r.FanoutEpoch == 0 && hasClientRecords(r) { // the records are looked at only on the rare refusal
		n.refusedForDisk(err)
	}
	if err == nil && !localOnly(id) {
		err = checkValidatedSchema(t, r)
	}
	if err == nil && localOnly(id) {
		err = checkPlacedPart(t, r)
	}
	if err == nil && t.info.FanoutDelayMs > 0 && (!localOnly(id) || r.FanoutEpoch != t.attachEpoch) {
		// Only the parent's cursors write a delay child, so no record is
		// visible before it is due: a part forwarded here carries the
		// epoch of the link it was copied for, and a client's part (or a
		// dead letter) that a node forwarded before it applied the attach
		// carries none.
		err = msg.Conflict("direct produce to a delayed child topic is not allowed (topic %q is a delay child of %q)", t.info.Name, t.info.Parent)
	}
	if err == nil && r.FanoutEpoch != 0 && r.FanoutEpoch != t.attachEpoch {
		// A cursor's copy for a link that ended here (detached, the child
		// deleted and created again, or attached again since): the
		// parent's node has not applied that yet, and stops the cursor
		// when it does. Written, it would put the parent's records in a
		// topic that is no longer, or not in that way, its child.
		err = msg.Conflict("topic %q is no longer the fan-out child this copy was made for (attach epoch %016x, the topic's is %016x)",
			t.info.Name, r.FanoutEpoch, t.attachEpoch)
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	n.writePlaced(id, t, r, placements)
}

// writePlaced writes placed records: here when this node owns every
// partition they landed in, else split by owner.
func (n *Node) writePlaced(id msg.RequestID, t *topic, r msg.Produce, placements []msg.Placement) {
	for _, placement := range placements {
		if t.owner(placement.Partition) != n.cfg.NodeID {
			n.produceAcross(id, t, r, placements)
			return
		}
	}
	n.produceLocal(id, t, r, placements)
}

// produceLocal appends records to partitions this node owns and queues the
// reply so that it leaves only with the sync round of every touched
// partition (the driver persists the Ready's Syncs before it sends its
// Replies).
func (n *Node) produceLocal(id msg.RequestID, t *topic, r msg.Produce, placements []msg.Placement) {
	if err := n.openProduceLogs(t, placements); err != nil {
		n.reply(id, nil, err)
		return
	}
	var touched touchedPartitions
	for i, rec := range r.Records {
		p := n.partitionOf(t, placements[i].Partition)
		offset, err := n.append(t, p, rec)
		if err != nil {
			// Records already appended still become durable and visible
			// with their partitions' next sync round; the client retries
			// the whole request (at-least-once allows the duplicates).
			for _, q := range touched.sorted() {
				if q.log != nil { // a failed log was dropped with its records
					n.markDirty(q)
				}
			}
			n.reply(id, nil, err)
			return
		}
		placements[i].Offset = offset
		touched.add(p)
	}
	if touched.more != nil {
		chaos.Reached(chaos.MarkNodeBatchSpansPartitions)
	}
	n.reply(id, msg.ProduceResult{Records: placements, Batch: r.Batch}, nil)
	replyIndex := len(n.replies) - 1
	for _, p := range touched.sorted() {
		n.dependents[p.key] = append(n.dependents[p.key], replyIndex)
		if id&forwardedRequestBit == 0 || !chaos.Planted(chaos.BugForwardedProduceUnsynced) {
			n.markDirty(p)
		}
	}
}

// openProduceLogs opens the log of every partition a produce appends to
// before anything is appended, keeping each open for it (logBusy) and
// going past the cap of open logs if need be (makeRoomForLog). A produce
// refused for want of room thus appends nothing, and one that touches more
// partitions than the cap is not refused at every retry.
func (n *Node) openProduceLogs(t *topic, placements []msg.Placement) error {
	n.producing = producingPartitions{topic: t.info.Name, placements: placements}
	defer func() { n.producing = producingPartitions{} }()
	for i, placement := range placements {
		if i > 0 && placement.Partition == placements[i-1].Partition {
			continue
		}
		p := n.partitionOf(t, placement.Partition)
		if p.log != nil && n.store.IsOpen(p.dir) {
			continue
		}
		if _, err := n.openLog(t, p); err != nil {
			return msg.Unavailable("partition %d of %s is unavailable: %s", p.key.index, t.info.Name, storageCause(err))
		}
	}
	return nil
}

// producingPartitions names the partitions of the produce whose logs are
// being opened. The zero value names none.
type producingPartitions struct {
	topic string
	// placements are the produce's; nil when none is being opened.
	placements []msg.Placement
	// indexes holds the partitions of placements, built at the first has
	// (only when the cap of open logs is reached).
	indexes map[int]bool
}

func (s *producingPartitions) active() bool { return s.placements != nil }

// has reports whether key is a partition of the produce.
func (s *producingPartitions) has(key partitionKey) bool {
	if s.placements == nil || key.topic != s.topic {
		return false
	}
	if s.indexes == nil {
		s.indexes = make(map[int]bool, len(s.placements))
		for _, placement := range s.placements {
			s.indexes[placement.Partition] = true
		}
	}
	return s.indexes[key.index]
}

// touchedPartitions are the distinct partitions one produce appended to.
// A request that touches one (every single produce) allocates nothing.
type touchedPartitions struct {
	// one holds the first partition added; nil while none was.
	one [1]*partition
	// more holds every partition added once a second one was, the first
	// included; nil before.
	more map[partitionKey]*partition
}

func (t *touchedPartitions) add(p *partition) {
	switch {
	case t.one[0] == nil:
		t.one[0] = p
	case t.more != nil:
		t.more[p.key] = p
	case t.one[0] != p:
		t.more = map[partitionKey]*partition{t.one[0].key: t.one[0], p.key: p}
	}
}

// sorted returns the partitions added, by key.
func (t *touchedPartitions) sorted() []*partition {
	if t.more != nil {
		return sortedValues(t.more)
	}
	if t.one[0] == nil {
		return nil
	}
	return t.one[:]
}

// placeRecords validates every record and picks its partition before
// anything is written, so that bad input changes nothing. A request served
// locally only (forwarded here) must name partitions this node owns; any
// other request is routed around owners that are down or unreachable.
func (n *Node) placeRecords(r msg.Produce, local bool) (*topic, []msg.Placement, error) {
	t, err := n.topic(r.Topic)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Records) == 0 || len(r.Records) > msg.ProduceBatchRecordsMax {
		return nil, nil, msg.Invalid("a produce carries 1 to %d records, got %d", msg.ProduceBatchRecordsMax, len(r.Records))
	}
	placements := make([]msg.Placement, len(r.Records))
	var payloadBytes int
	for i, rec := range r.Records {
		if err := n.checkRecord(t, rec, local); err != nil {
			return nil, nil, recordError(r, i, err)
		}
		payloadBytes += len(rec.Payload)
		if placements[i].Partition, err = n.placeRecord(t, rec, local); err != nil {
			return nil, nil, err
		}
	}
	if payloadBytes > msg.ProduceBatchBytesMax {
		return nil, nil, msg.TooLarge("request body too large")
	}
	return t, placements, nil
}

// recordError names the record of a batch that err refuses ("record N: ",
// counted from 1), which the HTTP layer turns into its NDJSON line.
func recordError(r msg.Produce, index int, err error) error {
	var refusal *msg.Error
	if !r.Batch || !errors.As(err, &refusal) || refusal.Code != msg.CodeInvalid {
		return err
	}
	return msg.Invalid("%s%s", msg.BatchRecordPrefix(index), refusal.Message)
}

// localWriteRefusal says why this node may not write partition index of
// t now, or returns nil.
func (n *Node) localWriteRefusal(t *topic, index int) error {
	switch {
	case !n.ownedHere(t, index):
		return notOwner(t, index)
	case n.frozen(t, index) && !chaos.Planted(chaos.BugAppendWhileFrozen):
		return frozenError(t, index)
	}
	return n.writable()
}

// placeRecord picks one record's partition.
func (n *Node) placeRecord(t *topic, rec msg.ProduceRecord, local bool) (int, error) {
	preferred := n.choosePartition(t, rec)
	if local {
		return preferred, n.localWriteRefusal(t, preferred)
	}
	index, err := n.routeRecord(t, rec, preferred, nil)
	if err == nil && index != preferred {
		chaos.Reached(chaos.MarkNodeProduceRerouted)
	}
	return index, err
}

// checkRecord checks one record against the topic as this replica knows
// it. A record forwarded here (local) names a partition the forwarding
// node placed: past this replica's count, it was placed after a growth
// this replica has not applied yet, so the answer is retryable, not 400
// (such a part waits for the growth first, but on the metastore leader:
// topicwait.go).
func (n *Node) checkRecord(t *topic, rec msg.ProduceRecord, local bool) error {
	if local && rec.Partition >= t.info.Partitions {
		return msg.Unavailable("partition %d of %s is not known here yet (the topic grew); retry", rec.Partition, t.info.Name)
	}
	if rec.Partition != msg.PartitionNone && (rec.Partition < 0 || rec.Partition >= t.info.Partitions) {
		return invalidPartition(t, rec.Partition)
	}
	if len(rec.Key) > msg.KeyBytesMax {
		return msg.Invalid("key is %d bytes, at most %d allowed", len(rec.Key), msg.KeyBytesMax)
	}
	if len(rec.Payload) > msg.MessageBytesMax {
		return msg.TooLarge("request body too large")
	}
	return nil
}

// choosePartition: an explicit partition, else the FNV-1a hash of the key,
// else round-robin.
func (n *Node) choosePartition(t *topic, rec msg.ProduceRecord) int {
	switch {
	case rec.Partition != msg.PartitionNone:
		return rec.Partition
	case len(rec.Key) > 0:
		h := fnv.New32a()
		h.Write(rec.Key)
		return int(h.Sum32() % uint32(t.info.Partitions))
	default:
		return n.stickyPartition(t)
	}
}

// stickyPartition spreads keyless records round-robin by sync round: all
// keyless records of a topic in one round go to one partition, and each
// round moves to the next. A round then syncs one log instead of all of
// them: with 16 closed-loop producers a round fell from about 1.6 to
// 0.7 ms here (fdatasyncs of several logs contend in the file system's
// journal). The next partition is one this node owns and
// may write now (live, unfrozen) when there is one, so that in a cluster
// a keyless record is written where it arrived, with no forward; only
// when there is none does the ring walk on to other owners' partitions.
func (n *Node) stickyPartition(t *topic) int {
	if t.cursors.produceRound != n.round {
		t.cursors.produceRound = n.round
		t.cursors.produce = n.nextStickyPartition(t)
	}
	return t.cursors.produce % t.info.Partitions
}

// nextStickyPartition is the first partition after the topic's produce
// cursor, in ring order, that this node may write; when there is none,
// simply the next one.
func (n *Node) nextStickyPartition(t *topic) int {
	start := (t.cursors.produce + 1) % t.info.Partitions
	if index, ok := route.RingNext(start, t.info.Partitions, func(index int) bool { return n.localWriteRefusal(t, index) == nil }); ok {
		return index
	}
	return start
}

func (n *Node) append(t *topic, p *partition, rec msg.ProduceRecord) (uint64, error) {
	log, err := n.openLog(t, p)
	if err != nil {
		return 0, msg.Unavailable("partition %d of %s is unavailable: %s", p.key.index, t.info.Name, storageCause(err))
	}
	if log.Syncing() {
		chaos.Reached(chaos.MarkNodeAppendDuringSyncRound) // pipelined: it waits for the next round
	}
	offset, err := log.Append(storage.Record{Key: rec.Key, TimeMs: n.nowMs, Payload: rec.Payload, Origin: storageOrigin(rec.Origin)})
	if errors.Is(err, storage.ErrRecordTooLarge) {
		return 0, msg.TooLarge("request body too large")
	}
	if errors.Is(err, storage.ErrSegmentNotCreated) { // the log stays usable: only this record is refused
		return 0, msg.Unavailable("produce failed: %s; retry", storageCause(err))
	}
	if err != nil {
		chaos.Reached(chaos.MarkNodeAppendFailed)
		n.failLog(p, err)
		return 0, msg.Unavailable("produce failed: %s", storageCause(err))
	}
	n.noteAppended(rec)
	n.observer.Produced(t.info.Name, p.key.index, 1, int64(len(rec.Payload)))
	n.appendObserver.Appended(t.info.Name, p.key.index, offset)
	return offset, nil
}
