package storage

import (
	"math"
	"path"
)

// positionCorrupt marks, in segment.positions, an offset whose frame
// recovery could not verify and skipped. Real positions are always smaller:
// segments stay below segmentBytesLimit plus one frame.
const positionCorrupt = math.MaxUint32

// segment is one segment file of a log and its in-memory index. All fields
// are owned by the Log holding the segment.
type segment struct {
	// base is the first offset of the segment, as in its file name.
	// Invariant: fixed for the life of the segment.
	base uint64
	// file is the open segment file; nil for a sealed segment, every byte
	// synced, whose file the log closed (Log.segmentFile reopens it).
	file File
	// keptOpen is set while the segment is in its log's sealedOpen.
	keptOpen bool
	// positions[i] is the byte position of the frame of offset base+i, or
	// positionCorrupt. Invariant: real positions strictly increase. A sealed
	// segment recovered with a corrupt tail may index fewer offsets than it
	// spans; the offsets up to the next segment's base are then corrupt too.
	positions []uint32
	// sizeBytes is the logical size: bytes written to the file plus, for
	// the active segment, the Log's pending buffer.
	// Invariant: writtenBytes <= sizeBytes.
	sizeBytes int64
	// writtenBytes were handed to file.Write (or found on disk).
	// Invariant: syncedBytes <= writtenBytes.
	writtenBytes int64
	// syncedBytes are durable (fsynced, or recovered from disk and synced).
	syncedBytes int64
	// fileBytes is the size of the file: the written frames, then, on the
	// active segment, the zero tail written ahead of them (doc.go).
	// Invariant: fileBytes >= writtenBytes, and the bytes in
	// [writtenBytes, fileBytes) were written as zeros. Raised by
	// flushPending and extendZeroTail, cut to writtenBytes at a seal and
	// trimmed to zeroTailKeptBytes past it at a close.
	fileBytes int64
	// openedBytes is writtenBytes when the log opened: recovery sets it
	// on the last segment, a segment rolled later starts at 0. The zero
	// tail's steps grow with the bytes written since (extendZeroTail), so
	// a log reopened on a large active segment writes small steps until
	// it proves busy. Fixed once set.
	openedBytes int64
	// newestTimeMs is the largest TimeMs of the segment's records;
	// math.MinInt64 while it has none. Retention compares it.
	newestTimeMs int64
	// corruptCount is the number of offsets of the segment recovery
	// skipped as corrupt: its positionCorrupt entries plus, for a sealed
	// segment, the gap from indexedEnd to the next segment's base.
	// Invariant: set by recovery, and by VerifySegments on a segment
	// recovery took from its index file; fixed afterwards (Log.Corruption
	// reads it so that it need not scan the index).
	corruptCount uint64
	// unverified is set by recovery on a segment it took from its index
	// file: its frames were not read since the log opened, so media
	// damage there is found by Read (ErrCorrupt) and counted in
	// corruptCount only once VerifySegments scanned it. Cleared by
	// VerifySegments.
	unverified bool
	// indexFile: the segment's index file holds exactly its positions,
	// written (writeSegmentIndex) or read (loadSegmentIndex) by this log.
	// Only such a segment is paged out. Set where those succeed; cleared
	// when a rewrite fails (writeSegmentIndex removes the file).
	indexFile bool
	// paged: a sealed segment whose positions were dropped from memory
	// (Log.pageOut); its index file holds them, pagedCount of them. Log.pageIn
	// reads them back. Invariant: paged implies indexFile, sealed, no
	// corrupt offset (corruptCount 0) and positions nil.
	paged      bool
	pagedCount uint64
	// lastUse is the Log's use count at this sealed segment's latest
	// read: the most recently read ones stay resident (Log.pageOut).
	lastUse uint64
}

// newSegment returns an empty segment around an open file.
func newSegment(base uint64, file File) *segment {
	return &segment{base: base, file: file, newestTimeMs: math.MinInt64}
}

// indexedEnd is the offset after the last offset the segment indexes.
func (s *segment) indexedEnd() uint64 {
	if s.paged {
		return s.base + s.pagedCount
	}
	return s.base + uint64(len(s.positions))
}

// index appends the position of the next offset's frame.
func (s *segment) index(position int64, timeMs int64) {
	fits := position >= 0 && position < positionCorrupt
	ordered := len(s.positions) == 0 || s.lastRealPosition() < position
	if !fits || !ordered { // guarded: the arguments would allocate on every appended record
		assert(fits, "frame position %d of segment %d does not fit the index", position, s.base)
		assert(ordered, "frame position %d of segment %d not after the previous one", position, s.base)
	}
	s.positions = append(s.positions, uint32(position))
	s.newestTimeMs = max(s.newestTimeMs, timeMs)
}

// indexCorrupt appends count offsets recovery skipped as corrupt.
func (s *segment) indexCorrupt(count uint64) {
	s.corruptCount += count
	for range count {
		s.positions = append(s.positions, positionCorrupt)
	}
}

// lastRealPosition is the position of the last indexed frame that is not
// corrupt, or -1.
func (s *segment) lastRealPosition() int64 {
	for i := len(s.positions) - 1; i >= 0; i-- {
		if s.positions[i] != positionCorrupt {
			return int64(s.positions[i])
		}
	}
	return -1
}

// frameBounds returns the byte range a read of offset must load: from the
// frame's position to the next indexed frame (or the segment's end), at
// most frameBytesMax. ok is false for a corrupt or unindexed offset.
func (s *segment) frameBounds(offset uint64, frameBytesMax int) (position int64, length int, ok bool) {
	assert(!s.paged, "frame bounds of offset %d in paged segment %d", offset, s.base)
	index := offset - s.base
	if index >= uint64(len(s.positions)) || s.positions[index] == positionCorrupt {
		return 0, 0, false
	}
	position = int64(s.positions[index])
	end := s.sizeBytes
	for _, next := range s.positions[index+1:] {
		if next != positionCorrupt {
			end = int64(next)
			break
		}
	}
	return position, int(min(end-position, int64(frameBytesMax))), true
}

// durableBytesBelow is the number of bytes of the segment that hold only
// frames of offsets below hwm (the move protocol's segment size).
func (s *segment) durableBytesBelow(hwm uint64) int64 {
	if hwm <= s.base {
		return 0
	}
	if s.paged {
		assert(hwm >= s.indexedEnd(), "hwm %d inside paged segment %d", hwm, s.base) // paged segments lie below the persisted HWM
		return s.syncedBytes
	}
	for index := hwm - s.base; index < uint64(len(s.positions)); index++ {
		if s.positions[index] != positionCorrupt {
			return int64(s.positions[index])
		}
	}
	return s.syncedBytes
}

// segmentPath is the path of the segment file of base in dir.
func segmentPath(dir string, base uint64) string { return path.Join(dir, segmentName(base)) }
