package storage

import (
	"errors"
	"path"

	"narad/chaos"
)

// SyncRound is one sync round of a log, split so that its fsyncs can run
// off the caller's loop while the loop keeps appending:
//
//   - PrepareSync (on the loop) writes the buffered frames and fixes what
//     the round covers: the frames written so far, the hwm slot to write
//     when the lag bounds say so, the committed offset if it changed.
//   - Run (on any goroutine) does the fsyncs. It touches only the files
//     and values the round captured, never the Log, so the loop may append
//     meanwhile; an fsync covers at least what was written before it
//     started, which includes everything the round covers.
//   - CompleteSync (on the loop) records the result: the HWM becomes the
//     round's, never more, so a frame appended after PrepareSync stays
//     invisible until a later round covers it.
//
// One round at most is in flight per log. While it is, the log counts as
// dirty, ApplyRetention does nothing, and Close keeps the files open until
// the round completes.
type SyncRound struct {
	// log is the round's log; only CompleteSync reads it.
	log *Log
	// hwm is the visible HWM after the round: Next() at PrepareSync.
	hwm uint64
	// data: the round makes appended frames durable (hwm > the HWM at
	// PrepareSync).
	data bool
	// segments are the segments holding bytes not yet fsynced at
	// PrepareSync, and syncedBytes their sizes then: Run fsyncs each.
	segments    []*segment
	syncedBytes []int64
	// files are the segments' files, captured so that Run never reads a
	// segment's fields.
	files []File
	// fs and dir name the directory to fsync when syncDirectory is set (a
	// segment was created, or recovery listed the directory).
	fs            FS
	dir           string
	syncDirectory bool
	// hwmSlot, when not nil, is the encoded hwm slot to write at
	// hwmSlotIndex of hwmFile after the data is durable.
	hwmSlot      []byte
	hwmSlotIndex int
	hwmFile      File
	// committed: write committedOffset in the committed offset file
	// committedTarget names.
	committed       bool
	committedOffset uint64
	committedTarget committedTarget
	// committedRefused is the full disk's error when the disk had no room
	// for the committed offset's write (refuseCommitted): only Run and
	// RunTogether set it, CompleteSync reads it once the round ended.
	committedRefused error
	// records is how many appended records the round makes durable.
	records int
	// err is a failure found at PrepareSync (the log was closed or failed,
	// or a buffered write failed): Run returns it, so the round fails as a
	// whole.
	err error
}

// Records is how many appended records the round makes durable.
func (r *SyncRound) Records() int {
	if r == nil {
		return 0
	}
	return r.records
}

// HWM is the HWM the round makes durable and visible.
func (r *SyncRound) HWM() uint64 {
	if r == nil {
		return 0
	}
	return r.hwm
}

// CommittedOffset is the committed offset the round persists, when
// Committed reports true.
func (r *SyncRound) CommittedOffset() uint64 {
	if r == nil {
		return 0
	}
	return r.committedOffset
}

// Data reports whether the round makes appended records durable.
func (r *SyncRound) Data() bool { return r != nil && r.data }

// Err is the failure PrepareSync found (the log was closed or failed, or
// its buffered write failed, which failed the log), nil for a round in
// flight; Run returns it.
func (r *SyncRound) Err() error {
	if r == nil {
		return nil
	}
	return r.err
}

// Committed reports whether the round persists the committed offset: it
// does not once its run found no room for it (CommittedRefused).
func (r *SyncRound) Committed() bool { return r != nil && r.committed && r.committedRefused == nil }

// CommittedRefused is the full disk's error when the round's run found no
// room for the committed offset, nil otherwise. The offset then stays
// dirty (CommittedDirty), and the log usable.
func (r *SyncRound) CommittedRefused() error {
	if r == nil {
		return nil
	}
	return r.committedRefused
}

// refuseCommitted absorbs a write of the committed offset that failed for
// want of room (OnlyNoSpace): the files keep what they held, an offset
// no higher than the one in memory (a crash delivers the records since
// then again, never skips one), and a later round writes the offset
// again. The first write of each file creates it, which needs a block: a
// disk filled by other programs stopped the node at the first ack of a
// partition never acked before (full-disk audit). A write of both files
// afresh (an offset recovery moved down) is not absorbed: until it is
// durable, a file holds an offset above records appended since, which a
// crash would skip. Any other failure stays the round's.
func (r *SyncRound) refuseCommitted(err error) error {
	if r.committedTarget.fresh || !OnlyNoSpace(err) {
		return err
	}
	r.committedRefused = err
	return nil
}

// Syncing reports whether a round of the log is in flight (prepared, not
// yet completed).
func (l *Log) Syncing() bool { return l.syncing != nil }

// PrepareSync starts a sync round covering the frames appended so far
// and, with committed, the committed offset. It returns nil when there is
// nothing to sync. The round of a closed or failed log, and one whose
// buffered write fails (which fails the log), is not in flight: its Run
// returns the error. At most one round may be in flight.
func (l *Log) PrepareSync(data, committed bool) *SyncRound {
	if err := l.usable(); err != nil {
		return &SyncRound{log: l, hwm: l.hwm, err: err}
	}
	assert(l.syncing == nil, "log %s: a sync round is already in flight", l.dir)
	data = data && l.Dirty()
	committed = committed && l.CommittedDirty()
	if !data && !committed {
		return nil
	}
	r := &SyncRound{log: l, hwm: l.hwm, fs: l.fs, dir: l.dir}
	if data {
		if err := l.prepareData(r); err != nil {
			r.err = l.fail(err)
			return r
		}
	}
	if committed {
		r.committed, r.committedOffset = true, l.committed
		r.committedTarget = l.committedTargetFor(l.committed)
	}
	l.syncing = r
	return r
}

// prepareData writes the buffered frames and captures what Run fsyncs.
func (l *Log) prepareData(r *SyncRound) error {
	if err := l.flushPending(); err != nil {
		return err
	}
	if active := l.active(); active.syncedBytes < active.sizeBytes { // so this round's fsync covers the zeros
		// The tail only spares later fsyncs a size change: a disk too full
		// for it still takes the frames, and this round commits them.
		if err := l.extendZeroTail(active); err != nil && !errors.Is(err, ErrNoSpace) {
			return err
		}
	}
	r.data, r.hwm, r.records = true, l.next, int(l.next-l.hwm)
	for _, s := range l.segments[l.unsyncedFrom:] {
		if s.syncedBytes == s.sizeBytes {
			continue
		}
		r.segments = append(r.segments, s)
		r.syncedBytes = append(r.syncedBytes, s.sizeBytes)
		r.files = append(r.files, s.file)
	}
	// A roll while the round is in flight sets directoryDirty again for
	// the next round.
	r.syncDirectory, l.directoryDirty = l.directoryDirty, false
	if l.hwmLag.due(l.cfg) {
		r.hwmSlotIndex, r.hwmFile = l.hwmFile.nextSlot, l.hwmFile.file
		r.hwmSlot = encodeHWMSlot(nil, r.hwmSlotIndex, r.hwm)
		l.hwmLag = hwmLag{}
	}
	return nil
}

// Run does the round's fsyncs: the data, THEN the directory, THEN the hwm
// slot (so the persisted HWM never covers a frame that is not durable),
// and the committed offset. Safe on any goroutine while the loop appends.
func (r *SyncRound) Run() error {
	if r == nil {
		return nil
	}
	if r.err != nil {
		return r.err
	}
	for _, file := range r.files {
		if err := file.Sync(); err != nil {
			return err
		}
	}
	if r.syncDirectory {
		if err := r.fs.SyncDir(r.dir); err != nil {
			return err
		}
	}
	return r.runAfterData()
}

// runAfterData is what a round does once its data and directory are
// durable: the hwm slot, then the committed offset.
func (r *SyncRound) runAfterData() error {
	if r.hwmSlot != nil {
		if err := writeHWMSlot(r.hwmFile, r.hwmSlot, r.hwmSlotIndex); err != nil {
			return err
		}
	}
	if r.committed {
		return r.refuseCommitted(writeCommittedFile(r.fs, r.dir, r.committedTarget, r.committedOffset))
	}
	return nil
}

// RunTogether runs rounds of logs on group's file system as Run of each
// would, with group.SyncGroup calls in place of their fsyncs: one for the
// data and directories of them all, then, when any round writes its hwm
// slot or committed offset, one for those (and, for committed offset
// files created, one for the directories of their renames). The order of a round is
// kept across the group: no hwm slot or committed offset is written
// before the data of every round is durable. It fails as a whole: a
// failed Ready fails its node (node package doc). Nil rounds are skipped.
// Safe on any goroutine, as Run.
func RunTogether(group GroupSyncer, rounds []*SyncRound) error {
	var files []File
	var dirs []string
	for _, r := range rounds {
		if r == nil {
			continue
		}
		if r.err != nil {
			return r.err
		}
		files = append(files, r.files...)
		if r.syncDirectory {
			dirs = append(dirs, r.dir)
		}
	}
	if len(files) > 0 || len(dirs) > 0 {
		if err := group.SyncGroup(files, dirs); err != nil {
			return err
		}
	}
	return writeAfterDataTogether(group, rounds)
}

// writeAfterDataTogether is the part of each round after its data is
// durable (runAfterData), for rounds whose data is: the hwm slots and the
// committed offsets written in place are made durable together, with the
// temporary files of the committed offset files created. A committed
// offset write the disk has no room for is refused (refuseCommitted); the
// files created are refused together, as their temporaries are written
// before anything is synced.
func writeAfterDataTogether(group GroupSyncer, rounds []*SyncRound) (err error) {
	var written []File
	var inPlace []File
	defer func() {
		for _, file := range inPlace {
			err = errors.Join(err, file.Close())
		}
	}()
	var created []NamedData
	var creators []*SyncRound
	var fs FS
	for _, r := range rounds {
		if r == nil {
			continue
		}
		if r.hwmSlot != nil {
			if err := writeHWMSlotUnsynced(r.hwmFile, r.hwmSlot, r.hwmSlotIndex); err != nil {
				return err
			}
			written = append(written, r.hwmFile)
		}
		if !r.committed {
			continue
		}
		if r.committedTarget.fresh { // rare: an offset recovery moved down
			if err := writeFreshCommittedFiles(r.fs, r.dir, r.committedOffset); err != nil {
				return err
			}
			continue
		}
		name := path.Join(r.dir, committedFileNames[r.committedTarget.index])
		if !r.committedTarget.whole {
			created, fs = append(created, NamedData{Name: name, Data: encodeCommitted(r.committedOffset)}), r.fs
			creators = append(creators, r)
			continue
		}
		file, err := writeCommittedInPlace(r.fs, name, r.committedOffset)
		if err != nil {
			if err := r.refuseCommitted(err); err != nil {
				return err
			}
			continue
		}
		inPlace = append(inPlace, file)
	}
	written = append(written, inPlace...)
	if len(created) > 0 {
		return createCommittedTogether(fs, group, created, creators, written)
	}
	if len(written) > 0 {
		return group.SyncGroup(written, nil)
	}
	return nil
}

// createCommittedTogether creates the committed offset files of creators,
// as WriteFilesAtomicTogether does, making written durable with their
// temporaries; or, when the disk has no room for the temporaries, refuses
// every creator's offset and makes written durable alone.
func createCommittedTogether(fs FS, group GroupSyncer, created []NamedData, creators []*SyncRound, written []File) error {
	temporaries, err := writeTemporaries(fs, created)
	if err == nil {
		return replaceWithTemporaries(fs, group, created, temporaries, written)
	}
	for _, r := range creators {
		if err := r.refuseCommitted(err); err != nil {
			return err
		}
	}
	if len(written) > 0 {
		return group.SyncGroup(written, nil)
	}
	return nil
}

// CompleteSync ends the round after Run: with err nil, what the round
// covers becomes durable and visible; with an error the log is failed.
// A log closed while the round ran closes its files now.
func (l *Log) CompleteSync(r *SyncRound, err error) error {
	if r == nil {
		return nil
	}
	assert(r.log == l, "log %s: completing a round of %s", l.dir, r.log.dir)
	if r.err != nil {
		return r.err // never in flight; the log was failed or closed already
	}
	assert(l.syncing == r, "log %s: completing a round that is not in flight", l.dir)
	l.syncing = nil
	switch {
	case err != nil:
		err = l.fail(err)
	case l.failure == nil:
		l.completeRound(r)
	}
	if l.closed {
		if err == nil && l.failure == nil {
			err = l.trimZeroTail(l.active(), zeroTailKeptBytes) // as Close does, which left it to this round
		}
		return errors.Join(err, l.closeFiles())
	}
	return err
}

// completeRound records a successful round.
func (l *Log) completeRound(r *SyncRound) {
	for i, s := range r.segments {
		s.syncedBytes = max(s.syncedBytes, r.syncedBytes[i])
	}
	for l.unsyncedFrom < len(l.segments)-1 && l.segments[l.unsyncedFrom].syncedBytes == l.segments[l.unsyncedFrom].sizeBytes {
		l.unsyncedFrom++
	}
	l.releaseSealedFiles()
	if r.hwmSlot != nil {
		l.hwmFile.value, l.hwmFile.nextSlot = r.hwm, 1-r.hwmSlotIndex
		l.writeDueIndexes()
	}
	if r.Committed() {
		l.committedSynced = r.committedOffset
		l.wroteCommitted(r.committedTarget, r.committedOffset)
		if chaos.Planted(chaos.BugCommittedInOneFile) {
			l.committedNext = 0 // planted: a torn write in place leaves no whole value
		}
	}
	if r.data {
		assert(r.hwm >= l.hwm && r.hwm <= l.next, "sync round hwm %d not in [%d, %d]", r.hwm, l.hwm, l.next)
		l.hwm = r.hwm
		if chaos.Planted(chaos.BugRoundCoversLaterAppends) {
			l.hwm = l.next // planted: the appends made while the round ran were never fsynced
		}
	}
	if invariantsEnabled {
		l.checkInvariants()
	}
}
