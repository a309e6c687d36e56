package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

// remoteFirstEvery is how often an unpinned consume asks the other owners
// of the topic before this node's own partitions: a node serves its own
// first (no round trip), and without a bound a backlog here held the
// records of every other owner's partitions back from its consumers for
// good, until retention deleted them unread (consume review). Every
// fourth consume gives the others at least a quarter of this node's
// consumers.
const remoteFirstEvery = 4

// remoteBackoffMsMin and remoteBackoffMsMax bound how long a node waits,
// after asking the other owners first found nothing there, before it asks
// them first again (remoteRoundEnded): records on their partitions wait
// at most remoteBackoffMsMax for this node's consumers.
const (
	remoteBackoffMsMin = 50
	remoteBackoffMsMax = 1_000
)

// corruptSkipsPerReserveMax bounds how many corrupt records one reserve
// call skips before it gives up for this round, so a damaged segment
// cannot stall the loop.
const corruptSkipsPerReserveMax = 64

// readRetryIntervalMs is how long after a reserve failed to read a
// partition (a record the disk could not read, a log that would not open)
// the polls that may take its records look again (retryFailedReads): a
// transient error costs a parked poll at most this long, and a disk that
// keeps failing is read once per interval, not at every round.
const readRetryIntervalMs = 1_000

func (n *Node) consume(id msg.RequestID, r msg.Consume) {
	t, err := n.topic(r.Topic)
	if err == nil {
		err = checkRoutedFor(t, r.TopicIncarnation, r.TopicCreatedAtMs, "consume")
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	if err := checkConsume(t, r); err != nil {
		n.reply(id, nil, err)
		return
	}
	if r.Partition != msg.PartitionNone && !n.ownedHere(t, r.Partition) {
		n.consumeElsewhere(id, t, r)
		return
	}
	var remote []string
	if !localOnly(id) && r.Partition == msg.PartitionNone {
		remote = n.remoteOwners(t)
	}
	if len(remote) > 0 && n.remoteTurn(t) {
		n.consumeAcross(id, t, r, remote) // this node's own partitions are tried when the round ends
		if w, parked := n.waiters.get(id); parked {
			w.remoteFirst = true
		}
		return
	}
	if n.readsSpent(t.info.Name, r.Partition) {
		n.reply(id, nil, n.spentReads())
		return
	}
	messages, readErr := n.reserve(t, r)
	switch {
	case len(messages) > 0:
		n.answerAtOnce(id, r, "hit", messages)
	case readErr != nil && r.Partition != msg.PartitionNone:
		n.reply(id, nil, msg.Unavailable("partition %d of %s could not be read: %s", r.Partition, r.Topic, storageCause(readErr)))
	case len(remote) > 0:
		n.consumeAcross(id, t, r, remote)
	case n.atLeaseBudget():
		n.reply(id, nil, n.leasesFull()) // nothing to deliver again here, and the budget holds the new records back
	case r.WaitMs <= 0 || n.draining:
		n.answerAtOnce(id, r, "no_wait", []msg.Message{})
	case n.waitersFull():
		n.refuseWait(id, r.Topic)
	default:
		wait := min(r.WaitMs, n.cfg.ConsumeWaitMaxMs)
		if !localOnly(id) && r.Partition == msg.PartitionNone {
			n.subscribeAll(t, n.nowMs+wait) // no other owner may be asked now; one back within the wait tells
		}
		n.waiters.add(&waiter{id: id, request: r, parkedAtMs: n.nowMs, deadlineMs: n.nowMs + wait})
	}
}

// checkRoutedFor refuses, retryably, a consume or replay another node
// routed here for another topic of the name than t (the identity it
// carries, meta.TopicRecord's): the topic was deleted and created again,
// and one of the two nodes has not applied it yet. Served, it would hand
// the client the records of the other creation (a node that restarted
// while the topic was deleted and created again served the deleted
// creation's records to the new one's reader, nightly seed 7516619). A
// client's request carries no identity and is taken as it is.
func checkRoutedFor(t *topic, incarnation uint64, createdAtMs int64, request string) error {
	routedFor := meta.TopicIdentity{Incarnation: incarnation, CreatedAtMs: createdAtMs}
	if routedFor == (meta.TopicIdentity{}) || routedFor == t.identity {
		return nil
	}
	return topicRecreated(t.info.Name, request)
}

// remoteTurn reports whether this unpinned consume asks the other owners
// first: every remoteFirstEvery-th, while they were last found with
// records (or their quiet time after an empty round passed).
func (n *Node) remoteTurn(t *topic) bool {
	t.cursors.consumes++
	return t.cursors.consumes%remoteFirstEvery == 0 && n.nowMs >= t.cursors.remoteQuietUntilMs
}

// remoteRoundEnded records how a round that asked the other owners first
// ended: empty, it puts the next such round off (doubling, up to
// remoteBackoffMsMax), so a node whose records are all its own pays a
// round trip a second at most, not one per remoteFirstEvery consumes; a
// hit ends the back-off.
func (n *Node) remoteRoundEnded(topicName string, hit bool) {
	t, ok := n.lookupTopic(topicName)
	if !ok {
		return
	}
	c := t.cursors
	if hit {
		c.remoteBackoffMs, c.remoteQuietUntilMs = 0, 0
		return
	}
	c.remoteBackoffMs = min(max(2*c.remoteBackoffMs, remoteBackoffMsMin), remoteBackoffMsMax)
	c.remoteQuietUntilMs = n.nowMs + c.remoteBackoffMs
}

// answerAtOnce answers a consume that did not park with its records,
// counted by its outcome unless it is another node's probe.
func (n *Node) answerAtOnce(id msg.RequestID, r msg.Consume, outcome string, messages []msg.Message) {
	if !isProbe(id, r) {
		n.observer.ConsumeWait(r.Topic, outcome, 0)
	}
	n.reply(id, msg.ConsumeResult{Messages: messages, Batch: r.Max > 0}, nil)
}

// isProbe reports whether a consume is another node's probe (probe): an
// unpinned consume forwarded here. Its client's consume is counted once,
// by the node that asked (ConsumeWait), not at each owner it probed; a
// pinned consume forwarded whole is counted here, where it is served, and
// not by the node that passed it on.
func isProbe(id msg.RequestID, r msg.Consume) bool {
	return localOnly(id) && r.Partition == msg.PartitionNone
}

// waitersFull reports whether the long polls parked here reached
// WaitersMax: a consume that finds nothing and asked to wait is then
// refused (refuseWait), not answered empty, so that its client backs off
// instead of polling again at once.
func (n *Node) waitersFull() bool { return n.waiters.parked() >= n.cfg.WaitersMax }

// refuseWait answers a consume that found nothing and could not park.
func (n *Node) refuseWait(id msg.RequestID, topicName string) {
	n.observer.ConsumeWait(topicName, "waiters_full", 0)
	n.reply(id, nil, msg.Unavailable("%d long polls are parked on this node, at most %d: retry later, or consume without waiting",
		n.waiters.parked(), n.cfg.WaitersMax))
}

func checkConsume(t *topic, r msg.Consume) error {
	if r.Partition != msg.PartitionNone && (r.Partition < 0 || r.Partition >= t.info.Partitions) {
		return invalidPartition(t, r.Partition)
	}
	if r.Max < 0 || r.Max > msg.ConsumeBatchMax {
		return msg.Invalid("max must be between 1 and %d", msg.ConsumeBatchMax)
	}
	return nil
}

// reserve reserves up to max(r.Max, 1) messages, starting at the topic's
// rotating cursor so that partitions are served fairly; a partition
// frozen for a move delivers nothing. It stops adding messages once they
// hold ConsumeReplyBytesMax of payload (less once the round's reads near
// their bound, RoundReadBytesMax: reads.go; none once they are spent), so
// a reply holds at most that plus one record (and always at least one
// message, unless the round's reads are spent). At the node's lease
// budget (leases.go) it delivers only records delivered before and
// released since. readErr is the first
// record that could not be read from disk (not corruption, which is
// skipped), or the first log that could not open: that partition
// delivered nothing more in this call.
func (n *Node) reserve(t *topic, r msg.Consume) (messages []msg.Message, readErr error) {
	want := max(r.Max, 1)
	if n.readsSpent(t.info.Name, r.Partition) {
		return nil, nil
	}
	budget := n.readBudget()
	payloadBytes := 0
	full := func() bool { return len(messages) == want || payloadBytes >= budget }
	defer func() { n.reads.bytes += payloadBytes }()
	for _, index := range n.consumeOrder(t, r.Partition) {
		if !n.ownedHere(t, index) && !(chaos.Planted(chaos.BugServeAfterFlipAway) && n.sweeper.candidates[partitionKey{t.info.Name, index}]) {
			continue
		}
		p := n.partitionOf(t, index)
		if p.freeze.Frozen() {
			// Acks of a frozen partition are refused until its flip, and a
			// move carries no reservation: a delivery now would only come
			// back, after records acked at the new owner meanwhile.
			continue
		}
		for !full() {
			message, ok, err := n.reserveOne(t, p)
			if err != nil && readErr == nil {
				readErr = err
			}
			if !ok {
				break
			}
			messages = append(messages, message)
			payloadBytes += len(message.Payload)
		}
		if full() {
			break
		}
	}
	return messages, readErr
}

// consumeOrder lists the partitions a consume looks at, in order, and
// moves the topic's cursor on.
func (n *Node) consumeOrder(t *topic, pinned int) []int {
	if pinned != msg.PartitionNone {
		return []int{pinned}
	}
	count := t.info.Partitions
	start := t.cursors.consume % count
	t.cursors.consume = (start + 1) % count
	order := make([]int, count)
	for i := range order {
		order[i] = (start + i) % count
	}
	return order
}

// reserveOne reserves the next available record of p, skipping records
// that recovery found corrupt and records that retention removed. A record
// the disk fails to read goes back to the table, its delivery uncounted,
// and the error is returned: it is delivered once a read succeeds, and a
// bad sector costs the consume its record, never the node. A log that
// cannot open now (the open-log cap, a move installing its copy, a disk
// error) is returned as its error too.
func (n *Node) reserveOne(t *topic, p *partition) (msg.Message, bool, error) {
	if n.nothingToReserveClosed(p) {
		return msg.Message{}, false, nil
	}
	log, err := n.openLog(t, p)
	if err != nil {
		n.noteReadFailed(t, p)
		return msg.Message{}, false, err // a pinned consume answers it (503), as a read error
	}
	for range corruptSkipsPerReserveMax {
		reservation, ok := n.reserveLease(t, p, log)
		if !ok {
			return msg.Message{}, false, nil
		}
		n.cutLeaseShort(p, &reservation, t.info.VisibilityTimeoutMs)
		record, err := log.Read(reservation.Offset)
		if err == nil {
			n.observer.Consumed(t.info.Name, p.key.index, 1, int64(len(record.Payload)))
			if reservation.DeliveryCount > 1 {
				chaos.Reached(chaos.MarkNodeRedelivery)
			}
			return n.message(t, p, record, reservation), true, nil
		}
		if !skippable(err) {
			returned := p.leases.Return(reservation.Offset, reservation.Nonce, n.nowMs)
			invariant.Check(returned == nil, "node: return of the unread reservation %d of %s: %v", reservation.Offset, p.dir, returned)
			n.observer.Event("read-failed", fmt.Sprintf("%s@%d: %v", p.dir, reservation.Offset, err))
			n.noteReadFailed(t, p)
			return msg.Message{}, false, err
		}
		n.skipUnreadable(t, p, log, reservation.Offset, err)
	}
	n.skipsCapped.add(t.info.Name, p.key.index) // good records may lie beyond: nothing else would tell the polls that found none
	return msg.Message{}, false, nil
}

// nothingToReserveClosed reports that p's log is closed intact and its
// lease table would reserve none of the records the log holds: no
// deadline is due (a lapse applies only at a Reserve or Expire) and no
// record below the high watermark it closed at is deliverable. A consume
// then leaves the log closed: reopening it to find nothing would recover
// it again (a scan of every segment) and, at the open-log cap, evict
// another. So it does when p has no log at all (logAbsent): opening one
// would make its files.
func (n *Node) nothingToReserveClosed(p *partition) bool {
	if !p.closedIntact {
		return n.logAbsent(p)
	}
	if deadlineMs, ok := p.leases.NextDeadline(); ok && deadlineMs <= n.nowMs {
		return false
	}
	if p.leases.Deliverable(p.closed.HWM) {
		return false
	}
	chaos.Reached(chaos.MarkNodeClosedLogLeftClosed)
	return true
}

// wakeSkipsCapped tells the polls that may take a record of the
// partitions whose reserves stopped at the skip bound, so that they look
// again (and skip on). A look that stops at the bound again notes its
// partition for the next Tick.
func (n *Node) wakeSkipsCapped() {
	n.tellPartitions(&n.skipsCapped)
}

// noteReadFailed notes p for retryFailedReads: its polls look again
// readRetryIntervalMs after the first failure noted since the last retry.
func (n *Node) noteReadFailed(t *topic, p *partition) {
	if len(n.readFailed) == 0 {
		n.readRetryAtMs = n.nowMs + readRetryIntervalMs
	}
	n.readFailed.add(t.info.Name, p.key.index)
}

// retryFailedReads tells the polls of the partitions whose reads failed,
// once their retry is due. A look that fails again notes its partition
// for the next retry.
func (n *Node) retryFailedReads() {
	if len(n.readFailed) == 0 || n.nowMs < n.readRetryAtMs {
		return
	}
	n.tellPartitions(&n.readFailed)
}

// tellPollsOf makes the polls that may take a record of the given
// partitions of a topic look again: those parked here (wakePartitions)
// and, through their subscriptions, those parked on other nodes.
func (n *Node) tellPollsOf(topicName string, partitions []int) {
	n.notifySubscribers(topicName)
	n.wakePartitions(topicName, partitions)
}

// partitionsToTell is, by topic, the partitions whose polls are to be
// told to look again later (tellPollsOf): the topic's unpinned polls,
// which every wake walks, and those pinned to a partition of the set.
// A topic's set holds each partition once (at most the topic's count, so
// a set that lives across rounds stops growing), and is empty when only
// the unpinned polls are to be told. nil when empty. The node's own
// methods add to it and tell it whole (tellPartitions).
type partitionsToTell map[string]map[int]bool

// add marks the polls that may take a record of a partition of a topic;
// msg.PartitionNone marks only the unpinned ones.
func (s *partitionsToTell) add(topicName string, index int) {
	if *s == nil {
		*s = partitionsToTell{}
	}
	of := (*s)[topicName]
	if of == nil {
		of = map[int]bool{}
		(*s)[topicName] = of
	}
	if index != msg.PartitionNone {
		of[index] = true
	}
}

// addAll marks what another set marks.
func (s *partitionsToTell) addAll(other partitionsToTell) {
	for name, of := range other { //determinism:ok a set: the order of adding changes nothing
		s.add(name, msg.PartitionNone)
		for index := range of { //determinism:ok as above
			s.add(name, index)
		}
	}
}

// tellPartitions tells the polls of a set's topics, in the order of their
// names, and empties the set (first: a poll told may mark it again).
// An empty set returns at once: the callers run every Ready and Advance,
// nearly always with nothing to tell, and sorting the keys of even a nil
// map allocates the iterator's state (about 4 % of the simulator's CPU).
func (n *Node) tellPartitions(s *partitionsToTell) {
	set := *s
	*s = nil
	if len(set) == 0 {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		n.tellPollsOf(name, slices.Sorted(maps.Keys(set[name])))
	}
}

// skippable reports whether a read error is one a consume skips past: a
// record recovery found corrupt, or one retention removed.
func skippable(err error) bool {
	return errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrAgedOut)
}

func (n *Node) skipUnreadable(t *topic, p *partition, log *storage.Log, offset uint64, err error) {
	switch {
	case errors.Is(err, storage.ErrCorrupt):
		chaos.Reached(chaos.MarkNodeCorruptRecordSkipped)
		n.observer.CorruptSkipped(t.info.Name, p.key.index)
		p.leases.Skip(offset)
	case errors.Is(err, storage.ErrAgedOut):
		if dropped := p.leases.AdvanceTo(log.Oldest()); dropped > 0 {
			n.observer.ConsumerDropped(t.info.Name, p.key.index, dropped)
		}
	default:
		invariant.Broken("node: read of reserved offset %d of %s: %v", offset, p.dir, err)
	}
	n.noteCommitted(p, log)
}

func (n *Node) message(t *topic, p *partition, record storage.Record, r lease.Reservation) msg.Message {
	return msg.Message{
		Topic: t.info.Name, Partition: p.key.index, Offset: r.Offset,
		Key: record.Key, Payload: record.Payload, TimestampMs: record.TimeMs,
		ReceiptHandle: n.handles.Format(t.info.Name, p.key.index, r.Offset, r.Nonce),
		DeliveryCount: r.DeliveryCount, DeadLetter: messageOrigin(record.Origin),
	}
}

// noteFrontier copies the lease table's frontier into the partition's
// log, or, when the log is closed, marks the partition for the next
// commit-persist tick (saveFrontier): the relay of a dead letter often
// evicts its source's log (or, across nodes, idleness closes it) before
// the copy is durable, and a frontier only in the lease table was
// persisted by nothing, so a restart, even a graceful one, delivered the
// dead-lettered record again.
func (n *Node) noteFrontier(p *partition) {
	if p.log == nil {
		p.frontierUnsaved = true
		return
	}
	n.noteCommitted(p, p.log)
}

// saveFrontier opens the closed log of a partition marked by noteFrontier,
// which notes the frontier in it (openLog); a log that cannot open now (at
// the open-log cap with every open log unsynced, say) stays marked for the
// next try.
func (n *Node) saveFrontier(p *partition) {
	t, ok := n.lookupTopic(p.key.topic)
	if !ok {
		p.frontierUnsaved = false // the topic is gone, and its frontier with it
		return
	}
	_, err := n.openLog(t, p)
	p.frontierUnsaved = err != nil
	if err == nil {
		chaos.Reached(chaos.MarkNodeDeadLetterFrontierSaved)
	}
}

// noteCommitted copies the lease table's frontier into the log, to be
// persisted at the next commit-persist tick.
func (n *Node) noteCommitted(p *partition, log *storage.Log) {
	if c := p.leases.Committed(); c > log.Committed() {
		log.SetCommitted(min(c, log.HWM()))
	}
}

// wake serves the parked long polls of a topic, oldest first (the order
// of serving: waiterSet). Each partition is asked at most once for the
// polls pinned to it, and the partitions once for the unpinned polls,
// whatever the number of polls: a poll that found nothing tells that the
// next one of its kind would find nothing either (wakeWalk). Asking for
// every poll, each a reservation that reopens an evicted log, let 4,000
// polls parked on the empty partitions of a topic take two thirds of the
// node loop's time while a few clients produced to one of its
// partitions, and every other client's produce slowed by a third.
func (n *Node) wake(topicName string) {
	if t, ok := n.lookupTopic(topicName); ok {
		walk := n.waiters.wakeAll(topicName)
		n.serveWoken(t, &walk)
	}
}

// wakePartitions is wake for records that became servable only in the
// given partitions of the topic: the polls pinned to its other
// partitions could take none of them and are not looked at (with 4,000
// polls pinned to the empty partitions of a topic, walking them at every
// round that made another partition's records visible was a tenth of the
// node's time).
func (n *Node) wakePartitions(topicName string, partitions []int) {
	if t, ok := n.lookupTopic(topicName); ok {
		walk := n.waiters.wakeOf(topicName, partitions)
		n.serveWoken(t, &walk)
	}
}

// serveWoken asks the polls of a wake's walk for records, and answers
// those that got some.
func (n *Node) serveWoken(t *topic, walk *wakeWalk) {
	for w, ok := walk.next(); ok; w, ok = walk.next() {
		messages, _ := n.reserve(t, w.request) // a read error leaves the poll parked until its wait ends
		if len(messages) == 0 {
			continue // its group leaves the walk
		}
		walk.served()
		chaos.Reached(chaos.MarkNodeLongPollWoken)
		n.observer.ConsumeWait(t.info.Name, "hit", n.nowMs-w.parkedAtMs)
		n.reply(w.id, msg.ConsumeResult{Messages: messages, Batch: w.request.Max > 0}, nil)
	}
}

// expireWaiters answers the long polls whose wait ran out: with nothing,
// unless a poll that asked the other owners first, its round still out,
// finds records here (serveExpired).
func (n *Node) expireWaiters() {
	for _, w := range n.waiters.popExpired(n.nowMs) {
		if w.remoteFirst && n.serveExpired(w) {
			continue
		}
		chaos.Reached(chaos.MarkNodeLongPollTimedOut)
		n.observer.ConsumeWait(w.request.Topic, "timeout", n.nowMs-w.parkedAtMs)
		n.reply(w.id, msg.ConsumeResult{Messages: []msg.Message{}, Batch: w.request.Max > 0}, nil)
	}
}

// serveExpired serves a poll whose wait ran out (out of the set already)
// from this node's partitions, and reports whether it got records. A poll
// that asked the other owners first looks here only when its round ends
// (serveHere), and records that were here when it parked wake nobody: a
// wait shorter than the round was answered empty with them deliverable.
func (n *Node) serveExpired(w *waiter) bool {
	t, ok := n.lookupTopic(w.request.Topic)
	if !ok {
		return false
	}
	messages, _ := n.reserve(t, w.request) // a read error: answered empty, as before
	if len(messages) == 0 {
		return false
	}
	n.observer.ConsumeWait(w.request.Topic, "hit", n.nowMs-w.parkedAtMs)
	n.reply(w.id, msg.ConsumeResult{Messages: messages, Batch: w.request.Max > 0}, nil)
	return true
}

// nextLeaseDeadlineMs is at or before the earliest reservation deadline
// of any partition (math.MaxInt64 with none): the earliest due time of
// the lease due heap, read in constant time. Asked at every tick and
// after every round, a walk over every partition's table took a tenth to
// a sixth of a busy node's CPU with 20,000 partitions.
func (n *Node) nextLeaseDeadlineMs() int64 {
	invariant.Costly(n.checkLeaseDue)
	return n.leaseBudget.due.nextMs()
}

// checkLeaseDue verifies the lease due heap against a walk of every
// partition: it holds tracked partitions only, and every one whose table
// holds a deadline, due no later than that deadline.
func (n *Node) checkLeaseDue() error {
	if err := n.leaseBudget.due.check(); err != nil {
		return err
	}
	for _, p := range n.leaseBudget.due.heap {
		if n.partitions[p.key] != p {
			return fmt.Errorf("node: %s is in the lease due heap but not tracked", p.dir)
		}
	}
	for _, p := range n.sortedPartitions() {
		if p.leases == nil {
			continue
		}
		d, ok := p.leases.NextDeadline()
		if ok && (p.leaseDueSlot == 0 || d < p.leaseDueMs) {
			return fmt.Errorf("node: %s holds a lease deadline %d before its due time %d (in the heap: %t)", p.dir, d, p.leaseDueMs, p.leaseDueSlot != 0)
		}
	}
	return nil
}

// expireLeases releases reservations past their deadline and wakes the
// polls that may take the records they gave back (those of the
// partitions that got some, once per topic); it looks only at the
// partitions due (leaseDue), and puts back those whose tables still hold
// a deadline, at the earliest one.
func (n *Node) expireLeases() {
	if n.nextLeaseDeadlineMs() > n.nowMs {
		return // the common case on every tick: no walk, no allocation
	}
	due := n.leaseBudget.due.takeDue(n.nowMs)
	var told partitionsToTell
	for _, p := range due {
		if p.leases == nil {
			continue // forgotten (forgetLeases): a new table notes its own deadlines
		}
		if d, ok := p.leases.NextDeadline(); ok && d <= n.nowMs && p.leases.Expire(n.nowMs) > 0 {
			chaos.Reached(chaos.MarkNodeLeaseExpired)
			told.add(p.key.topic, p.key.index)
		}
		n.noteLeaseDeadlines(p) // before the polls told below take new leases
	}
	n.tellPartitions(&told)
}

func (n *Node) replay(r msg.Replay) (msg.Result, error) {
	t, err := n.topic(r.Topic)
	if err != nil {
		return nil, err
	}
	if err := checkRoutedFor(t, r.TopicIncarnation, r.TopicCreatedAtMs, "replay"); err != nil {
		return nil, err
	}
	if r.Partition < 0 || r.Partition >= t.info.Partitions {
		return nil, invalidPartition(t, r.Partition)
	}
	if !n.ownedHere(t, r.Partition) {
		return nil, notOwner(t, r.Partition)
	}
	if n.readBudget() == 0 {
		return nil, n.spentReads() // a replay reads as a consume does: into the round's reads
	}
	p := n.partitionOf(t, r.Partition)
	log, err := n.openLog(t, p)
	if err != nil {
		return nil, msg.Unavailable("partition %d of %s is unavailable: %s", r.Partition, r.Topic, storageCause(err))
	}
	record, err := log.Read(r.Offset)
	switch {
	case errors.Is(err, storage.ErrBeyondHWM) && (n.frozen(t, r.Partition) || n.writeFence() != nil):
		// Frozen for a move or fenced: the new owner may already hold
		// records past this copy's end, so "nothing there" could be false.
		// A disk under its reserve is neither: it only refuses appends, so
		// the end read here is the partition's end (localWriteRefusal,
		// which counts it, answered such a replay 503 for as long as the
		// disk stayed low).
		return nil, msg.Unavailable("partition %d of %s is frozen or fenced here; retry", r.Partition, r.Topic)
	case errors.Is(err, storage.ErrBeyondHWM):
		return msg.ReplayResult{}, nil
	case errors.Is(err, storage.ErrAgedOut):
		return nil, msg.Gone("offset %d aged out of retention (oldest retained: %d)", r.Offset, log.Oldest())
	case errors.Is(err, storage.ErrCorrupt):
		return nil, msg.Gone("offset %d is unreadable (corrupt record skipped by recovery)", r.Offset)
	case err != nil:
		return nil, msg.Internal("replay failed: %s", storageCause(err))
	}
	n.reads.bytes += len(record.Payload)
	n.observer.Consumed(t.info.Name, r.Partition, 1, int64(len(record.Payload)))
	return msg.ReplayResult{Message: &msg.Message{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Key: record.Key, Payload: record.Payload, TimestampMs: record.TimeMs, DeadLetter: messageOrigin(record.Origin),
	}}, nil
}
