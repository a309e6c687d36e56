package node

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/node/movesource"
	"narad/storage"
)

// partitionKey names a partition.
type partitionKey struct {
	topic string
	index int
}

// partition is the node's state for one partition it owns.
type partition struct {
	key partitionKey
	dir string
	// log is the open log, or nil while closed (idle, failed, not yet
	// opened). Only openLog sets it; closeLog and failLog clear it.
	log *storage.Log
	// stamped is set once the directory's stamp is known to name the
	// topic's identity (stamp.go); only stampPartition sets it, before
	// the partition's first open.
	stamped bool
	// stampRetryAtMs is when stampPartition next tries to write the stamp
	// of a directory that opened unstamped (a full disk, openUnstamped);
	// 0 otherwise. Only stamp.go changes it.
	stampRetryAtMs int64
	// leases is the queue state; created when the log is first opened and
	// kept while the log is closed for idleness.
	leases *lease.Table
	// retentionDeferred is set by retain when the log's sync round was in
	// flight (a driver that ticks while a Ready's rounds run): the log
	// deletes nothing then, and Advance retains it once that round
	// completed, rather than a whole check interval later, when the next
	// round may be in flight again.
	retentionDeferred bool
	// freeze is the partition's freeze for a move: no produce and no
	// commit is accepted while it holds. Begun by MoveFreeze (or at start
	// for a partition with a move under way); ended by reconcileMoves
	// when the applied move changes. Its waiting MoveFreeze requests are
	// answered once the records accepted before the freeze are durable
	// (at Advance).
	freeze movesource.Freeze
	// fanout holds the cursors of the children of the partition's topic,
	// by child name, once loaded from their files (fanout_copy.go); each
	// cursor's epoch is the attach epoch of its link when it was loaded.
	fanout map[string]*fanoutCursor
	// cursorLoadFailures holds back, by child, the next load of a cursor
	// whose file could not be read (fanout_copy.go): an entry goes at the
	// child's next successful load, or with its link
	// (removeStaleCursors).
	cursorLoadFailures map[string]cursorLoadFailure
	// fanoutWakeMs is when the cursors next have work (math.MaxInt64:
	// caught up, or waiting for a batch's answer); before then, while
	// fanoutPassVersion is the topics' version, a pass neither steps them
	// nor reopens a closed log for them (cursorsWait). fanoutDue brings it
	// to now.
	fanoutWakeMs int64
	// fanoutPassVersion is the meta.State.TopicsVersion of the last pass
	// over the cursors (set with fanoutWakeMs): a change of the topics
	// since (a link attached or detached) makes them due.
	fanoutPassVersion uint64
	// fanoutOpen holds back the cursors' next open of the log after one
	// failed (fanout_copy.go).
	fanoutOpen fanoutOpenRetry
	// cursorFiles says when the cursors that advanced are written to
	// their files, in the partition's sync round (fanout_cursor.go).
	cursorFiles cursorFiles
	// cursorLinks are the topic's links the cursor files were last
	// cleaned against (valid once cursorLinksKnown): refreshFanoutView
	// lists the directory again only when they change.
	cursorLinks      []meta.ChildLink
	cursorLinksKnown bool
	// closed describes the log as it was when it last closed (idle,
	// evicted or failed): the lag of a fan-out cursor of a closed log is
	// counted from its HWM. Set by dropLog only.
	closed storage.LogStats
	// closedCommitted is the committed consumer offset of the log when it
	// last closed, beside closed: the backlog a closed log reports
	// (PartitionBacklogs). closedKnown is set once a log of the partition
	// closed since the node started, so that closed and closedCommitted
	// describe it (a partition moved in, its leases adopted but its log
	// never opened here, has neither). Set by dropLog only.
	closedCommitted uint64
	closedKnown     bool
	// closedIntact is set while the log is closed after a clean close
	// (evicted or idle: nothing unsynced, no error): its files then hold
	// what closed describes, so that a reserve whose lease table has none
	// of its records to deliver, a stats request, and a retention pass
	// with nothing yet expired need not reopen (and so recover) the log.
	// Set by dropLog, cleared by openLog; so while it is set, log is nil
	// and leases (made at the first open) is not.
	closedIntact bool
	// roundInFlight is set while a Ready's sync round of the partition
	// (its data, committed offset or fan-out cursor files) is out: taken,
	// not yet advanced. With pipelined group commit the round runs off
	// the loop, so the log stays open meanwhile (logBusy), and one closed
	// anyway (its storage failed) opens again only after the round:
	// recovery of the directory would remove the round's temporary files
	// and write the hwm file under it. Set by Ready, cleared by
	// completeSyncs.
	roundInFlight bool
	// committedNoSpaceSaidMs is when a round whose committed offset the
	// disk had no room for was last said (committed-offset-write-refused),
	// at most once per noSpaceSayEveryMs; 0 before (maintenance.go).
	committedNoSpaceSaidMs int64
	// frontierUnsaved is set while the lease table's frontier moved past
	// the log's committed offset with the log closed (a dead letter
	// settled then): the commit-persist tick and Close open the log to
	// note it. Set by noteFrontier, cleared by saveFrontier.
	frontierUnsaved bool
	// leaseDueMs is at or below the earliest reservation deadline of the
	// lease table while leaseDueSlot is not 0: the partition is then in
	// the node's lease due heap (leaseBudget.due), at leaseDueSlot-1. A
	// tracked partition whose table holds a deadline is always there.
	// Only leaseDue's methods change them.
	leaseDueMs   int64
	leaseDueSlot int
}

// PartitionDir is the directory of a partition's log on its owner's disk.
func PartitionDir(topicName string, index int) string {
	return topicsDir + "/" + topicName + "/" + partitionEntry(index)
}

// partitionEntry is the name of a partition's directory in its topic's
// ("p00003"); partitionIndexOf parses it.
func partitionEntry(index int) string { return fmt.Sprintf("p%05d", index) }

func topicOfDir(dir string) string {
	topicName, _ := splitPartitionDir(dir)
	return topicName
}

// splitPartitionDir splits a PartitionDir into its topic's name and its
// partition's entry; it runs at every eviction's look at the open logs,
// so it neither allocates nor scans with fmt.
func splitPartitionDir(dir string) (topicName, entry string) {
	rest, underTopics := strings.CutPrefix(dir, topicsDir+"/")
	topicName, entry, split := strings.Cut(rest, "/")
	if !underTopics || !split || topicName == "" || strings.IndexByte(entry, '/') >= 0 { // guarded: the arguments would allocate on every call
		invariant.Broken("node: bad partition dir %q", dir)
	}
	return topicName, entry
}

// partitionOf returns the partition's state, creating it (closed) if new.
func (n *Node) partitionOf(t *topic, index int) *partition {
	if index < 0 || index >= t.info.Partitions { // guarded: the arguments would allocate on every call
		invariant.Broken("node: partition %d of %s out of range", index, t.info.Name)
	}
	key := partitionKey{t.info.Name, index}
	p, ok := n.partitions[key]
	if !ok {
		p = &partition{key: key, dir: PartitionDir(t.info.Name, index)}
		n.addPartition(p)
	}
	return p
}

// addPartition starts tracking p.
func (n *Node) addPartition(p *partition) {
	n.partitions[p.key] = p
	n.partitionOrder = nil
}

// removePartition stops tracking p. A loop over sortedPartitions may call
// it: the loop keeps the order it started with.
func (n *Node) removePartition(p *partition) {
	if p.leases != nil {
		n.nonceFloor = max(n.nonceFloor, p.leases.LastNonce())
	}
	n.uncountLeasesOf(p)
	delete(n.partitions, p.key)
	delete(n.frozenPartitions, p.key)
	n.leaseBudget.due.remove(p)
	n.partitionOrder = nil
}

// forgetLeases drops the lease table of a partition whose log came back
// below the offsets the table has seen: recovery lost acknowledged frames
// (media damage above the persisted HWM) and hands their offsets out
// again. The table's deliveries, acks and frontier there name records
// that are gone; kept, they would hide the new records at those offsets
// from consumers for ever and let an old receipt handle ack one nobody
// received. The next table starts at the log's committed offset with
// nonces above this one's, so no old handle names its reservations.
func (n *Node) forgetLeases(p *partition, log *storage.Log) {
	n.observer.Event("leases-forgotten", fmt.Sprintf("%s: the log recovered to %d, below the %d its lease table had seen",
		p.dir, log.HWM(), p.leases.HighWatermarkSeen()))
	n.nonceFloor = max(n.nonceFloor, p.leases.LastNonce())
	n.uncountLeasesOf(p)
	p.leases = nil
}

// openLog returns the partition's log, opening (recovering) it if needed;
// at the cap of open logs it first closes the least recently used one
// that can close, or opens it past the cap for the produce whose logs are
// being opened (makeRoomForLog).
func (n *Node) openLog(t *topic, p *partition) (*storage.Log, error) {
	if err := n.otherDataDirError(); err != nil {
		return nil, err // its partitions' records are on another disk
	}
	if _, orphaned := n.jobsOrphaned[p.key]; orphaned {
		// A move's finalize job is installing a copy into the directory
		// on another goroutine: nothing may open it before the job is
		// back (jobDone), even once the node owns the partition.
		return nil, msg.Unavailable("a move is still installing its copy here; retry")
	}
	if n.purgesPending[p.key.topic] {
		return nil, msg.Unavailable("the files of a deleted topic of this name are still being removed here; retry")
	}
	if p.roundInFlight && p.log == nil { // closed under its round (roundInFlight)
		return nil, msg.Unavailable("partition %d of %s closed while a sync round of it was on disk; retry", p.key.index, p.key.topic)
	}
	if err := n.stampPartition(t, p); err != nil {
		n.observer.Event("log-open-failed", fmt.Sprintf("%s: its topic stamp: %v", p.dir, err))
		return nil, err
	}
	log, recovery, err := n.storeLog(t, p)
	if err != nil {
		return nil, err
	}
	if p.log != log {
		n.reportRecovery(p, recovery)
		if err := n.settleCursors(p, log.HWM()); err != nil {
			_ = n.store.Close(p.dir) // reopened, and its cursors settled, at the next use
			n.observer.Event("fanout-cursor-clamp-failed", fmt.Sprintf("%s: %v", p.dir, err))
			return nil, msg.Unavailable("partition %d of %s: its fan-out cursors could not be brought back to its recovered log: retry", p.key.index, p.key.topic)
		}
	}
	p.log, p.closedIntact = log, false
	if p.leases != nil && p.leases.HighWatermarkSeen() > log.HWM() {
		n.forgetLeases(p, log)
	}
	if p.leases == nil {
		p.leases = lease.New(log.Committed(), n.nonceFloor, n.leaseConfig(t))
		n.countLeasesOf(p)
		n.watchExhausted(p)
	}
	// A log reopened after a failure (or idleness) recovers the committed
	// offset last persisted; acks since then live in the lease table.
	n.noteCommitted(p, log)
	if dropped := p.leases.AdvanceTo(log.Oldest()); dropped > 0 {
		n.observer.ConsumerDropped(t.info.Name, p.key.index, dropped)
	}
	return log, nil
}

// logAbsent reports whether p has no log on this node's disk and none can
// appear but through openLog: not opened since the node started, no move
// installing a copy into its directory, no deleted namesake's files being
// removed, and no directory. A read of such a partition (a consume's
// look, a topic's stats) finds nothing, and need not make the log's files
// (a directory, an empty segment, the hwm file and the durable topic
// stamp) to find it: a consumer of many never-written partitions had the
// node make and sync files for each, on the loop, every other client
// waiting (audit: 0.44 s per consume of a 108-partition topic, 620 ms
// stalls of other produces). The price is one stat a look.
func (n *Node) logAbsent(p *partition) bool {
	if p.log != nil || p.closedIntact || p.leases != nil {
		return false
	}
	if _, orphaned := n.jobsOrphaned[p.key]; orphaned || n.purgesPending[p.key.topic] || n.otherDataDirError() != nil {
		return false
	}
	_, err := n.fs.Stat(p.dir)
	return errors.Is(err, storage.ErrNotExist)
}

// storeLog returns the partition's log from the store: the open one (one
// lookup, as the fan-out asks for its open logs at every tick), else the
// one it opens once there is room for it (makeRoomForLog).
func (n *Node) storeLog(t *topic, p *partition) (*storage.Log, storage.Recovery, error) {
	if log, open := n.store.Use(p.dir, n.nowMs); open {
		return log, storage.Recovery{}, nil
	}
	pastCap, err := n.makeRoomForLog()
	if err != nil {
		n.openRefused.add(t.info.Name, p.key.index) // a poll that found the log closed to it is woken by nothing else
		return nil, storage.Recovery{}, err
	}
	open := n.store.Log
	if pastCap {
		open = n.store.LogPastCap
	}
	log, recovery, err := open(p.dir, n.nowMs)
	if err != nil {
		n.observer.Event("log-open-failed", fmt.Sprintf("%s: %v", p.dir, err))
	}
	return log, recovery, err
}

// makeRoomForLog closes least recently used logs until one more fits
// under OpenLogsMax. A log with unsynced records or offsets, or one whose
// partition waits for a sync round or is being opened for a produce
// (producing), stays open. When every open log is such, the log being
// opened for a produce goes past the cap (pastCap) as long as the logs of
// other partitions stay under it: a produce that touches more partitions
// than the cap would otherwise be refused at every retry. Any other open
// is refused as retryable (the next sync round frees the logs, and this
// one schedules the persist of changed committed offsets) rather than
// exceeding the cap. So the open logs stay within the cap plus the
// partitions of one produce, and closeLogsPastCap brings them back under
// it once they are synced.
func (n *Node) makeRoomForLog() (pastCap bool, err error) {
	for n.store.Full() {
		if n.closeLeastRecentLog() {
			continue
		}
		if n.producing.active() && n.openOutsideProducing() < n.store.OpenMax() {
			return true, nil
		}
		n.observer.Event("open-logs-full", fmt.Sprintf("%d logs open, none can close", len(n.store.OpenDirs())))
		// Logs held open only by a changed committed offset can close
		// once it is persisted: the next sync round does that.
		n.scheduleCommitPersist()
		chaos.Reached(chaos.MarkNodeOpenLogsFull)
		return false, msg.Unavailable("this node has %d partition logs open, each with unsynced data: retry", n.store.OpenMax())
	}
	return false, nil
}

// closeLeastRecentLog closes the least recently used log that may close
// (not logBusy, nothing unsynced), and reports whether there was one.
func (n *Node) closeLeastRecentLog() bool {
	dir, ok := n.store.LeastRecent(n.logBusy)
	if !ok {
		return false
	}
	err := n.store.Evict(dir)
	if err != nil {
		n.observer.Event("log-evict-failed", err.Error())
	}
	n.logEvictions++
	n.lastEvictionMs = n.nowMs
	chaos.Reached(chaos.MarkNodeLogEvicted)
	if p, ok := n.partitions[partitionKeyOfDir(dir)]; ok {
		n.dropLog(p, err == nil)
	}
	return true
}

// evicting reports whether the node closed a log for room within the last
// Config.HWMEagerAfterEvictionMs. Its logs then write their hwm files with
// each round (storage.Log.PersistHWMNextRound), so a log evicted later
// has nothing to write at its close: a lazy hwm file costs the close an
// fsync of its own on the loop, one per eviction, where the rounds' hwm
// writes share one group sync per round.
func (n *Node) evicting() bool {
	return n.cfg.HWMEagerAfterEvictionMs > 0 && n.nowMs-n.cfg.HWMEagerAfterEvictionMs < n.lastEvictionMs
}

// dropLog forgets a partition's closed log, keeping its description
// (closed). The caller closed it in the store; intact says the close was
// clean (closedIntact).
func (n *Node) dropLog(p *partition, intact bool) {
	if p.log != nil {
		p.closed, p.closedCommitted, p.closedKnown = p.log.Stats(), p.log.Committed(), true
	}
	p.closedIntact = intact && p.log != nil
	p.log = nil
}

// closeLogsPastCap closes logs opened past the cap for a produce once they
// may close (its sync round completed), back down to the cap.
func (n *Node) closeLogsPastCap() {
	for n.store.PastCap() && n.closeLeastRecentLog() {
	}
}

// openOutsideProducing counts the open logs of partitions other than the
// produce's being opened.
func (n *Node) openOutsideProducing() int {
	count := 0
	for _, dir := range n.store.OpenDirs() {
		if !n.producing.has(partitionKeyOfDir(dir)) {
			count++
		}
	}
	return count
}

// logBusy reports whether the partition of dir waits for the sync round
// of the Ready being gathered, has a round in flight (roundInFlight: one
// that writes only its fan-out cursor files leaves its log clean), is one
// the produce being opened appends to, or is the parent whose cursors are
// being driven: its log must stay open until then.
func (n *Node) logBusy(dir string) bool {
	key := partitionKeyOfDir(dir)
	if _, dirty := n.dirty[key]; dirty {
		return true
	}
	if n.producing.has(key) || n.driving != nil && n.driving.key == key {
		return true
	}
	p, ok := n.partitions[key]
	return ok && (p.freeze.Waiting() || p.roundInFlight)
}

// partitionKeyOfDir is the inverse of PartitionDir.
func partitionKeyOfDir(dir string) partitionKey {
	topicName, entry := splitPartitionDir(dir)
	index, ok := partitionIndexOf(entry)
	if !ok { // guarded: the arguments would allocate on every call
		invariant.Broken("node: bad partition dir %q", dir)
	}
	return partitionKey{topicName, index}
}

// reportRecovery reports what recovery found on opening p's log. A zero
// tail on a log the node closed cleanly itself (closedIntact, not yet
// cleared) is the one its close kept, not one a crash left.
func (n *Node) reportRecovery(p *partition, r storage.Recovery) {
	if r.ZeroTailBytes > 0 && !p.closedIntact { // the clean end of an active segment: nothing to report
		chaos.Reached(chaos.MarkNodeRecoveredZeroTail)
	}
	if r.TruncatedBytes == 0 && r.CorruptCount == 0 && r.LostAcknowledged == 0 {
		return
	}
	if r.TruncatedBytes > 0 {
		chaos.Reached(chaos.MarkNodeRecoveredTornTail)
	}
	n.observer.Event("log-recovered", fmt.Sprintf("%s: hwm %d, truncated %d bytes, %d corrupt records %v, %d acknowledged records lost",
		p.dir, r.HWM, r.TruncatedBytes, r.CorruptCount, r.CorruptOffsets, r.LostAcknowledged))
}

func (n *Node) leaseConfig(t *topic) lease.Config {
	return lease.Config{InFlightMax: t.info.InFlightMax, AckedAheadMax: t.info.AckedAheadMax, MaxDeliveries: t.info.MaxDeliveries}
}

// failLog handles a storage error of a partition log: the log is dropped
// (it reopens from disk on next use, recovering what is durable), and
// every reply that waited for its sync round becomes a retryable error.
func (n *Node) failLog(p *partition, cause error) {
	chaos.Reached(chaos.MarkNodeLogFailed)
	n.observer.Event("log-failed", fmt.Sprintf("%s: %v", p.dir, cause))
	_ = n.store.Close(p.dir) // the log is failed; its close error adds nothing
	n.dropLog(p, false)
	n.failDependents(p, msg.Unavailable("partition %d of %s: storage failed, retry: %s", p.key.index, p.key.topic, storageCause(cause)))
}

// failDependents replaces the queued replies that depended on p's sync
// round with err, and forgets p's pending sync.
func (n *Node) failDependents(p *partition, err *msg.Error) {
	for _, i := range n.dependents[p.key] {
		n.replies[i] = msg.Reply{ID: n.replies[i].ID, Err: err}
	}
	for _, id := range p.freeze.TakeWaiting() {
		n.reply(id, nil, err)
	}
	delete(n.dependents, p.key)
	delete(n.dirty, p.key)
}

// markDirty records that p has unsynced state for the next Ready.
func (n *Node) markDirty(p *partition) {
	if p.log == nil { // guarded: the argument would allocate on every call
		invariant.Broken("node: partition %s marked dirty with no open log", p.dir)
	}
	n.dirty[p.key] = p
}

// sortKeys sorts keys by topic, then partition. It allocates nothing (a
// sort.Slice boxes the slice on every call, even an empty one, and the
// node sorts its move sessions on every tick).
func sortKeys(keys []partitionKey) {
	slices.SortFunc(keys, compareKeys)
}

func compareKeys(a, b partitionKey) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
}

func (n *Node) sortedDirty() []*partition {
	return sortedValues(n.dirty)
}

// sortedPartitions returns the partitions sorted by key. The slice is
// shared until the set changes: callers read it and never modify it. The
// state checker and several Tick passes ask for it on every step, so it is
// built once per change of the set, not once per call.
func (n *Node) sortedPartitions() []*partition {
	if n.partitionOrder == nil {
		n.partitionOrder = sortedValues(n.partitions)
	}
	invariant.Costly(func() error { return checkPartitionOrder(n.partitionOrder, n.partitions) })
	return n.partitionOrder
}

// checkPartitionOrder verifies the invariant of Node.partitionOrder.
func checkPartitionOrder(order []*partition, partitions map[partitionKey]*partition) error {
	if len(order) != len(partitions) {
		return fmt.Errorf("node: %d partitions in order, %d tracked", len(order), len(partitions))
	}
	for i, p := range order {
		if partitions[p.key] != p || (i > 0 && compareKeys(order[i-1].key, p.key) >= 0) {
			return fmt.Errorf("node: partition order stale or unsorted at %s", p.dir)
		}
	}
	return nil
}

func sortedValues(m map[partitionKey]*partition) []*partition {
	keys := make([]partitionKey, 0, len(m))
	for k := range m { //determinism:ok sorted below
		keys = append(keys, k)
	}
	sortKeys(keys)
	out := make([]*partition, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// ErrDataWithoutMetastore refuses a start whose partition data has no
// metastore to say which topics it belongs to.
var ErrDataWithoutMetastore = errors.New("node: partition data without its metastore")

// sweepOrphans removes topic directories that the metastore's durable
// state does not know (left by a crash in the middle of a delete). A node
// writes a topic's data only after its replica applied the topic, and the
// applied state is durable, so a directory for an unknown name is stale.
func (n *Node) sweepOrphans() error {
	names, err := n.fs.List(topicsDir)
	if errors.Is(err, storage.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	// New refused data beside a metastore that never saw a member
	// (acceptStart): deleting it as orphans would be silent data loss.
	invariant.Check(len(names) == 0 || len(n.meta.State().Members()) > 0,
		"sweepOrphans found %d topic directories beside a metastore without members", len(names))
	for _, name := range names {
		if _, ok := n.meta.State().Topic(name); ok {
			continue
		}
		n.observer.Event("orphan-removed", topicsDir+"/"+name)
		if err := n.fs.RemoveAll(topicsDir + "/" + name); err != nil {
			return fmt.Errorf("remove orphan topic %s: %w", name, err)
		}
	}
	return nil
}
