package node

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// fanoutView is the list of parent topics as of one version of the
// metastore's topics, so that neither a tick nor an applied heartbeat
// copies every topic record.
type fanoutView struct {
	// topicsVersion is the meta.State.TopicsVersion the view was built at.
	topicsVersion uint64
	// parents are the topics with children, sorted by name.
	parents []fanoutParent
	// nextMs is the earliest time a cursor has work that waits for the
	// clock (a linger, a retry, a delayed record); math.MaxInt64 when
	// none does. Every wake a cursor asks for, in a pass or after
	// (fanoutWakeAt, fanoutWakeNow), lowers it: driveFanout does nothing
	// before it while the topics stay as they are.
	nextMs int64
	// partitionWakeMs is nextMs for the partition being driven: a cursor
	// with a batch in flight asks for none, its answer wakes the partition.
	partitionWakeMs int64
	// turn counts driveFanout's passes; each pass starts at another
	// parent partition, and each partition at another child, so that at
	// the relay cap (RelaysInFlightMax) the same cursors do not take
	// every slot each time while the last ones never copy. Only
	// driveFanout changes it.
	turn uint64
	// owned is driveFanout's scratch list of the parent partitions this
	// node owns; it holds nothing between passes.
	owned []ownedParent
	// cursorSteps counts the cursors stepped since the node started (the
	// fan-out's share of the loop's work, for Stats); only
	// driveParentPartition adds to it.
	cursorSteps uint64
}

// fanoutParent is a topic with children, and the partitions of it this
// node owns by the record's assignments, in increasing order: a pass
// drives those, and looks at no other partition of the topic.
type fanoutParent struct {
	record meta.TopicRecord
	owned  []int
}

// ownedParent is a parent partition this node owns, with its topic's
// links.
type ownedParent struct {
	topic *topic
	index int
	links []meta.ChildLink
}

// FanoutObserver hears of the copies of fan-out (host metrics); an
// Observer that implements it gets the calls.
type FanoutObserver interface {
	// FanoutCopied reports records made durable in a child.
	FanoutCopied(parent, child string, partition, records int)
	// FanoutStalled reports a batch that failed; the cursor retries.
	FanoutStalled(parent, child string, partition int)
	// FanoutDropped reports parent records that expired before they were
	// copied: data the child never gets.
	FanoutDropped(parent, child string, partition int, records uint64)
}

// FanoutDetachObserver hears that a link this node had in its view of
// the parents is gone from the applied state (detached, or either topic
// deleted): the host drops the link's series then. An Observer that
// implements it gets the calls.
type FanoutDetachObserver interface {
	FanoutLinkGone(parent, child string)
}

type nopFanoutObserver struct{}

func (nopFanoutObserver) FanoutCopied(string, string, int, int)     {}
func (nopFanoutObserver) FanoutStalled(string, string, int)         {}
func (nopFanoutObserver) FanoutDropped(string, string, int, uint64) {}

func fanoutObserverOf(observer Observer) FanoutObserver {
	if f, ok := observer.(FanoutObserver); ok {
		return f
	}
	return nopFanoutObserver{}
}

// driveFanout moves every cursor of the parent partitions this node owns
// as far as its bounds allow (docs/architecture.md#fan-out). A tick
// before the earliest wake any cursor asked for (nextMs), with the topics
// unchanged, has nothing to do and looks at no partition: the loop ticks
// once per round, and a pass over every parent partition cost tens of
// nanoseconds each even when all waited, a millisecond per tick for a
// node of 20,000.
func (n *Node) driveFanout() {
	if n.nowMs < n.fanout.nextMs && n.fanoutViewCurrent() {
		return
	}
	n.refreshFanoutView()
	n.fanout.nextMs = math.MaxInt64
	owned := n.fanout.owned[:0]
	for _, parent := range n.fanout.parents {
		t, ok := n.lookupTopic(parent.record.Name)
		if !ok {
			continue
		}
		for _, index := range parent.owned {
			owned = append(owned, ownedParent{topic: t, index: index, links: parent.record.Children})
		}
	}
	n.fanout.turn++
	for i := range owned {
		o := owned[(uint64(i)+n.fanout.turn)%uint64(len(owned))]
		n.driveParentPartition(o.topic, o.index, o.links)
	}
	clear(owned) // the scratch list keeps no topics alive
	n.fanout.owned = owned[:0]
}

// fanoutViewCurrent reports whether the list of parents was built from
// the metastore's topics as they are.
func (n *Node) fanoutViewCurrent() bool {
	return n.fanout.parents != nil && n.fanout.topicsVersion == n.meta.State().TopicsVersion()
}

// refreshFanoutView rebuilds the list of parents when the metastore's
// topics changed (links and owners are topic changes), and drops the
// cursors of links that went away.
func (n *Node) refreshFanoutView() {
	if n.fanoutViewCurrent() {
		return
	}
	before := n.fanout.parents
	n.fanout.topicsVersion, n.fanout.parents = n.meta.State().TopicsVersion(), []fanoutParent{}
	for _, record := range n.meta.State().Topics() {
		if len(record.Children) > 0 {
			n.fanout.parents = append(n.fanout.parents, fanoutParent{record: record, owned: n.ownedPartitions(record)})
		}
	}
	n.tellLinksGone(before)
	for _, p := range n.sortedPartitions() {
		if p.fanout == nil {
			continue
		}
		record, _ := n.meta.State().Topic(p.key.topic)
		if p.cursorLinksKnown && slices.Equal(p.cursorLinks, record.Children) {
			continue // cleaned against these links already: no listing
		}
		p.cursorLinks, p.cursorLinksKnown = slices.Clone(record.Children), true
		n.removeStaleCursors(p, record.Children)
	}
}

// tellLinksGone tells the observer of each link of the view before that
// the applied state no longer holds, in the view's order (a detached
// link's series would otherwise stay until a topic's deletion).
func (n *Node) tellLinksGone(before []fanoutParent) {
	detach, ok := n.observer.(FanoutDetachObserver)
	if !ok {
		return
	}
	for _, parent := range before {
		record, exists := n.meta.State().Topic(parent.record.Name)
		for _, link := range parent.record.Children {
			if !exists || !linked(record.Children, link.Name) {
				detach.FanoutLinkGone(parent.record.Name, link.Name)
			}
		}
	}
}

// ownedPartitions lists the partitions of the topic this node owns by
// the record's assignments: those ownedHere accepts, of the topic that
// lookupTopic makes of the record.
func (n *Node) ownedPartitions(record meta.TopicRecord) []int {
	var owned []int
	for index := range record.Partitions {
		if record.Assignments[index].Owner == n.cfg.NodeID {
			owned = append(owned, index)
		}
	}
	return owned
}

// driveParentPartition loads the partition's cursors and steps each,
// unless they wait (cursorsWait).
func (n *Node) driveParentPartition(t *topic, index int, links []meta.ChildLink) {
	p := n.partitionOf(t, index)
	if n.cursorsWait(p) {
		n.fanoutWakeAt(p.fanoutWakeMs) // no reason to step them, nor to reopen a closed log
		return
	}
	if p.log == nil && n.nowMs < p.fanoutOpen.retryAtMs { // a log opened since (a produce) needs no wait
		n.fanoutWakeAt(p.fanoutOpen.retryAtMs)
		return
	}
	log, err := n.openLog(t, p)
	if err != nil {
		p.fanoutOpen.failed(n.nowMs, n.cfg.Fanout.RetryMs) // reported by openLog
		n.fanoutWakeAt(p.fanoutOpen.retryAtMs)
		return
	}
	p.fanoutOpen = fanoutOpenRetry{}
	// The copies into children on this node open their logs as it steps
	// its cursors: those opens must not close the parent's, which its
	// cursor writes mark dirty below.
	n.driving = p
	defer func() { n.driving = nil }()
	n.fanout.partitionWakeMs = math.MaxInt64
	defer func() { p.fanoutWakeMs, p.fanoutPassVersion = n.fanout.partitionWakeMs, n.fanout.topicsVersion }()
	if p.fanout == nil {
		p.fanout = map[string]*fanoutCursor{}
		n.removeStaleCursors(p, links)
	}
	for i := range links {
		link := links[(uint64(i)+n.fanout.turn)%uint64(len(links))]
		c := p.fanout[link.Name]
		if c == nil || c.epoch != link.Epoch {
			if c = n.loadLinkCursor(p, log, link); c == nil {
				continue
			}
		}
		n.stepCursor(t, p, log, link, c)
		n.fanout.cursorSteps++
	}
	n.scheduleCursorWrites(p)
}

// cursorsWait reports, in constant time, that p's cursors have nothing
// to do before p.fanoutWakeMs, so that a pass leaves them alone (and a
// closed log closed): their last pass asked for no earlier wake, it
// stepped the links the topics hold now (a link attached since has no
// cursor yet), and nothing woke them since (fanoutDue: records made
// durable, a batch answered, the log reopened). A cursor asks for a wake
// whenever it waits for the clock (a linger, a retry, a due time, its
// file's write); one that caught up, or whose batch is in flight, waits
// for fanoutDue. Stepping every cursor of every open parent log at every
// tick instead cost the loop, which ticks once per round, about half a
// microsecond per cursor: three idle parents of 108 partitions with 108
// children each took most of its time, and every client's produce slowed
// twentyfold.
func (n *Node) cursorsWait(p *partition) bool {
	return p.fanout != nil && n.nowMs < p.fanoutWakeMs && p.fanoutPassVersion == n.fanout.topicsVersion
}

// fanoutOpenRetry holds back the cursors' next open of a parent
// partition's log that failed to open: at once after a passing refusal
// (the open logs at their cap), then after twice as long each time, up to
// Fanout.RetryMs. A log that cannot open for long (a full disk) was
// retried every millisecond, logging hundreds of warnings a second
// (full-disk audit). Only driveParentPartition changes it: it resets it
// once the log opened there. It is not reset where an open settles the
// cursors (fanoutDue): the open may still fail after (review: a clamp
// that kept failing was retried every millisecond again).
type fanoutOpenRetry struct {
	// stepMs is the wait after the last failure; 0 before one.
	stepMs int64
	// retryAtMs is when the next open may be tried.
	retryAtMs int64
}

// failed records an open that failed at nowMs.
func (r *fanoutOpenRetry) failed(nowMs, stepMaxMs int64) {
	r.stepMs = min(max(2*r.stepMs, 1), stepMaxMs)
	r.retryAtMs = nowMs + r.stepMs
}

// cursorLoadFailure holds back the next load of a child's cursor whose
// file could not be read, as a failed batch holds back its cursor.
type cursorLoadFailure struct {
	// retryAtMs is when the load is tried again: Fanout.RetryMs after
	// the last failure.
	retryAtMs int64
	// loggedMs is when a failure was last logged: at most once per
	// Fanout.StallLogIntervalMs.
	loggedMs int64
}

// loadLinkCursor loads link's cursor into p and returns it; nil when the
// load failed, now or at its last try, whose retry is not due yet. The
// load was tried, and a warning logged, at every tick (ten a second on a
// host) for as long as the file could not be read.
func (n *Node) loadLinkCursor(p *partition, log *storage.Log, link meta.ChildLink) *fanoutCursor {
	failure, failed := p.cursorLoadFailures[link.Name]
	if failed && n.nowMs < failure.retryAtMs {
		n.fanoutWakeAt(failure.retryAtMs)
		return nil
	}
	c, err := n.loadCursor(p, log, link)
	if err == nil {
		delete(p.cursorLoadFailures, link.Name)
		p.fanout[link.Name] = c
		return c
	}
	if !failed || n.nowMs-failure.loggedMs >= n.cfg.Fanout.StallLogIntervalMs {
		failure.loggedMs = n.nowMs
		n.observer.Event("fanout-cursor-load-failed", fmt.Sprintf("%s: %v; retrying", cursorPath(p.dir, link.Name), err))
	}
	failure.retryAtMs = n.nowMs + n.cfg.Fanout.RetryMs
	n.fanoutWakeAt(failure.retryAtMs)
	if p.cursorLoadFailures == nil {
		p.cursorLoadFailures = map[string]cursorLoadFailure{}
	}
	p.cursorLoadFailures[link.Name] = failure
	return nil
}

// stepCursor sends the cursor's next batch when one is ready: not while a
// batch is in flight or a retry waits, and only a full batch before the
// linger ends.
func (n *Node) stepCursor(t *topic, p *partition, log *storage.Log, link meta.ChildLink, c *fanoutCursor) {
	if c.sentTo != 0 {
		// The batch's answer wakes the partition (batchDone's fanoutDue,
		// or cursorStalled's retry): until then there is nothing to do,
		// and no reason to keep its log open or to reopen it each tick.
		return
	}
	if waitMs := max(c.retryAtMs, c.heldUntilMs); n.nowMs < waitMs {
		n.fanoutWakeAt(waitMs)
		return
	}
	n.skipAgedOut(t, p, log, c)
	hwm := log.HWM()
	if c.next >= hwm {
		c.pendingSinceMs = 0
		return
	}
	if c.pendingSinceMs == 0 {
		c.pendingSinceMs = n.pendingSince(log, c.next)
	}
	lingerEndMs := c.pendingSinceMs + n.cfg.Fanout.LingerMs
	if hwm-c.next < uint64(n.cfg.Fanout.BatchRecordsMax) && n.nowMs < lingerEndMs {
		n.fanoutWakeAt(lingerEndMs)
		return
	}
	if n.relays.inFlight >= n.cfg.RelaysInFlightMax {
		// Every relay slot is taken: wait for one without the stall's
		// backoff (a freed slot wakes the driver, relay.go); backed off a
		// full retry interval, a cursor refused in one pass came back in
		// a pass where the others took the slots again, and never copied.
		chaos.Reached(chaos.MarkFanoutWaitedForRelay)
		n.fanout.partitionWakeMs = n.nowMs
		return
	}
	records, end, err := n.readBatch(p, log, link, c, hwm)
	switch {
	case len(records) > 0:
		n.sendBatch(t, p, c, records, end)
	case err != nil:
		n.cursorStalled(t.info.Name, p, c, err) // retried, as a failed batch is
	}
}

// settleCursors brings p's cursors, in their files (clampCursorFiles) and
// in memory (rewindCursors), down to the high watermark its log just
// opened at, before anything appends to it. A log that closed intact
// (closedIntact) reopens where it closed, past every cursor: nothing to do.
func (n *Node) settleCursors(p *partition, hwm uint64) error {
	if p.closedIntact {
		return nil
	}
	n.fanoutDue(p) // the clamp and the rewind may leave files to write (cursorsWait)
	if err := n.clampCursorFiles(p, hwm); err != nil {
		return err
	}
	n.rewindCursors(p, hwm)
	return nil
}

// clampCursorFiles rewrites, durably and before anything appends to the
// log of p just opened at hwm, the cursor files of p's children that
// name an offset above hwm. In the normal course no file does: a file
// follows the fsync of the records it passes, and recovery keeps every
// durable record. A recovery that truncated a tail damaged above the
// persisted high watermark takes records the files passed, though, and
// new records will take those offsets: a file left naming them would,
// after a crash, skip them. It refuses (retry) while a sync round writes
// the files, which could write the old offsets after it. Only the files of
// linked children count; one that cannot be read is left to loadCursor,
// which meets the same error for that child alone.
func (n *Node) clampCursorFiles(p *partition, hwm uint64) error {
	record, ok := n.meta.State().Topic(p.key.topic)
	if !ok || len(record.Children) == 0 {
		return nil
	}
	names, err := n.fs.List(p.dir)
	if err != nil {
		return err
	}
	var writes []storage.NamedData
	var clamped []*fanoutCursor
	for _, name := range names {
		child, isCursor := cursorChild(name)
		if !isCursor || !linked(record.Children, child) {
			continue // a detached child's file: no cursor reads it, the links' cleaning removes it
		}
		path := cursorPath(p.dir, child)
		data, err := storage.ReadFile(n.fs, path)
		if err != nil {
			n.observer.Event("fanout-cursor-unreadable", fmt.Sprintf("%s: %v; not clamped (its cursor stalls at its load)", path, err))
			continue // loadCursor meets the same error: that child's cursor stalls, not the partition
		}
		var file cursorFile
		epoch, err := decodeCursorFile(data, &file)
		if err != nil || file.NextOffset <= hwm {
			continue // an unreadable file starts from the oldest record anyway (loadCursor)
		}
		if data, err = encodeCursorFile(epoch, hwm); err != nil {
			return err
		}
		writes = append(writes, storage.NamedData{Name: path, Data: data})
		if c := p.fanout[child]; c != nil && c.epoch == epoch {
			clamped = append(clamped, c)
		}
	}
	if len(writes) == 0 {
		return nil
	}
	if p.cursorFiles.inFlight {
		return errors.New("a sync round is writing its cursor files")
	}
	n.observer.Event("fanout-cursor-files-clamped", fmt.Sprintf("%s: %d cursor files named offsets above the recovered high watermark %d", p.dir, len(writes), hwm))
	if err := storage.WriteFilesAtomic(n.fs, writes); err != nil {
		return err
	}
	for _, c := range clamped {
		c.persisted = hwm
	}
	return nil
}

// rewindCursors brings back the cursors of p that stand past the high
// watermark its log just reopened at: recovery truncated a tail damaged
// above the persisted high watermark, taking records the cursors had
// copied (storage's corruption window), and new records will take those
// offsets, which the children must get. A batch in flight then advances
// its cursor no further than that high watermark (sentCap).
func (n *Node) rewindCursors(p *partition, hwm uint64) {
	for _, child := range slices.Sorted(maps.Keys(p.fanout)) {
		c := p.fanout[child]
		if c.sentTo != 0 {
			c.sentCap = min(c.sentCap, hwm)
		}
		if c.next > hwm {
			n.observer.Event("fanout-cursor-rewound", fmt.Sprintf("%s -> %s: the log reopened at high watermark %d, below the cursor %d (recovery truncated a damaged tail); copying from there",
				p.dir, c.child, hwm, c.next))
			c.next, c.pendingSinceMs = hwm, 0
		}
	}
}

// pendingSince is when the record at offset was committed (the linger
// runs from then); now when it cannot be read.
func (n *Node) pendingSince(log *storage.Log, offset uint64) int64 {
	record, err := log.Read(offset)
	if err != nil {
		return n.nowMs
	}
	return min(record.TimeMs, n.nowMs)
}

// skipAgedOut moves a cursor that retention overtook to the oldest
// retained record: the records between were never copied.
func (n *Node) skipAgedOut(t *topic, p *partition, log *storage.Log, c *fanoutCursor) {
	if oldest := log.Oldest(); c.next < oldest {
		chaos.Reached(chaos.MarkFanoutRecordsAgedOut)
		n.fanoutObserver.FanoutDropped(t.info.Name, c.child, p.key.index, oldest-c.next)
		n.observer.Event("fanout-records-aged-out", fmt.Sprintf("%s -> %s: offsets %d to %d expired before their copy", p.dir, c.child, c.next, oldest-1))
		c.next = oldest
	}
}

// fanoutDue makes the cursors of a partition whose round made records
// durable due at the next tick: a cursor that had caught up asked for no
// wake, and were the log closed before that tick (evicted, say), the
// driver would otherwise leave it closed and the records uncopied until
// something else opened it.
func (n *Node) fanoutDue(p *partition) {
	if p == nil || p.fanout == nil {
		return
	}
	p.fanoutWakeMs = n.nowMs
	n.fanoutWakeNow()
}

// fanoutWakeNow asks for the next tick to drive the cursors: something a
// cursor may wait for happened (records durable, a relay slot freed).
func (n *Node) fanoutWakeNow() {
	n.fanout.nextMs = min(n.fanout.nextMs, n.nowMs)
}

// fanoutWakeAt asks for a tick by atMs (NextDeadlineMs).
func (n *Node) fanoutWakeAt(atMs int64) {
	if atMs > n.nowMs {
		n.fanout.nextMs = min(n.fanout.nextMs, atMs)
		n.fanout.partitionWakeMs = min(n.fanout.partitionWakeMs, atMs)
	}
}

// readBatch reads the records of the cursor's next batch: up to the
// batch bounds (at least one record), and for a delay child only records
// already due (when the first is not, the cursor waits until it is). It
// returns the records and the offset after them, and the read error that
// stopped it, if one did. A corrupt record is left out but never skipped
// alone: one that reads as corrupt now may lie above the persisted high
// watermark, where recovery would truncate it and reuse its offset.
func (n *Node) readBatch(p *partition, log *storage.Log, link meta.ChildLink, c *fanoutCursor, hwm uint64) ([]msg.ProduceRecord, uint64, error) {
	child, ok := n.lookupTopic(link.Name)
	if !ok {
		return nil, c.next, nil // this replica does not know the child yet
	}
	var records []msg.ProduceRecord
	var bytes int64
	end := c.next
	for ; end < hwm && len(records) < n.cfg.Fanout.BatchRecordsMax; end++ {
		record, err := log.Read(end)
		if errors.Is(err, storage.ErrCorrupt) {
			continue // never readable: consumers skip it too
		}
		if err != nil {
			return records, end, err
		}
		if dueMs := record.TimeMs + link.DelayMs; link.DelayMs > 0 && dueMs > n.nowMs {
			chaos.Reached(chaos.MarkFanoutDelayHeld)
			n.fanoutWakeAt(dueMs)
			if len(records) == 0 {
				c.heldUntilMs = dueMs
			}
			break
		}
		size := int64(len(record.Key) + len(record.Payload))
		if len(records) > 0 && bytes+size > n.cfg.Fanout.BatchBytesMax {
			break
		}
		bytes += size
		records = append(records, msg.ProduceRecord{Key: record.Key, Partition: childPartition(p.key.index, child), Payload: record.Payload,
			Origin: messageOrigin(record.Origin)}) // a dead letter's copy in a child still says where it came from
	}
	return records, end, nil
}

// childPartition is where a record of parent partition index goes: the
// child's partition of the same index when it has one, else placed as a
// produce places it (by key, or round-robin).
func childPartition(index int, child *topic) int {
	if index < child.info.Partitions {
		return index
	}
	return msg.PartitionNone
}

// sendBatch relays a batch into the child; the cursor advances when it is
// durable there.
func (n *Node) sendBatch(t *topic, p *partition, c *fanoutCursor, records []msg.ProduceRecord, end uint64) {
	c.sentTo, c.sentCap = end, math.MaxUint64
	err := n.relay(c.child, c.epoch, records, func(reply msg.Reply) { n.batchDone(t.info.Name, p, c, len(records), end, reply) })
	if err != nil {
		c.sentTo = 0
		n.cursorStalled(t.info.Name, p, c, err)
	}
}

// batchDone advances the cursor past a batch that is durable in the
// child (commit before advance); a later sync round of the partition
// writes it to the file (scheduleCursorWrites).
func (n *Node) batchDone(parent string, p *partition, c *fanoutCursor, records int, end uint64, reply msg.Reply) {
	c.sentTo = 0
	if n.partitions[p.key] != p || p.fanout[c.child] != c {
		return // the partition left this node, or the cursor was replaced
	}
	if reply.Err != nil {
		n.cursorStalled(parent, p, c, reply.Err)
		return
	}
	chaos.Reached(chaos.MarkFanoutBatchCopied)
	c.next, c.copied, c.pendingSinceMs = min(end, c.sentCap), c.copied+uint64(records), 0
	n.fanoutObserver.FanoutCopied(parent, c.child, p.key.index, records)
	// The next batch may be ready: without a wake a driver that sleeps
	// until NextDeadlineMs sent one batch per unrelated tick (a backlog of
	// ten full batches took half a second; review finding).
	n.fanoutDue(p)
}

// cursorStalled holds a cursor back for a retry, and logs it at most once
// per StallLogIntervalMs: only this cursor waits, never the parent.
func (n *Node) cursorStalled(parent string, p *partition, c *fanoutCursor, err error) {
	chaos.Reached(chaos.MarkFanoutBatchFailed)
	c.retryAtMs = n.nowMs + n.cfg.Fanout.RetryMs
	n.fanoutWakeAt(c.retryAtMs) // also from a batch's answer, outside the drive
	p.fanoutWakeMs = min(p.fanoutWakeMs, c.retryAtMs)
	n.fanoutObserver.FanoutStalled(parent, c.child, p.key.index)
	if c.stalledLogMs == 0 || n.nowMs-c.stalledLogMs >= n.cfg.Fanout.StallLogIntervalMs {
		c.stalledLogMs = n.nowMs
		kind := "fanout-stalled"
		if msg.CodeOf(err) == msg.CodeUnavailable && n.childMoving(c.child, p.key.index) {
			kind = "fanout-waits-for-move" // a freeze's refusal, the normal course of a move
		}
		n.observer.Event(kind, fmt.Sprintf("%s -> %s at offset %d: %v; retrying", p.dir, c.child, c.next, err))
	}
}

// childMoving reports whether the child's partition that the copies of
// parent partition index go to (childPartition) has a move in flight in
// the applied placement, or, for copies placed by key or round-robin (a
// child of fewer partitions), any partition of the child: a copy refused
// as unavailable then most likely met the move's freeze, where a refusal
// by another partition (a disk under its reserve, an owner down) is no
// routine event (whole-change review).
func (n *Node) childMoving(child string, index int) bool {
	record, ok := n.meta.State().Topic(child)
	if !ok {
		return false
	}
	if index < len(record.Assignments) {
		return record.Assignments[index].Target != ""
	}
	for _, assignment := range record.Assignments {
		if assignment.Target != "" {
			return true
		}
	}
	return false
}
