package node

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// The cursor file of one child in a parent partition's directory
// (docs/architecture.md#fan-out): "fanout-<child>.offset", holding the
// attach epoch and the next parent offset to copy. It is replaced
// atomically by the partition's sync round (at most once per
// CursorPersistIntervalMs), and only with an offset whose records are
// already durable at the child's owners (commit before advance: a crash
// repeats a batch, never skips one). A round the disk has no room for
// leaves the files as they were (cursorsRefused). Because it lives in the
// partition's directory, a move carries it to the new owner.
const (
	cursorFilePrefix = "fanout-"
	cursorFileSuffix = ".offset"
	// fanoutChildNameBytesMax bounds the name of a fan-out child: its
	// cursor file is named after it, and replaced through a temporary file
	// whose name must fit storage.FileNameBytesMax too. A longer child
	// (topic names go to 255 bytes) made every sync round that wrote the
	// cursor fail (a node stopped by its own fsync failure, again at each
	// restart) or the cursor never load (no copies).
	fanoutChildNameBytesMax = storage.FileNameBytesMax - len(cursorFilePrefix) - len(cursorFileSuffix) - len(storage.TemporarySuffix)
)

// cursorFile is the JSON content of a cursor file.
type cursorFile struct {
	// Epoch is the attach epoch in 16 hex digits.
	Epoch string `json:"epoch"`
	// NextOffset is the first parent offset not yet copied.
	NextOffset uint64 `json:"next_offset"`
	// CRC is the CRC32C of the epoch and the offset (cursorCRC), so that
	// bit rot that leaves valid JSON (a digit of next_offset flipped, and
	// the child would skip records) reads as a damaged file: copying
	// starts again from the oldest record, repeating copies, never
	// skipping one. A file without it is damaged too.
	CRC *uint32 `json:"crc"`
}

var cursorCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// cursorCRC is the checksum a cursor file carries for its epoch and
// offset.
func cursorCRC(epoch string, next uint64) uint32 {
	return crc32.Checksum(fmt.Appendf(nil, "%s:%d", epoch, next), cursorCastagnoli)
}

// fanoutCursor is the copy of one parent partition into one child, on
// the parent partition's owner.
type fanoutCursor struct {
	child string
	epoch uint64
	// next is the first parent offset not yet durable in the child: it
	// advances only once a batch is durable there.
	next uint64
	// persisted is the cursor file's next offset as of the last sync
	// round that wrote it (or as read at load); the file is written from
	// next, so persisted <= next but after a load that found it past the
	// HWM.
	persisted uint64
	// unwritten is set while the file does not hold this cursor's epoch
	// (started afresh, or the file did not decode): the next round
	// writes it.
	unwritten bool
	// sentTo is the end of the batch in flight; 0 when none is.
	sentTo uint64
	// sentCap bounds where the batch in flight advances the cursor: the
	// lowest high watermark the parent's log reopened at since it was
	// sent (rewindCursors), else math.MaxUint64. Set by sendBatch.
	sentCap uint64
	// pendingSinceMs is the commit time of the first record waiting to be
	// copied (the linger runs from it); 0 until it was read.
	pendingSinceMs int64
	// retryAtMs holds the cursor back after a failed batch.
	retryAtMs int64
	// heldUntilMs is when the record at next falls due (a delay child),
	// so that the cursor does not read it again before.
	heldUntilMs int64
	// stalledLogMs is when the last stall was logged (rate limit).
	stalledLogMs int64
	// copied counts the records this cursor made durable in the child
	// since it was loaded here.
	copied uint64
	// resumed is set when the cursor was loaded from its file (a restart,
	// or a move's new owner), not started afresh.
	resumed bool
}

// The phases a cursor can be in, as FanoutLags reports them: a fault
// that lands on the cursor's node meets each phase the cursor is in (the
// simulator's coverage of faults x cursor phases). A cursor may be in
// several at once (a batch in flight while an earlier one is durable in
// the child but not yet in the file); one in none is idle.
const (
	// CursorPhaseStarted: started afresh at the attach's epoch, no batch
	// durable in the child yet.
	CursorPhaseStarted = "started"
	// CursorPhaseResumed: loaded from its file, no batch durable in the
	// child since.
	CursorPhaseResumed = "resumed"
	// CursorPhaseInFlight: a batch was sent to the child and is not yet
	// durable there.
	CursorPhaseInFlight = "in-flight"
	// CursorPhaseUnpersisted: the cursor advanced past a durable batch and
	// its file does not hold that yet (a crash copies the batch again).
	CursorPhaseUnpersisted = "unpersisted"
	// CursorPhaseHeld: a delay child's cursor waits for its next record
	// to fall due.
	CursorPhaseHeld = "held"
)

// phases lists the phases the cursor is in now.
func (c *fanoutCursor) phases(nowMs int64) []string {
	var phases []string
	switch {
	case c.copied == 0 && c.resumed:
		phases = append(phases, CursorPhaseResumed)
	case c.copied == 0:
		phases = append(phases, CursorPhaseStarted)
	}
	if c.sentTo != 0 {
		phases = append(phases, CursorPhaseInFlight)
	}
	if c.next > c.persisted {
		phases = append(phases, CursorPhaseUnpersisted)
	}
	if c.heldUntilMs > nowMs {
		phases = append(phases, CursorPhaseHeld)
	}
	return phases
}

// cursorPath is the cursor file of child in a partition directory.
func cursorPath(dir, child string) string {
	return dir + "/" + cursorFilePrefix + child + cursorFileSuffix
}

// cursorLag is how far the cursor of a child lags behind parent
// partition index (owned here), and whether the cursor is known: loaded,
// with the log open or closed since (an evicted log's lag was reported
// unknown, 0, although the owner answered: a delay child's backlog looked
// empty).
func (n *Node) cursorLag(t *topic, index int, link meta.ChildLink) (uint64, bool) {
	p, ok := n.partitions[partitionKey{t.info.Name, index}]
	if !ok {
		return 0, false
	}
	c := p.fanout[link.Name]
	if c == nil || c.epoch != link.Epoch {
		return 0, false
	}
	hwm := p.knownHWM()
	return hwm - min(c.next, hwm), true
}

// knownHWM is the partition's high watermark: its open log's, or the one
// it had when it closed (the log is closed with nothing unsynced, and
// nothing appends to it while closed).
func (p *partition) knownHWM() uint64 {
	if p.log != nil {
		return p.log.HWM()
	}
	return p.closed.HWM
}

// loadCursor reads a child's cursor from the partition directory. A
// missing file, or one of another epoch, starts the attach's epoch at the
// first record committed at or after the attach (epochStart: no backfill);
// a crash before the next sync round writes it finds the same start. A
// file that does not decode starts at the oldest retained record: copies
// may repeat, none is skipped. A file never names an offset above the
// high watermark the log opened at (clampCursorFiles).
func (n *Node) loadCursor(p *partition, log *storage.Log, link meta.ChildLink) (*fanoutCursor, error) {
	c := &fanoutCursor{child: link.Name, epoch: link.Epoch, unwritten: true}
	data, err := storage.ReadFile(n.fs, cursorPath(p.dir, link.Name))
	switch {
	case errors.Is(err, storage.ErrNotExist):
		chaos.Reached(chaos.MarkFanoutCursorStarted)
		c.next = epochStart(log, link.AttachedAtMs-n.cfg.Fanout.AttachClockSkewMs)
		c.persisted = c.next
		return c, nil
	case err != nil:
		return nil, err
	}
	var file cursorFile
	epoch, parseErr := decodeCursorFile(data, &file)
	switch {
	case parseErr != nil:
		n.observer.Event("fanout-cursor-unreadable", fmt.Sprintf("%s: %v; copying again from the oldest record", cursorPath(p.dir, link.Name), parseErr))
		c.next = log.Oldest()
		c.persisted = c.next
		return c, nil
	case epoch != link.Epoch:
		chaos.Reached(chaos.MarkFanoutCursorStarted)
		c.next = epochStart(log, link.AttachedAtMs-n.cfg.Fanout.AttachClockSkewMs)
		c.persisted = c.next
		return c, nil
	}
	chaos.Reached(chaos.MarkFanoutCursorResumed)
	c.next = min(file.NextOffset, log.HWM())
	c.persisted, c.resumed, c.unwritten = file.NextOffset, true, false
	return c, nil
}

// epochStart is the first offset committed at or after fromMs: the
// attach's time on the clock of the node that proposed it, less
// FanoutConfig.AttachClockSkewMs for the clocks' disagreement. The owner
// may apply the attach after records acknowledged after it, and those
// belong to the child. A binary search reads a few records only. It is
// right whatever order the commit times are in (a partition that moved,
// or whose owner restarted, carries another clock's times): it passes a
// record only when its time is below fromMs, committed before the
// attach, and takes every record before it for as old; so it never
// starts past a record committed after the attach, only, at worst,
// before some committed earlier (copied too). A record that cannot be
// read counts as late, which also copies more.
func epochStart(log *storage.Log, fromMs int64) uint64 {
	low, high := log.Oldest(), log.HWM()
	for low < high {
		middle := low + (high-low)/2
		if record, err := log.Read(middle); err != nil || record.TimeMs >= fromMs {
			high = middle
		} else {
			low = middle + 1
		}
	}
	return low
}

// decodeCursorFile parses a cursor file and its epoch.
func decodeCursorFile(data []byte, file *cursorFile) (uint64, error) {
	if err := json.Unmarshal(data, file); err != nil {
		return 0, err
	}
	if file.CRC == nil || *file.CRC != cursorCRC(file.Epoch, file.NextOffset) {
		return 0, errors.New("checksum missing or wrong (damaged)")
	}
	epoch, err := strconv.ParseUint(file.Epoch, 16, 64)
	if err != nil || len(file.Epoch) != 16 {
		return 0, fmt.Errorf("epoch %q is not 16 hex digits", file.Epoch)
	}
	return epoch, nil
}

// removeStaleCursors deletes the cursor files of children no longer linked
// to the partition's topic (detached, deleted, or the parent deleted), and
// forgets their cursors, those whose file was not written yet as well
// (their file would be written later). While the partition's sync round
// writes cursor files it waits for the round's end (cursorsWritten),
// which it must not race.
func (n *Node) removeStaleCursors(p *partition, links []meta.ChildLink) {
	if p.cursorFiles.inFlight {
		p.cursorFiles.staleLinks = true
		return
	}
	for child := range p.fanout { //determinism:ok deletions only
		if !linked(links, child) {
			delete(p.fanout, child)
		}
	}
	for child := range p.cursorLoadFailures { //determinism:ok deletions only
		if !linked(links, child) {
			delete(p.cursorLoadFailures, child)
		}
	}
	names, err := n.fs.List(p.dir)
	if err != nil {
		return // no directory yet: nothing to remove
	}
	for _, name := range names {
		child, isCursor := cursorChild(name)
		if !isCursor || linked(links, child) {
			continue
		}
		if err := n.fs.Remove(p.dir + "/" + name); err != nil {
			n.observer.Event("fanout-cursor-remove-failed", fmt.Sprintf("%s/%s: %v", p.dir, name, err))
		}
		delete(p.fanout, child)
	}
}

// cursorChild returns the child a cursor file name is for.
func cursorChild(name string) (string, bool) {
	trimmed, hasPrefix := strings.CutPrefix(name, cursorFilePrefix)
	child, hasSuffix := strings.CutSuffix(trimmed, cursorFileSuffix)
	return child, hasPrefix && hasSuffix && child != ""
}

// linked reports whether child is among links.
func linked(links []meta.ChildLink, child string) bool {
	for _, link := range links {
		if link.Name == child {
			return true
		}
	}
	return false
}

// cursorsOnDisk reads every cursor file of a partition directory, for a
// move: the new owner carries on from them. Files that do not decode are
// left out (the new owner then starts that child at its tail).
func (n *Node) cursorsOnDisk(dir string) []msg.FanoutCursor {
	names, err := n.fs.List(dir)
	if err != nil {
		return nil
	}
	var cursors []msg.FanoutCursor
	for _, name := range names {
		child, isCursor := cursorChild(name)
		if !isCursor || validTopicName(child) != nil {
			continue
		}
		data, err := storage.ReadFile(n.fs, dir+"/"+name)
		var file cursorFile
		epoch, parseErr := decodeCursorFile(data, &file)
		if err == nil && parseErr == nil && len(cursors) < msg.FanoutChildrenMax {
			cursors = append(cursors, msg.FanoutCursor{Child: child, Epoch: epoch, NextOffset: file.NextOffset})
		}
	}
	return cursors
}

// sourceCursors are the cursors a move carries from p: each loaded
// cursor as it stands (every record before it is durable in the child,
// whether or not its file says so yet), and the files of the others.
func (n *Node) sourceCursors(p *partition) []msg.FanoutCursor {
	cursors := n.cursorsOnDisk(p.dir)
	for _, child := range slices.Sorted(maps.Keys(p.fanout)) {
		c := p.fanout[child]
		current := msg.FanoutCursor{Child: child, Epoch: c.epoch, NextOffset: c.next}
		if i := slices.IndexFunc(cursors, func(f msg.FanoutCursor) bool { return f.Child == child }); i >= 0 {
			cursors[i] = current
		} else if len(cursors) < msg.FanoutChildrenMax {
			cursors = append(cursors, current)
		}
	}
	slices.SortFunc(cursors, func(a, b msg.FanoutCursor) int { return strings.Compare(a.Child, b.Child) })
	return cursors
}

// encodeCursorFile is the content of a cursor file.
func encodeCursorFile(epoch, next uint64) ([]byte, error) {
	text := attachEpochText(epoch)
	crc := cursorCRC(text, next)
	return json.Marshal(cursorFile{Epoch: text, NextOffset: next, CRC: &crc})
}

// writeStagedCursors writes the cursors a move's source reported into the
// staged copy, so that they are installed with it.
func (n *Node) writeStagedCursors(stagedDir string, cursors []msg.FanoutCursor) error {
	for _, cursor := range cursors {
		data, err := encodeCursorFile(cursor.Epoch, cursor.NextOffset)
		if err == nil {
			err = storage.WriteFileAtomic(n.fs, cursorPath(stagedDir, cursor.Child), data)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// installCursors writes the fan-out cursors of a move's source into the
// staged copy (whose final HWM is hwm) before it is installed.
func (n *Node) installCursors(s *moveSession, hwm uint64) error {
	if len(s.cursors) == 0 {
		return nil
	}
	chaos.Reached(chaos.MarkFanoutCursorMoved)
	cursors := s.cursors
	if chaos.Planted(chaos.BugForgetFanoutCursor) {
		cursors = slices.Clone(cursors)
		for i := range cursors {
			cursors[i].NextOffset = hwm
		}
	}
	return n.writeStagedCursors(s.stagedDir, cursors)
}

// FanoutLag is how far one cursor of this node lags: the parent
// partition's high watermark minus the cursor.
type FanoutLag struct {
	Parent    string
	Child     string
	Partition int
	Messages  uint64
	// Phases are the CursorPhase* values the cursor is in; empty when it
	// is idle.
	Phases []string
}

// FanoutLags lists the lag of every loaded cursor of the parent
// partitions this node owns, sorted by parent, partition and child.
func (n *Node) FanoutLags() []FanoutLag {
	var lags []FanoutLag
	for _, p := range n.sortedPartitions() {
		hwm := p.knownHWM()
		for _, child := range slices.Sorted(maps.Keys(p.fanout)) {
			c := p.fanout[child]
			lags = append(lags, FanoutLag{Parent: p.key.topic, Child: child, Partition: p.key.index,
				Messages: hwm - min(c.next, hwm), Phases: c.phases(n.nowMs)})
		}
	}
	return lags
}

// FanoutLinkLag is how far one child lags its parent on this node: the
// sum, over the parent partitions this node owns whose cursors are
// loaded, of each one's FanoutLag.
type FanoutLinkLag struct {
	Parent, Child string
	Messages      uint64
}

// FanoutLinkLags sums the lags of the loaded cursors by link, sorted by
// parent and child: one entry per child (a child has one parent), so that
// what a metrics poll publishes is bounded by the topics, not by the
// cursors (a parent's partitions times its children: up to 11,664 for
// one parent, and about half a million on a node within its topic and
// partition limits). It runs on the loop, so it allocates nothing per
// cursor.
func (n *Node) FanoutLinkLags() []FanoutLinkLag {
	// Keyed by parent and child, with Messages zero.
	sums := map[FanoutLinkLag]uint64{}
	for _, p := range n.partitions { //determinism:ok sums, sorted below
		hwm := p.knownHWM()
		for child, c := range p.fanout { //determinism:ok sums
			sums[FanoutLinkLag{Parent: p.key.topic, Child: child}] += hwm - min(c.next, hwm)
		}
	}
	lags := make([]FanoutLinkLag, 0, len(sums))
	for link, messages := range sums { //determinism:ok sorted below
		link.Messages = messages
		lags = append(lags, link)
	}
	slices.SortFunc(lags, func(a, b FanoutLinkLag) int {
		return cmp.Or(strings.Compare(a.Parent, b.Parent), strings.Compare(a.Child, b.Child))
	})
	return lags
}

// cursorFiles schedules the writes of a partition's cursor files.
type cursorFiles struct {
	// persistAtMs is when the cursors that advanced may next be written.
	persistAtMs int64
	// due is set when the next sync round of the partition writes the
	// cursors that advanced (the partition is then dirty).
	due bool
	// inFlight is set while a sync round writes cursor files: from the
	// Ready that took them to its Advance.
	inFlight bool
	// staleLinks is set when the cursor files of links that went away
	// must be removed once the round in flight ended.
	staleLinks bool
	// noSpaceSaidMs is when the last round whose cursor files the disk
	// had no room for was said (fanout-cursor-write-refused), at most
	// once per noSpaceSayEveryMs per partition; 0 before.
	noSpaceSaidMs int64
}

// noSpaceSayEveryMs spaces the fanout-cursor-write-refused and
// committed-offset-write-refused warnings of one partition: its rounds
// retry their writes every interval while the disk stays full.
const noSpaceSayEveryMs = 60_000

// noSpaceSayDue reports whether a full-disk warning last said at *saidMs
// (0: never) may be said again now, at most once per noSpaceSayEveryMs,
// and if so records now there.
func (n *Node) noSpaceSayDue(saidMs *int64) bool {
	if *saidMs != 0 && n.nowMs-*saidMs < noSpaceSayEveryMs {
		return false
	}
	*saidMs = n.nowMs
	return true
}

// cursorsRefused records, for a round's cursor files, that the disk had
// no room for them (storage.OnlyNoSpace). Only Sync.Run, RunTogether and
// closeCursors set it; Advance reads it once the round ended.
type cursorsRefused struct {
	// err is the full disk's error; nil while the files were not refused.
	err error
}

// refusedForSpace absorbs a cursor write that failed for want of room:
// the files keep their earlier offsets, as safe as the new ones (a
// cursor's file only ever lags behind it: a crash copies again from
// there, never skips), and the partition writes them again at its next
// interval. A full disk stopped the node there, at a write it could do
// without (disk-full audit). Any other failure stays the round's, joined
// with a full disk or not (storage.OnlyNoSpace): in a group sync the
// error is the file system's, and may be another file's.
func (r *cursorsRefused) refusedForSpace(err error) error {
	if r == nil || !storage.OnlyNoSpace(err) {
		return err
	}
	r.err = err
	return nil
}

// cursorWrite is one cursor file a sync round writes.
type cursorWrite struct {
	child string
	epoch uint64
	// next is the offset written: the cursor's next when the round was
	// taken, so durable in the child already.
	next uint64
	path string
	data []byte
}

// needsWrite reports whether the cursor's file lags behind it.
func (c *fanoutCursor) needsWrite() bool { return c.unwritten || c.next != c.persisted }

// filesLag reports whether some cursor's file lags behind it.
func filesLag(cursors map[string]*fanoutCursor) bool {
	for _, c := range cursors { //determinism:ok an existence test does not depend on order
		if c.needsWrite() {
			return true
		}
	}
	return false
}

// scheduleCursorWrites asks the partition's next sync round to write the
// cursors that advanced, at most once per CursorPersistIntervalMs (each
// write is two fsyncs: a crash copies the batches since the last one
// again), and otherwise wakes the node when the interval ends. A request
// whose round never came (the log failed, which drops the partition from
// the next Ready) is made again.
//
// While files lag it always asks for a wake, at the end of the interval
// (and no sooner than the next millisecond), so that a partition whose
// cursors otherwise wait (cursorsWait) is driven again to write them, or
// to ask again for a write whose round never came.
func (n *Node) scheduleCursorWrites(p *partition) {
	if _, dirty := n.dirty[p.key]; dirty && p.cursorFiles.due {
		n.fanoutWakeAt(max(p.cursorFiles.persistAtMs, n.nowMs+1))
		return
	}
	p.cursorFiles.due = false
	if !filesLag(p.fanout) {
		return
	}
	if n.nowMs < p.cursorFiles.persistAtMs {
		n.fanoutWakeAt(p.cursorFiles.persistAtMs)
		return
	}
	p.cursorFiles.persistAtMs = n.nowMs + n.cfg.Fanout.CursorPersistIntervalMs
	p.cursorFiles.due = true
	n.markDirty(p)
	n.fanoutWakeAt(p.cursorFiles.persistAtMs)
}

// takeCursorWrites hands the cursor files due to the sync round being
// taken, each holding the cursor's next offset as of now: every record
// before it is durable in the child already.
func (n *Node) takeCursorWrites(p *partition) []cursorWrite {
	if !p.cursorFiles.due {
		return nil
	}
	p.cursorFiles.due = false
	var writes []cursorWrite
	for _, child := range slices.Sorted(maps.Keys(p.fanout)) {
		c := p.fanout[child]
		if !c.needsWrite() {
			continue
		}
		data, err := encodeCursorFile(c.epoch, c.next)
		invariant.Check(err == nil, "node: encoding the cursor of %s: %v", child, err)
		writes = append(writes, cursorWrite{child: child, epoch: c.epoch, next: c.next, path: cursorPath(p.dir, child), data: data})
	}
	p.cursorFiles.inFlight = len(writes) > 0
	return writes
}

// writeCursorFiles replaces the cursor files of a sync round (Sync.Run,
// off the loop: it touches only those files).
func writeCursorFiles(fs storage.FS, writes []cursorWrite) error {
	if len(writes) == 0 {
		return nil
	}
	files := make([]storage.NamedData, len(writes))
	for i, write := range writes {
		files[i] = storage.NamedData{Name: write.path, Data: write.data}
	}
	if err := storage.WriteFilesAtomic(fs, files); err != nil {
		return fmt.Errorf("fan-out cursors of %s: %w", path.Dir(writes[0].path), err)
	}
	return nil
}

// cursorsWritten records the cursor files a completed round wrote (none
// when the disk had no room for them: refused), and removes the files of
// links that went away meanwhile.
func (n *Node) cursorsWritten(p *partition, writes []cursorWrite, refused *cursorsRefused) {
	if p == nil || !p.cursorFiles.inFlight {
		return
	}
	p.cursorFiles.inFlight = false
	if refused != nil && refused.err != nil {
		n.cursorWritesRefused(p, len(writes), refused.err)
		writes = nil
	}
	for _, write := range writes {
		if c := p.fanout[write.child]; c != nil && c.epoch == write.epoch {
			c.persisted, c.unwritten = write.next, false
		}
	}
	if p.cursorFiles.staleLinks {
		p.cursorFiles.staleLinks = false
		record, _ := n.meta.State().Topic(p.key.topic)
		n.removeStaleCursors(p, record.Children)
	}
}

// cursorWritesRefused says, at most once per noSpaceSayEveryMs for the
// partition, that its cursor files found no room. They still lag behind
// their cursors, so the wake the round's write asked for, at the end of
// its interval, asks for them again (scheduleCursorWrites).
func (n *Node) cursorWritesRefused(p *partition, files int, err error) {
	chaos.Reached(chaos.MarkFanoutCursorFilesRefused)
	if !n.noSpaceSayDue(&p.cursorFiles.noSpaceSaidMs) {
		return
	}
	n.observer.Event("fanout-cursor-write-refused", fmt.Sprintf("%s: the disk has no room for %d fan-out cursor file(s) (%v): "+
		"they keep their earlier offsets (a restart would copy the records since then again) and are written again every %d ms until it has",
		p.dir, files, err, n.cfg.Fanout.CursorPersistIntervalMs))
}

// closeCursors writes the cursor files that lag behind their cursors, at
// a graceful stop (no round is in flight then). A disk with no room for
// them leaves them lagging, as a round does, and the stop stays graceful
// (full-disk audit: it exited 1).
func (n *Node) closeCursors(p *partition) error {
	p.cursorFiles.due = true
	writes := n.takeCursorWrites(p)
	refused := &cursorsRefused{}
	err := refused.refusedForSpace(writeCursorFiles(n.fs, writes))
	if refused.err != nil {
		p.cursorFiles.noSpaceSaidMs = 0 // said at the stop whatever was said before
		n.cursorWritesRefused(p, len(writes), refused.err)
	}
	return err
}
