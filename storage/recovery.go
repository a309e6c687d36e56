package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"path"
	"slices"
	"strings"

	"narad/chaos"
)

// Recovery reports what OpenLog found on disk. Every count is exact; only
// the list CorruptOffsets is bounded (LogConfig.CorruptOffsetsReportedMax).
type Recovery struct {
	// Segments is the number of segments after recovery.
	Segments int
	// Records is the number of intact records recovered.
	Records uint64
	// HWM is the recovered high watermark (the end of the valid log).
	HWM uint64
	// PersistedHWM is the highest valid slot of the hwm file (0 if none).
	PersistedHWM uint64
	// HWMFileCorrupt: the hwm file exists but no slot is valid.
	HWMFileCorrupt bool
	// TruncatedBytes were cut from a torn tail, segments removed after it
	// included.
	TruncatedBytes int64
	// ZeroTailBytes is the zero tail found past the last frame of the
	// segments (doc.go): expected, not a loss, and not in TruncatedBytes.
	ZeroTailBytes int64
	// CorruptCount is the number of offsets skipped as corrupt (below the
	// persisted HWM, or in a gap between valid frames); Read returns
	// ErrCorrupt for them. CorruptOffsets lists the first of them.
	CorruptCount   uint64
	CorruptOffsets []uint64
	// LostAcknowledged counts offsets below the persisted HWM that are past
	// the recovered end: acknowledged data the disk did not keep.
	LostAcknowledged uint64
	// Committed is the recovered committed consumer offset.
	Committed uint64
	// CommittedReset: the consumer.offset file was corrupt, or its value
	// was above the recovered HWM, so Committed was reset.
	CommittedReset bool
	// SegmentsFromIndex counts the sealed segments whose state came from
	// their index file instead of a scan; SegmentIndexesWritten those
	// scanned whose index file recovery wrote (segindex.go).
	SegmentsFromIndex, SegmentIndexesWritten int
	// Warm: the log was not recovered but reopened from the state its
	// clean close kept (reopen.go); only Segments, HWM, PersistedHWM and
	// Committed are set, and nothing was found.
	Warm bool
}

// recoverer holds the state of one recovery. It is used once.
type recoverer struct {
	fs  FS
	dir string
	cfg LogConfig
	// persistedHWM is the highest valid hwm slot (0 if none).
	persistedHWM uint64
	hwmState     hwmState
	// segments are the segments opened so far, in offset order.
	segments []*segment
	reader   segmentReader
	report   Recovery
	// keptDamagedEnd is set by keepDamagedEnd: the log's first Append
	// seals the damaged segment (Log.rollBeforeAppend).
	keptDamagedEnd bool
	// indexed holds the bases of the segments listed with an index file.
	indexed map[uint64]bool
	// indexedThrough counts the leading segments the persisted HWM covers
	// (each loaded from its index, or scanned and its index written where
	// it could be): the log's Log.indexedThrough.
	indexedThrough int
}

// recoverLog runs recovery on dir and returns the open log. buffer, when
// not nil, holds the read window's buffer between recoveries: recovery
// starts from it and leaves there the one it used (nothing recovery
// returns points into it), so a Store does not allocate a window of up to
// 2×FrameBytesMax at each open.
func recoverLog(fs FS, dir string, cfg LogConfig, buffer *[]byte) (*Log, Recovery, error) {
	r := &recoverer{fs: fs, dir: dir, cfg: cfg}
	r.reader.windowBytes = 2 * cfg.FrameBytesMax
	if buffer != nil {
		r.reader.buffer = *buffer
		defer func() { *buffer = r.reader.buffer }()
	}
	log, err := r.run()
	if err != nil {
		for _, s := range r.segments {
			if s.file != nil {
				s.file.Close()
			}
		}
		return nil, Recovery{}, err
	}
	return log, r.report, nil
}

// run performs the recovery steps in order.
func (r *recoverer) run() (*Log, error) {
	bases, err := r.listSegments()
	if err != nil {
		return nil, err
	}
	if err := r.readHWM(); err != nil {
		return nil, err
	}
	r.protectSealedSegments(bases)
	if err := r.scanSegments(bases); err != nil {
		return nil, err
	}
	if err := r.ensureSegment(); err != nil {
		return nil, err
	}
	return r.buildLog()
}

// listSegments returns the segment bases of dir in offset order, removing
// leftover temporary files of interrupted atomic replaces.
func (r *recoverer) listSegments() ([]uint64, error) {
	names, err := r.fs.List(r.dir)
	if err != nil {
		return nil, err
	}
	var bases, indexed []uint64
	for _, name := range names {
		if strings.HasSuffix(name, temporarySuffix) {
			if err := r.fs.Remove(path.Join(r.dir, name)); err != nil {
				return nil, err
			}
		}
		if base, ok := parseSegmentName(name); ok {
			assert(len(bases) == 0 || bases[len(bases)-1] < base, "segment names of %s listed out of order", r.dir)
			bases = append(bases, base)
		}
		if base, ok := parseSegmentIndexName(name); ok {
			indexed = append(indexed, base)
		}
	}
	r.removeOrphanIndexes(bases, indexed)
	return bases, nil
}

// removeOrphanIndexes removes the index files whose segment is gone (a
// crash between the two removals of retention), and records which
// segments have one.
func (r *recoverer) removeOrphanIndexes(bases, indexed []uint64) {
	r.indexed = make(map[uint64]bool, len(indexed))
	for _, base := range indexed {
		if _, found := slices.BinarySearch(bases, base); found {
			r.indexed[base] = true
			continue
		}
		removeSegmentIndex(r.fs, r.dir, base)
	}
}

// readHWM loads the hwm file.
func (r *recoverer) readHWM() error {
	state, err := readHWMState(r.fs, r.dir)
	if err != nil {
		return err
	}
	highest, anyValid := state.highest()
	r.hwmState, r.persistedHWM = state, highest
	r.report.PersistedHWM = highest
	r.report.HWMFileCorrupt = state.exists && !anyValid
	return nil
}

// protectSealedSegments gives a log whose hwm file is damaged (it exists,
// no slot is valid) a persisted HWM no lower than the base of its last
// segment. A segment's file becomes durable in the sync round that makes
// the frames before it durable (data, then the directory), so frames of
// sealed segments are no torn tail: damage there is corruption in the
// middle, skipped and reported, never a reason to cut the log and remove
// every later segment.
func (r *recoverer) protectSealedSegments(bases []uint64) {
	if r.report.HWMFileCorrupt && len(bases) > 0 {
		r.persistedHWM = max(r.persistedHWM, bases[len(bases)-1])
	}
}

// scanSegments opens and verifies every segment, stopping at a torn tail.
// A sealed segment that the persisted HWM covers is taken from its index
// file when that holds (loadIndexed), and gets one when it is scanned.
func (r *recoverer) scanSegments(bases []uint64) error {
	for i, base := range bases {
		nextBase, hasNext := uint64(math.MaxUint64), i+1 < len(bases)
		if hasNext {
			nextBase = bases[i+1]
		}
		s, err := r.openSegment(base)
		if err != nil {
			return err
		}
		settled := hasNext && nextBase <= r.persistedHWM && r.cfg.SegmentIndexFiles
		if settled {
			r.indexedThrough++
		}
		if settled && r.indexed[base] {
			loaded, err := r.loadIndexed(s, nextBase)
			if err != nil {
				return err
			}
			if loaded {
				continue
			}
		}
		stop, err := r.scanSegment(s, nextBase)
		if err != nil {
			return err
		}
		if err := r.settleZeroTail(s, stop, nextBase, hasNext); err != nil {
			return err
		}
		tail, err := r.settleSegment(s, stop, nextBase, hasNext)
		if err != nil || tail {
			return errors.Join(err, r.removeSegments(bases[i+1:]))
		}
		if err := r.closeSettled(s, nextBase, hasNext); err != nil {
			return err
		}
		if settled && writeSegmentIndex(r.fs, r.dir, s, nextBase) {
			s.indexFile = true
			r.report.SegmentIndexesWritten++
		}
	}
	return nil
}

// loadIndexed fills s, a sealed segment just opened, which the segment of
// nextBase follows and the persisted HWM covers, from its index file,
// reports its corrupt offsets as a scan would, and closes its file as
// closeSettled does after a scan. It reports false, s unchanged, when the
// index file does not hold; the segment is then scanned.
func (r *recoverer) loadIndexed(s *segment, nextBase uint64) (bool, error) {
	if err := loadSegmentIndex(r.fs, r.dir, s, nextBase, r.cfg.FrameBytesMax); err != nil {
		if errors.Is(err, errSegmentIndexUnusable) {
			return false, nil
		}
		return false, err
	}
	chaos.Reached(chaos.MarkStorageSegmentIndexLoaded)
	s.unverified, s.indexFile = true, true
	r.report.SegmentsFromIndex++
	if s.corruptCount > 0 { // else appendCorrupt would walk every offset to find none
		r.report.CorruptCount += s.corruptCount
		r.report.CorruptOffsets = s.appendCorrupt(r.report.CorruptOffsets, nextBase, r.cfg.CorruptOffsetsReportedMax)
	}
	return true, r.closeSettled(s, nextBase, true)
}

// closeSettled closes the file of a scanned sealed segment whose every
// offset lies below the persisted HWM: nothing later in recovery writes
// it (syncUnacknowledged rewrites only what reaches past that HWM), and
// reads reopen it (Log.segmentFile). So recovery holds the files of the
// segments the hwm file does not cover, those the last round wrote (a
// round that seals a segment writes the hwm file, hwmLag.sealed), however
// many segments the log has: it held every one of them until the end.
func (r *recoverer) closeSettled(s *segment, nextBase uint64, hasNext bool) error {
	if !hasNext || nextBase > r.persistedHWM {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	return err
}

// openSegment opens the segment file of base and records it.
func (r *recoverer) openSegment(base uint64) (*segment, error) {
	file, err := r.fs.Open(segmentPath(r.dir, base))
	if err != nil {
		return nil, err
	}
	s := newSegment(base, file)
	r.segments = append(r.segments, s)
	size, err := file.Size()
	if err != nil {
		return nil, err
	}
	s.sizeBytes, s.writtenBytes, s.syncedBytes, s.fileBytes = size, size, size, size
	return s, nil
}

// scanSegment indexes every valid frame of s, resynchronising past corrupt
// frames below the persisted HWM. It returns the byte position where the
// valid content ends: the file size, or the first invalid frame that
// could not be skipped.
func (r *recoverer) scanSegment(s *segment, nextBase uint64) (int64, error) {
	r.reader.reset(s.file, s.sizeBytes)
	position := int64(0)
	for position < s.sizeBytes {
		expected := s.indexedEnd()
		frame, err := r.frameAt(position)
		if err != nil {
			return 0, err
		}
		if frame.valid && frame.offset == expected && frame.offset < nextBase {
			s.index(position, frame.timeMs)
			position += int64(frame.size)
			continue
		}
		if expected >= r.persistedHWM {
			return position, nil
		}
		candidate, found, err := r.resync(position, expected, nextBase)
		if err != nil || !found {
			return position, err
		}
		r.reportCorrupt(expected, candidate.offset)
		s.indexCorrupt(candidate.offset - expected)
		position = candidate.position
	}
	return position, nil
}

// scannedFrame is one frame as recovery saw it.
type scannedFrame struct {
	// valid: the frame decoded and its envelope parsed.
	valid    bool
	offset   uint64
	size     int
	timeMs   int64
	position int64
}

// frameAt decodes the frame at position; an undecodable one is returned
// with valid false (only read errors are errors).
func (r *recoverer) frameAt(position int64) (scannedFrame, error) {
	b, err := r.reader.bytesAt(position, r.cfg.FrameBytesMax)
	if err != nil {
		return scannedFrame{}, err
	}
	offset, envelope, size, err := DecodeFrame(b, r.cfg.FrameBytesMax)
	if err != nil {
		return scannedFrame{position: position}, nil
	}
	record, err := DecodeRecord(envelope)
	if err != nil {
		return scannedFrame{position: position}, nil
	}
	return scannedFrame{valid: true, offset: offset, size: size, timeMs: record.TimeMs, position: position}, nil
}

// frameLengthStart is where a frame header's envelope length field starts
// (frame.go): resync reads a damaged frame's declared length from there.
const frameLengthStart = 4

// resync finds where the scan continues after an invalid frame at
// badPosition, which should have held offset expected. The frame before it
// was valid and ended exactly there (or the segment starts there), so frame
// expected began at badPosition: a frame found later that claims expected
// can only be a stray one inside a payload, and expected itself is always
// reported corrupt. The frame the declared lengths lead to is taken when
// the content after it corroborates it (the common case); otherwise the
// byte scan decides with it (keepWalked).
func (r *recoverer) resync(badPosition int64, expected, nextBase uint64) (scannedFrame, bool, error) {
	walked, walkedFound, err := r.resyncByLength(badPosition, expected, nextBase)
	if err != nil {
		return scannedFrame{}, false, err
	}
	if walkedFound {
		corroborated, err := r.corroborated(walked, nextBase)
		if err != nil || corroborated {
			return walked, corroborated, err
		}
	}
	scanned, scannedFound, err := r.resyncByScan(badPosition, expected, nextBase)
	if err != nil || !walkedFound || !r.keepWalked(walked, scanned, scannedFound, nextBase) {
		return scanned, scannedFound, err
	}
	return walked, true, nil
}

// keepWalked decides between a frame the walk reached that nothing after
// it corroborates and the byte scan's result. A damaged length field can
// point at a frame inside a payload claiming the next offset; the genuine
// frame of that offset is elsewhere, and the scan finds it, corroborated:
// the scan's frame is taken unless it claims more than the walked one and
// lies after it. Then the walked frame is an intact one before further
// damage (an intact frame between two damaged ones) and is kept, as it is
// when the scan finds nothing and it claims an offset that was appended
// (appended).
func (r *recoverer) keepWalked(walked, scanned scannedFrame, scannedFound bool, nextBase uint64) bool {
	if scannedFound {
		return scanned.offset > walked.offset && scanned.position > walked.position
	}
	return r.appended(walked.offset, nextBase)
}

// appended reports whether offset was surely appended to the log, so that
// a frame claiming it may end the content of the segment the segment of
// nextBase follows: it is below the persisted HWM, or below the base of a
// next segment (a roll starts a segment at Next, so every offset before
// it was appended, synced or not). The second matters to the first
// recovery after a close or a crash that left a sealed segment above the
// persisted HWM: that recovery writes an HWM past the segment, so every
// later one takes what the first would have refused, and the two would
// disagree on the corrupt offsets (a move's copy, recovered under the
// source's HWM, is then refused for it).
func (r *recoverer) appended(offset, nextBase uint64) bool {
	return offset < r.persistedHWM || (nextBase != math.MaxUint64 && offset < nextBase)
}

// resyncByLength follows the length fields from the damaged frame. Damage
// to a frame's magic, offset, CRC or envelope leaves its length intact, so
// the next frame starts where the declared length ends. The walk goes on
// through invalid frames (a run of damaged ones), and the first valid
// frame it reaches must claim exactly the offset the walk counted; any
// other outcome leaves resync to the scan (a damaged length pointing at a
// later genuine frame, say, which the scan then finds in its place). With
// the lengths intact this never looks inside a damaged payload, so a frame
// encoded in one cannot be taken.
func (r *recoverer) resyncByLength(badPosition int64, expected, nextBase uint64) (scannedFrame, bool, error) {
	position := badPosition
	for claimed := expected + 1; claimed < nextBase; claimed++ {
		end, ok, err := r.declaredEnd(position)
		if err != nil || !ok {
			return scannedFrame{}, false, err
		}
		frame, err := r.frameAt(end)
		if err != nil || frame.valid {
			return frame, frame.valid && frame.offset == claimed, err
		}
		position = end
	}
	return scannedFrame{}, false, nil
}

// declaredEnd returns where the frame at position ends by its length
// field, and whether that is plausible: a frame size within
// [frameBytesMin, FrameBytesMax], ending before the end of the file (the
// magic is not required: it may be the damaged part).
func (r *recoverer) declaredEnd(position int64) (int64, bool, error) {
	header, err := r.reader.bytesAt(position, frameHeaderBytes)
	if err != nil || len(header) < frameHeaderBytes {
		return 0, false, err
	}
	size := frameHeaderBytes + int64(binary.BigEndian.Uint32(header[frameLengthStart:]))
	end := position + size
	return end, size >= frameBytesMin && size <= int64(r.cfg.FrameBytesMax) && end < r.reader.fileBytes, nil
}

// resyncByScan searches forward byte by byte from inside the damaged frame,
// for when the walk fails or what it found is not corroborated (a length
// field of the run is damaged too). A payload may hold encoded frames, so
// a candidate is taken only if it can follow (canFollow) and the content
// after it agrees (corroborated).
func (r *recoverer) resyncByScan(badPosition int64, expected, nextBase uint64) (scannedFrame, bool, error) {
	for position := badPosition + 1; position < r.reader.fileBytes; {
		b, err := r.reader.bytesAt(position, r.cfg.FrameBytesMax)
		if err != nil {
			return scannedFrame{}, false, err
		}
		found := bytes.Index(b, frameMagicBytes)
		if found < 0 {
			position += int64(max(1, len(b)-len(frameMagicBytes)+1))
			continue
		}
		position += int64(found)
		frame, err := r.frameAt(position)
		if err != nil {
			return scannedFrame{}, false, err
		}
		if canFollow(frame, badPosition, expected, nextBase) {
			corroborated, err := r.corroborated(frame, nextBase)
			if err != nil || corroborated {
				return frame, corroborated, err
			}
		}
		position++
	}
	return scannedFrame{}, false, nil
}

// canFollow reports whether a valid frame found by the byte scan could be
// the next genuine one after the damaged frame at badPosition: its offset
// is above expected, below nextBase, and the offsets it skips could fit in
// the bytes skipped (each frame takes at least frameBytesMin), which
// rejects stray frames that claim far-away offsets.
func canFollow(frame scannedFrame, badPosition int64, expected, nextBase uint64) bool {
	skippedMax := uint64(frame.position-badPosition) / frameBytesMin
	return frame.valid && frame.offset > expected && frame.offset < nextBase && frame.offset-expected <= skippedMax
}

// corroborated reports whether the content after a frame resync found
// agrees that it is a genuine one: the next frame is valid and claims the
// next offset, or the candidate ends where the segment's valid content
// ends (the end of the file, or a zero tail) and claims an offset that
// must exist (appended: below the persisted HWM, or, in a sealed segment,
// below the next segment's base). A frame encoded in a
// payload is followed by the rest of that payload, or by the genuine next
// frame whose offset does not follow its own, so it fails; one at the very
// end of the log's last payload would claim an offset never written, at or
// above the persisted HWM, so it fails too. A torn tail after the
// candidate does not corroborate it: the rest of a payload looks the same.
func (r *recoverer) corroborated(candidate scannedFrame, nextBase uint64) (bool, error) {
	end := candidate.position + int64(candidate.size)
	if end < r.reader.fileBytes {
		following, err := r.frameAt(end)
		if err != nil {
			return false, err
		}
		if following.valid && following.offset == candidate.offset+1 && following.offset < nextBase {
			return true, nil
		}
	}
	if !r.appended(candidate.offset, nextBase) {
		return false, nil
	}
	return r.zeroFrom(end)
}

// settleZeroTail recognises a zero tail: the valid content of s stops
// before the end of its file and every byte from there on is zero, which
// is what the active segment writes ahead of its frames (doc.go), not a
// torn frame (a frame never starts with zeros). It is not reported as
// truncated nor as corrupt. The last segment keeps it and writes its next
// frames over it; an earlier, sealed one is cut there, durably, so sealed
// segments end at their last frame. Either way s ends at stop for the
// rules that follow.
//
// Zeros that start below the persisted HWM in the last segment are not a
// zero tail but acknowledged frames lost to the medium (a write the disk
// never made reads as zeros): they are left to settleSegment, which keeps
// their offsets as corrupt and never hands them out again. So are zeros
// in a sealed segment that indexes fewer offsets than the next one's
// base: below the persisted HWM they hold offsets a kept damaged end
// skipped (keepDamagedEnd), above it settleSegment cuts them as a torn
// tail.
func (r *recoverer) settleZeroTail(s *segment, stop int64, nextBase uint64, hasNext bool) error {
	if stop >= s.sizeBytes || (!hasNext && s.indexedEnd() < r.persistedHWM) || (hasNext && s.indexedEnd() < nextBase) {
		return nil
	}
	zero, err := r.zeroFrom(stop)
	if err != nil || !zero {
		return err
	}
	if hasNext {
		if err := s.file.Truncate(stop); err != nil {
			return err
		}
		if err := s.file.Sync(); err != nil {
			return err
		}
		s.fileBytes = stop
	}
	r.report.ZeroTailBytes += s.sizeBytes - stop
	s.sizeBytes, s.writtenBytes, s.syncedBytes = stop, stop, stop
	return nil
}

// zeroFrom reports whether every byte of the current segment file from
// position on is zero.
func (r *recoverer) zeroFrom(position int64) (bool, error) {
	for position < r.reader.fileBytes {
		b, err := r.reader.bytesAt(position, r.reader.windowBytes)
		if err != nil {
			return false, err
		}
		for rest := b; len(rest) > 0; {
			piece := rest[:min(len(rest), len(zeroBlock))]
			if !bytes.Equal(piece, zeroBlock[:len(piece)]) {
				return false, nil
			}
			rest = rest[len(piece):]
		}
		position += int64(len(b))
	}
	return true, nil
}

// settleSegment applies the recovery rules at the end of a segment's
// scan, given where its valid content stops. It returns true when s ends
// the log (a torn tail), so later segments must go.
//
//   - The last segment is truncated where its valid content stops.
//   - A segment that stops early, or indexes fewer offsets than it spans
//     up to the next base, at or above the persisted HWM is a torn tail:
//     it is truncated and later segments are removed.
//   - Below the persisted HWM such a gap is corruption in the middle: the
//     missing offsets are reported and skipped. In the last segment too
//     (keepDamagedEnd): damage there with no frame found after it is never
//     cut as a torn tail, which would take intact frames after it and let
//     appends reuse acknowledged offsets.
func (r *recoverer) settleSegment(s *segment, stop int64, nextBase uint64, hasNext bool) (bool, error) {
	end := s.indexedEnd()
	gap := hasNext && end < nextBase
	assert(!hasNext || end <= nextBase, "segment %d indexes up to %d, past the next base %d", s.base, end, nextBase)
	if !hasNext && end < r.persistedHWM && stop < s.sizeBytes {
		if kept, err := r.keepDamagedEnd(s, stop); kept || err != nil {
			return false, err
		}
	}
	if !hasNext || (end >= r.persistedHWM && (gap || stop < s.sizeBytes)) {
		return hasNext, r.truncateSegment(s, stop)
	}
	if gap {
		r.reportCorrupt(end, nextBase)
		s.corruptCount += nextBase - end
	}
	return false, nil
}

// keepDamagedEnd settles a last segment whose scan stopped, at stop, at
// damage below the persisted HWM with no frame it could take after it: the
// offsets up to the persisted HWM are reported corrupt and skipped (Read
// returns ErrCorrupt for them, as for a gap in a sealed segment), and the
// damaged bytes stay, to the end of the file: while the segment may be
// the last one again (a crash before a later segment's file is durable),
// they are what holds the skipped offsets below the persisted HWM; cut,
// the next recovery would count them lost and hand them out again. The
// log's first Append seals the segment as it is and starts a new one at
// the persisted HWM (Log.rollBeforeAppend), so its frames are read from
// a segment's start by every later recovery, and the damage is a gap in
// a sealed segment (settleZeroTail keeps the zeros of such a gap).
// Frames appended past the damage in the same segment once had to be
// found by a byte scan that rejected the last acknowledged one when a
// torn append followed it (seed 6362279 of the one-node fan-out world). The skipped offsets are never reused. It keeps
// nothing (false) when the skipped offsets could not fit in the damaged
// bytes: the hwm file is then not to be believed, and the segment is
// truncated at stop as a torn tail.
func (r *recoverer) keepDamagedEnd(s *segment, stop int64) (bool, error) {
	skipped := r.persistedHWM - s.indexedEnd()
	if skipped > uint64(s.sizeBytes-stop)/frameBytesMin+1 { // the damaged bytes: zeroed ones count
		return false, nil
	}
	r.reportCorrupt(s.indexedEnd(), r.persistedHWM)
	s.indexCorrupt(skipped)
	r.keptDamagedEnd = true
	return true, nil
}

// truncateSegment cuts s at stop, durably.
func (r *recoverer) truncateSegment(s *segment, stop int64) error {
	if stop == s.sizeBytes {
		return nil
	}
	assert(stop >= 0 && stop < s.sizeBytes, "truncating segment %d of %d bytes at %d", s.base, s.sizeBytes, stop)
	removeSegmentIndex(r.fs, r.dir, s.base)
	if err := s.file.Truncate(stop); err != nil {
		return err
	}
	if err := s.file.Sync(); err != nil {
		return err
	}
	r.report.TruncatedBytes += s.sizeBytes - stop
	s.sizeBytes, s.writtenBytes, s.syncedBytes, s.fileBytes = stop, stop, stop, stop
	return nil
}

// removeSegments deletes the segment files after a torn tail, durably.
func (r *recoverer) removeSegments(bases []uint64) error {
	for _, base := range bases {
		name := segmentPath(r.dir, base)
		info, err := r.fs.Stat(name)
		if err != nil {
			return err
		}
		removeSegmentIndex(r.fs, r.dir, base)
		if err := r.fs.Remove(name); err != nil {
			return err
		}
		r.report.TruncatedBytes += info.Size
	}
	if len(bases) == 0 {
		return nil
	}
	return r.fs.SyncDir(r.dir)
}

// reportCorrupt records the offsets [from, to) as corrupt.
func (r *recoverer) reportCorrupt(from, to uint64) {
	assert(from <= to, "corrupt range [%d, %d) reversed", from, to)
	r.report.CorruptCount += to - from
	for offset := from; offset < to && len(r.report.CorruptOffsets) < r.cfg.CorruptOffsetsReportedMax; offset++ {
		r.report.CorruptOffsets = append(r.report.CorruptOffsets, offset)
	}
}

// ensureSegment creates the first segment of an empty log.
func (r *recoverer) ensureSegment() error {
	if len(r.segments) > 0 {
		return nil
	}
	file, err := r.fs.Create(segmentPath(r.dir, 0))
	if err != nil {
		return err
	}
	r.segments = append(r.segments, newSegment(0, file))
	return r.fs.SyncDir(r.dir)
}

// buildLog settles the hwm and committed offset and returns the open log.
func (r *recoverer) buildLog() (*Log, error) {
	last := r.segments[len(r.segments)-1]
	last.openedBytes = last.writtenBytes
	next := last.indexedEnd()
	hwmFile, err := r.settleHWM(next)
	if err != nil {
		return nil, err
	}
	log := &Log{fs: r.fs, dir: r.dir, cfg: r.cfg, segments: r.segments, next: next, hwm: next,
		hwmFile: hwmFile, unsyncedFrom: len(r.segments) - 1, directoryDirty: true}
	log.rollBeforeAppend = r.keptDamagedEnd
	log.indexedThrough = r.indexedThrough
	if err := r.settleCommitted(log); err != nil {
		hwmFile.file.Close()
		return nil, err
	}
	r.fillReport(log)
	log.releaseSealedFiles()
	log.pageOut()
	if invariantsEnabled {
		log.checkInvariants()
	}
	return log, nil
}

// settleHWM makes the recovered end the HWM: every valid frame found is
// exposed, including frames above the persisted HWM that were written but
// never acknowledged (allowed by at-least-once delivery). Those are made
// durable first, then the hwm file is rewritten if it differs, so what
// becomes visible now stays visible after another crash.
func (r *recoverer) settleHWM(next uint64) (*hwmFile, error) {
	if r.persistedHWM > next {
		r.report.LostAcknowledged = r.persistedHWM - next
	}
	highest, anyValid := r.hwmState.highest()
	usable := r.hwmState.wellFormed && anyValid // its slots can be written in place
	if usable && highest == next {
		return openHWMFile(r.fs, r.dir, r.hwmState)
	}
	raise := usable && highest < next // records past it: the usual crash, the file written lazily
	if chaos.Planted(chaos.BugRecoveryServesUnsynced) && raise {
		return openHWMFile(r.fs, r.dir, r.hwmState)
	}
	if raise {
		chaos.Reached(chaos.MarkStorageRecoveredPastHWM)
	}
	if err := r.syncUnacknowledged(); err != nil {
		return nil, err
	}
	if raise {
		return r.raiseHWMInPlace(next)
	}
	if err := writeHWMFile(r.fs, r.dir, next); err != nil {
		return nil, err
	}
	state := hwmState{exists: true, valid: [hwmSlots]bool{true, true}, values: [hwmSlots]uint64{next, next}, wellFormed: true}
	return openHWMFile(r.fs, r.dir, state)
}

// raiseHWMInPlace writes a high watermark above the file's into its older
// slot, as a sync round does: the other slot keeps the old one, durably.
// A new file by atomic replace needs a block the disk may not have: after
// a crash (the hwm file is written lazily) a restart on a full disk left
// every partition that took records since its last hwm write unavailable
// (full-disk audit).
func (r *recoverer) raiseHWMInPlace(next uint64) (*hwmFile, error) {
	file, err := openHWMFile(r.fs, r.dir, r.hwmState)
	if err != nil {
		return nil, err
	}
	if err := file.write(next); err != nil {
		return nil, errors.Join(err, file.file.Close())
	}
	return file, nil
}

// syncUnacknowledged makes durable every frame at or above the persisted
// HWM, then the directory, before a higher HWM is written. It writes
// those bytes again before the fsync: found in the page cache after a
// process restart, they may belong to a round whose fsync failed, and
// Linux marks the pages of a failed write-back clean, so a bare fsync
// would report success and write nothing. Written again, they are dirty,
// and the fsync writes them or fails.
func (r *recoverer) syncUnacknowledged() error {
	var buffer []byte
	for i, s := range r.segments {
		spanEnd := s.indexedEnd()
		if i+1 < len(r.segments) {
			spanEnd = r.segments[i+1].base
		}
		if spanEnd <= r.persistedHWM || s.sizeBytes == 0 {
			continue
		}
		var err error
		if buffer, err = rewriteRange(s.file, s.durableBytesBelow(r.persistedHWM), s.sizeBytes, buffer); err != nil {
			return err
		}
		if err := s.file.Sync(); err != nil {
			return err
		}
	}
	return r.fs.SyncDir(r.dir)
}

// rewriteChunkBytes is how much of a file rewriteRange holds at once.
const rewriteChunkBytes = 1 << 20

// rewriteRange reads the bytes of file in [from, to) and writes them back
// in place, rewriteChunkBytes at a time, reusing buffer (returned, grown).
func rewriteRange(file File, from, to int64, buffer []byte) ([]byte, error) {
	for position := from; position < to; {
		n := min(to-position, rewriteChunkBytes)
		if int64(cap(buffer)) < n {
			buffer = make([]byte, n)
		}
		chunk := buffer[:n]
		if err := readFull(file, chunk, position); err != nil {
			return buffer, err
		}
		if _, err := file.WriteAt(chunk, position); err != nil {
			return buffer, err
		}
		position += n
	}
	return buffer, nil
}

// settleCommitted loads the committed consumer offset, clamped into
// [Oldest, HWM].
func (r *recoverer) settleCommitted(log *Log) error {
	state, err := readCommittedState(r.fs, r.dir)
	if err != nil {
		return err
	}
	log.setCommittedFiles(state)
	committed := max(state.highest(), log.Oldest())
	if chaos.Planted(chaos.BugForgetCommitted) {
		committed = log.Oldest()
	}
	log.committedSynced = committed
	if state.damaged() {
		committed, log.committedSynced = log.Oldest(), math.MaxUint64
		r.report.CommittedReset = true
	}
	if committed > log.hwm {
		committed = log.hwm
		r.report.CommittedReset = true
	}
	log.committed = committed
	return nil
}

// fillReport copies the final state into the report.
func (r *recoverer) fillReport(log *Log) {
	r.report.Segments = len(log.segments)
	r.report.HWM = log.hwm
	r.report.Committed = log.committed
	for _, s := range log.segments {
		for _, position := range s.positions {
			if position != positionCorrupt {
				r.report.Records++
			}
		}
	}
}

// segmentReader reads a segment file through a bounded window, for
// recovery's sequential scan. The window is reused across segments.
type segmentReader struct {
	// windowBytes bounds the window: twice FrameBytesMax, so any frame
	// fits in one read.
	windowBytes int
	file        File
	fileBytes   int64
	// window holds bytes [windowStart, windowStart+len(window)) of file.
	window      []byte
	windowStart int64
	buffer      []byte
}

// reset points the reader at another file.
func (r *segmentReader) reset(file File, fileBytes int64) {
	r.file, r.fileBytes, r.window, r.windowStart = file, fileBytes, nil, 0
	need := int(min(int64(r.windowBytes), fileBytes))
	if cap(r.buffer) < need {
		r.buffer = make([]byte, need)
	}
}

// bytesAt returns up to length bytes at position (fewer only at the end of
// the file). The slice is valid until the next call.
func (r *segmentReader) bytesAt(position int64, length int) ([]byte, error) {
	if length > r.windowBytes || position < 0 || position >= r.fileBytes { // guarded: the arguments would allocate on every call
		assert(false, "read of %d bytes at %d, window %d, file %d", length, position, r.windowBytes, r.fileBytes)
	}
	end := min(position+int64(length), r.fileBytes)
	windowEnd := r.windowStart + int64(len(r.window))
	if position >= r.windowStart && end <= windowEnd {
		return r.window[position-r.windowStart : end-r.windowStart], nil
	}
	n := min(int64(cap(r.buffer)), r.fileBytes-position)
	if err := readFull(r.file, r.buffer[:n], position); err != nil {
		return nil, err
	}
	r.window, r.windowStart = r.buffer[:n], position
	return r.window[:end-position], nil
}
