package storage

import (
	"errors"
	"strings"

	"narad/chaos"
)

// A warm reopen opens again a log this process closed cleanly, from the
// state its close kept in memory, instead of recovering its directory:
// recovery reads and verifies every frame of every segment to rebuild the
// index, so reopening a partition of a gigabyte read a gigabyte, on the
// node's loop, at every eviction or idle close followed by a use. A log
// is reopenable when its Close found it healthy and settled: no failure,
// no round in flight, nothing appended or committed unsynced, every
// segment synced, its hwm file written up to its HWM, and every close
// step (the hwm write, the zero tail's trim, the files' closes)
// succeeded. Its files then hold exactly what its index describes.
//
// The Store keeps such logs (Store.Evict, Store.CloseIdle) within a
// budget of index memory and forgets one on Store.Close, Store.CloseUnder
// and Store.Adopt. The node keeps logs only of the partitions it serves
// and of its move sessions' adopted copies, and each of those leaves
// through a Store.Close (a partition moved away or its topic deleted, a
// copy rolled back) before anything removes or replaces its directory;
// the other removals (stale copies, orphaned jobs' directories, purges of
// deleted topics) touch directories of no such log. As a second guard,
// reopen checks that the directory still holds what the log left (the
// same segment files and no other, each of the size the log knows, the
// hwm file's value, the committed offset's file) and otherwise declines,
// so the caller recovers the directory as any other.

// reopenSegmentOverheadBytes approximates the memory of a segment beside
// its index, for the budget of kept logs.
const reopenSegmentOverheadBytes = 160

// indexBytes is the memory of the log's index: its segments' resident
// positions and their structures. It is all a log closed for a warm
// reopen holds (Close released its write buffer), and what an open log
// holds besides that buffer (Store.OpenIndexBytes).
func (l *Log) indexBytes() int64 {
	total := int64(0)
	for _, s := range l.segments {
		total += int64(cap(s.positions))*4 + reopenSegmentOverheadBytes
	}
	return total
}

// settledForReopen reports whether a log about to close can be reopened
// from its state, given that its close steps succeeded (Close calls it
// before closing the files).
func (l *Log) settledForReopen() bool {
	if l.failure != nil || l.syncing != nil || l.Dirty() || l.CommittedDirty() {
		return false
	}
	for _, s := range l.segments {
		if s.syncedBytes != s.sizeBytes { // synced <= written <= size: all written too, nothing pending
			return false
		}
	}
	return l.hwmFile.value == l.hwm
}

// errNotReopenable is reopen's internal refusal: the directory is not as
// the log left it.
var errNotReopenable = errors.New("storage: directory changed since the log closed")

// reopen returns a new open log over l's directory built from l's state,
// l being closed and reopenable. ok is false when the directory is not as
// l left it (nothing is then held open); err reports an I/O failure.
// Afterwards l is spent: its segments belong to the new log.
func (l *Log) reopen() (log *Log, ok bool, err error) {
	assert(l.closed && l.reopenable && !l.spent, "warm reopen of %s: closed %v, reopenable %v, spent %v", l.dir, l.closed, l.reopenable, l.spent)
	hwmFile, active, err := l.reopenFiles()
	if errors.Is(err, errNotReopenable) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	l.spent = true
	for _, s := range l.segments {
		s.file, s.keptOpen = nil, false
	}
	last := l.active()
	last.file, last.openedBytes = active, last.writtenBytes
	log = &Log{fs: l.fs, dir: l.dir, cfg: l.cfg, segments: l.segments, next: l.next, hwm: l.hwm, hwmFile: hwmFile,
		rollBeforeAppend: l.rollBeforeAppend, unsyncedFrom: len(l.segments) - 1, directoryDirty: l.directoryDirty,
		indexedThrough: l.indexedThrough, uses: l.uses, committed: l.committed, committedSynced: l.committedSynced,
		committedFiles: l.committedFiles, committedNext: l.committedNext}
	chaos.Reached(chaos.MarkStorageReopenedWarm)
	if invariantsEnabled {
		log.checkInvariants()
	}
	return log, true, nil
}

// reopenFiles checks l's directory against l's state and opens the hwm
// file and the active segment's; errNotReopenable when they differ.
func (l *Log) reopenFiles() (*hwmFile, File, error) {
	if err := l.sameSegmentFiles(); err != nil {
		return nil, nil, err
	}
	state, err := readHWMState(l.fs, l.dir)
	if err != nil {
		return nil, nil, err
	}
	if highest, valid := state.highest(); !state.wellFormed || !valid || highest != l.hwm {
		return nil, nil, errNotReopenable
	}
	committed, err := readCommittedState(l.fs, l.dir)
	if err != nil {
		return nil, nil, err
	}
	if l.committedSynced != max(committed.highest(), l.Oldest()) || committed.damaged() {
		return nil, nil, errNotReopenable
	}
	l.setCommittedFiles(committed)
	active, err := l.fs.Open(segmentPath(l.dir, l.active().base))
	if err != nil {
		return nil, nil, err
	}
	size, err := active.Size()
	if err == nil && size != l.active().fileBytes {
		err = errNotReopenable
	}
	var hwmFile *hwmFile
	if err == nil {
		hwmFile, err = openHWMFile(l.fs, l.dir, state)
	}
	if err != nil {
		active.Close()
		return nil, nil, err
	}
	return hwmFile, active, nil
}

// sameSegmentFiles checks that l's directory lists exactly l's segment
// files, sealed ones of the sizes l knows, and no temporary file
// (recovery removes those).
func (l *Log) sameSegmentFiles() error {
	names, err := l.fs.List(l.dir)
	if errors.Is(err, ErrNotExist) {
		return errNotReopenable
	}
	if err != nil {
		return err
	}
	next := 0
	for _, name := range names {
		if strings.HasSuffix(name, temporarySuffix) {
			return errNotReopenable
		}
		base, ok := parseSegmentName(name)
		if !ok {
			continue
		}
		if next == len(l.segments) || l.segments[next].base != base {
			return errNotReopenable
		}
		next++
	}
	if next != len(l.segments) {
		return errNotReopenable
	}
	for _, s := range l.segments[:len(l.segments)-1] {
		info, err := l.fs.Stat(segmentPath(l.dir, s.base))
		if err != nil {
			return err
		}
		if info.Size != s.fileBytes {
			return errNotReopenable
		}
	}
	return nil
}

// warmRecovery is the Recovery of a warm reopen.
func (l *Log) warmRecovery() Recovery {
	return Recovery{Warm: true, Segments: len(l.segments), HWM: l.hwm, PersistedHWM: l.hwmFile.value, Committed: l.committed}
}
