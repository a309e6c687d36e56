package storage

import (
	"cmp"
	"fmt"
	"slices"

	"narad/chaos"
)

// The sealed segments of a log whose positions stay in memory once their
// index files hold them are the ones read most recently (a consumer's, a
// replay's, fan-out cursors', redeliveries'), as many as
// LogConfig.ResidentPositionsBytesMax of positions hold and at least
// residentSealedSegmentsMin. The others are paged out and read back from
// their index files at their next read (one file read, a few hundred
// microseconds for a segment of 64 MiB of 256-byte records), so readers
// that take turns over more segments than that pay one at each turn.
const (
	residentSealedSegmentsMin = 2
	// residentPositionsBytesLimit bounds LogConfig.ResidentPositionsBytesMax.
	residentPositionsBytesLimit = 1 << 30
)

// pageOut drops the positions of the sealed segments whose index files
// hold them, but for those read most recently within the bounds above (of
// equal use, the newest stay). Segments with corrupt offsets stay
// resident: Corruption lists them without reading a file.
func (l *Log) pageOut() {
	if !l.cfg.SegmentIndexFiles {
		return
	}
	var resident []*segment
	for _, s := range l.segments[:len(l.segments)-1] {
		if !s.paged && s.indexFile && s.corruptCount == 0 {
			resident = append(resident, s)
		}
	}
	if len(resident) <= residentSealedSegmentsMin {
		return
	}
	slices.SortFunc(resident, func(a, b *segment) int { // most recently read first; of equal use, the newest
		return cmp.Or(cmp.Compare(b.lastUse, a.lastUse), cmp.Compare(b.base, a.base))
	})
	bytes := 0
	for i, s := range resident {
		bytes += 4 * len(s.positions)
		if i >= residentSealedSegmentsMin && bytes > l.cfg.ResidentPositionsBytesMax {
			s.pagedCount, s.positions, s.paged = uint64(len(s.positions)), nil, true
		}
	}
}

// pageIn marks the sealed segment at index i of the log as just read and,
// if it is paged out, reads its positions back from its index file. An
// index file that no longer holds (damaged on its medium, removed) is
// replaced by a scan of the segment, as VerifySegments would scan it:
// damage found there becomes corrupt offsets. An error is a read error of
// the segment.
func (l *Log) pageIn(i int) error {
	s := l.segments[i]
	l.uses++
	s.lastUse = l.uses
	if !s.paged {
		return nil
	}
	nextBase := l.segments[i+1].base
	positions, err := l.readPagedPositions(s, nextBase)
	if err == nil {
		chaos.Reached(chaos.MarkStorageSegmentPagedIn)
		s.positions, s.paged, s.pagedCount = positions, false, 0
		l.pageOut()
		return nil
	}
	scanned, err := l.scanSealed(s, nextBase)
	if err != nil {
		return err
	}
	s.paged, s.pagedCount = false, 0
	l.adoptScan(i, scanned)
	l.pageOut()
	return nil
}

// adoptScan makes scanned, a scan of the sealed segment at index i, that
// segment's index, and writes its index file again: what the medium holds
// now, its damage since the index was written included.
func (l *Log) adoptScan(i int, scanned *segment) {
	s := l.segments[i]
	s.positions, s.corruptCount, s.newestTimeMs = scanned.positions, scanned.corruptCount, scanned.newestTimeMs
	s.indexFile = writeSegmentIndex(l.fs, l.dir, s, l.segments[i+1].base)
	l.directoryDirty = l.directoryDirty || s.indexFile // the next round makes its name durable
	s.unverified = false
}

// readPagedPositions reads the positions of the paged segment s from its
// index file, which this log wrote or read: it must still describe s.
func (l *Log) readPagedPositions(s *segment, nextBase uint64) ([]uint32, error) {
	index, err := readSegmentIndex(l.fs, l.dir, s, nextBase)
	if err != nil {
		return nil, err
	}
	if uint64(len(index.positions)) != s.pagedCount || index.corruptCount != 0 {
		return nil, fmt.Errorf("%w: %d frames, %d corrupt; the log paged out %d frames, none corrupt",
			errSegmentIndexUnusable, len(index.positions), index.corruptCount, s.pagedCount)
	}
	return index.positions, nil
}
