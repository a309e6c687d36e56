package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path"
	"slices"
	"strings"

	"narad/chaos"
)

// A segment index file (doc.go, "Segment index files") keeps what a scan
// of a sealed segment found, so that recovery need not read the segment
// again: the positions of its frames, its newest record time and its
// corrupt offsets. Layout, all integers big-endian:
//
//	magic          4 bytes  segmentIndexMagic
//	version        4 bytes  segmentIndexVersion
//	base           8 bytes  the segment's first offset
//	nextBase       8 bytes  the next segment's first offset
//	segmentBytes   8 bytes  the size of the segment file
//	newestTimeMs   8 bytes  the segment's newest record time
//	corruptCount   8 bytes  the segment's corrupt offsets (segment.corruptCount)
//	count          8 bytes  the entries that follow
//	positions      4 bytes each: segment.positions
//	crc            4 bytes  CRC32C over everything before it
const (
	segmentIndexMagic      = 0x4e524458 // "NRDX"
	segmentIndexVersion    = 1
	segmentIndexSuffix     = ".index"
	segmentIndexHeaderSize = 4 + 4 + 6*8
	segmentIndexCRCBytes   = 4
	// segmentIndexBytesMax bounds an index file, written or read: a
	// segment of more frames than fit is scanned at every recovery.
	segmentIndexBytesMax = readFileBytesMax
)

// errSegmentIndexUnusable: the index file is missing, damaged, or does
// not describe the segment file beside it; recovery scans the segment.
var errSegmentIndexUnusable = errors.New("segment index unusable")

// segmentIndexName is the file name of the index of the segment of base.
func segmentIndexName(base uint64) string {
	return strings.TrimSuffix(segmentName(base), segmentSuffix) + segmentIndexSuffix
}

// segmentIndexPath is the path of the index of the segment of base in dir.
func segmentIndexPath(dir string, base uint64) string {
	return path.Join(dir, segmentIndexName(base))
}

// parseSegmentIndexName returns the base of a segment index file name,
// and false for any other name.
func parseSegmentIndexName(name string) (uint64, bool) {
	stem, ok := strings.CutSuffix(name, segmentIndexSuffix)
	if !ok {
		return 0, false
	}
	return parseSegmentName(stem + segmentSuffix)
}

// encodeSegmentIndex returns the index file of s, a sealed segment that
// the segment of nextBase follows, or false when it would exceed
// segmentIndexBytesMax.
func encodeSegmentIndex(s *segment, nextBase uint64) ([]byte, bool) {
	size := segmentIndexHeaderSize + 4*len(s.positions) + segmentIndexCRCBytes
	if size > segmentIndexBytesMax {
		return nil, false
	}
	b := make([]byte, 0, size)
	b = binary.BigEndian.AppendUint32(b, segmentIndexMagic)
	b = binary.BigEndian.AppendUint32(b, segmentIndexVersion)
	b = binary.BigEndian.AppendUint64(b, s.base)
	b = binary.BigEndian.AppendUint64(b, nextBase)
	b = binary.BigEndian.AppendUint64(b, uint64(s.sizeBytes))
	b = binary.BigEndian.AppendUint64(b, uint64(s.newestTimeMs))
	b = binary.BigEndian.AppendUint64(b, s.corruptCount)
	b = binary.BigEndian.AppendUint64(b, uint64(len(s.positions)))
	for _, position := range s.positions {
		b = binary.BigEndian.AppendUint32(b, position)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), true
}

// segmentIndex is a decoded index file.
type segmentIndex struct {
	base, nextBase uint64
	segmentBytes   int64
	newestTimeMs   int64
	corruptCount   uint64
	positions      []uint32
}

// decodeSegmentIndex parses an index file and checks that it is
// consistent in itself: checksum, counts, positions in order.
func decodeSegmentIndex(b []byte) (segmentIndex, error) {
	if len(b) < segmentIndexHeaderSize+segmentIndexCRCBytes {
		return segmentIndex{}, fmt.Errorf("%w: %d bytes", errSegmentIndexUnusable, len(b))
	}
	body, sum := b[:len(b)-segmentIndexCRCBytes], binary.BigEndian.Uint32(b[len(b)-segmentIndexCRCBytes:])
	if crc32.Checksum(body, castagnoli) != sum {
		return segmentIndex{}, fmt.Errorf("%w: checksum", errSegmentIndexUnusable)
	}
	field := func(i int) uint64 { return binary.BigEndian.Uint64(body[8+8*i:]) }
	if binary.BigEndian.Uint32(body) != segmentIndexMagic || binary.BigEndian.Uint32(body[4:]) != segmentIndexVersion {
		return segmentIndex{}, fmt.Errorf("%w: magic or version", errSegmentIndexUnusable)
	}
	index := segmentIndex{base: field(0), nextBase: field(1), segmentBytes: int64(field(2)), newestTimeMs: int64(field(3)), corruptCount: field(4)}
	count := field(5)
	if count != uint64(len(body)-segmentIndexHeaderSize)/4 || (len(body)-segmentIndexHeaderSize)%4 != 0 {
		return segmentIndex{}, fmt.Errorf("%w: %d entries in %d bytes", errSegmentIndexUnusable, count, len(body))
	}
	if index.nextBase < index.base || count > index.nextBase-index.base || index.segmentBytes < 0 {
		return segmentIndex{}, fmt.Errorf("%w: %d entries for offsets [%d, %d)", errSegmentIndexUnusable, count, index.base, index.nextBase)
	}
	index.positions = make([]uint32, count)
	corrupt, last := index.nextBase-index.base-count, int64(-1)
	for i := range index.positions {
		position := binary.BigEndian.Uint32(body[segmentIndexHeaderSize+4*i:])
		index.positions[i] = position
		if position == positionCorrupt {
			corrupt++
			continue
		}
		if int64(position) <= last || int64(position) >= index.segmentBytes {
			return segmentIndex{}, fmt.Errorf("%w: position %d of entry %d", errSegmentIndexUnusable, position, i)
		}
		last = int64(position)
	}
	if corrupt != index.corruptCount {
		return segmentIndex{}, fmt.Errorf("%w: %d corrupt offsets, %d recorded", errSegmentIndexUnusable, corrupt, index.corruptCount)
	}
	return index, nil
}

// writeSegmentIndex writes the index file of s, a sealed segment that the
// segment of nextBase follows and that the persisted HWM covers, and
// syncs it, so that it outlives a power loss too once its name is
// durable (the caller's next directory sync). It reports whether the file
// was written. An error is not the log's, which stays usable: a file a
// crash tore or lost, or whose fsync failed, fails its checks and the
// segment is scanned; a partly written file is removed where it can be.
func writeSegmentIndex(fs FS, dir string, s *segment, nextBase uint64) bool {
	data, ok := encodeSegmentIndex(s, nextBase)
	if !ok {
		return false
	}
	name := segmentIndexPath(dir, s.base)
	file, err := fs.Create(name)
	if err != nil {
		return false
	}
	_, err = file.Write(data)
	if err == nil {
		err = file.Sync()
	}
	if err = errors.Join(err, file.Close()); err != nil {
		_ = fs.Remove(name) // a torn one would fail its checksum anyway
		return false
	}
	return true
}

// loadSegmentIndex fills s, a sealed segment of dir with its file open
// and nothing indexed yet, which the segment of nextBase follows, from its
// index file, after checking that the file describes this segment: its
// base, the next base and the segment's size, and the first and last
// frames it indexes read back as the offsets it says. It reports
// errSegmentIndexUnusable, s unchanged, when the file does not hold (the
// segment is then scanned); other errors are read errors of the segment
// file.
func loadSegmentIndex(fs FS, dir string, s *segment, nextBase uint64, frameBytesMax int) error {
	index, err := readSegmentIndex(fs, dir, s, nextBase)
	if err != nil {
		return err
	}
	candidate := &segment{base: s.base, file: s.file, positions: index.positions, sizeBytes: s.sizeBytes}
	if err := checkIndexedEnds(candidate, frameBytesMax); err != nil {
		return err
	}
	s.positions, s.newestTimeMs, s.corruptCount = index.positions, index.newestTimeMs, index.corruptCount
	return nil
}

// readSegmentIndex reads and decodes the index file of s, a sealed segment
// that the segment of nextBase follows, and checks that it names s: its
// base, the next base and the segment's size. Every failure, a missing or
// unreadable file included, is errSegmentIndexUnusable.
func readSegmentIndex(fs FS, dir string, s *segment, nextBase uint64) (segmentIndex, error) {
	data, err := ReadFile(fs, segmentIndexPath(dir, s.base)) // bounded by readFileBytesMax, segmentIndexBytesMax
	if err != nil {
		return segmentIndex{}, fmt.Errorf("%w: %w", errSegmentIndexUnusable, err)
	}
	index, err := decodeSegmentIndex(data)
	if err != nil {
		return segmentIndex{}, err
	}
	if index.base != s.base || index.nextBase != nextBase || index.segmentBytes != s.sizeBytes {
		return segmentIndex{}, fmt.Errorf("%w: describes [%d, %d) in %d bytes, not [%d, %d) in %d", errSegmentIndexUnusable,
			index.base, index.nextBase, index.segmentBytes, s.base, nextBase, s.sizeBytes)
	}
	return index, nil
}

// checkIndexedEnds reads the first and the last frame s indexes from its
// open file and checks that each verifies and holds the offset the index
// gives it.
func checkIndexedEnds(s *segment, frameBytesMax int) error {
	first, last := -1, -1
	for i, position := range s.positions {
		if position != positionCorrupt {
			last = i
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return nil
	}
	for _, i := range []int{first, last} {
		offset := s.base + uint64(i)
		position, length, _ := s.frameBounds(offset, frameBytesMax)
		buffer := make([]byte, length)
		if err := readFull(s.file, buffer, position); err != nil {
			return err
		}
		if _, err := decodeStoredRecord(buffer, offset, frameBytesMax); err != nil {
			return fmt.Errorf("%w: offset %d: %w", errSegmentIndexUnusable, offset, err)
		}
	}
	return nil
}

// removeSegmentIndex removes the index file of the segment of base, if
// there is one. Failures are ignored: an index file left without its
// segment is removed by the next recovery, and one left beside a
// segment that changed fails its checks.
func removeSegmentIndex(fs FS, dir string, base uint64) {
	_ = fs.Remove(segmentIndexPath(dir, base))
}

// writeDueIndexes writes the index file of every sealed segment that the
// persisted HWM now covers, once each, from Log.indexedThrough on (the
// recovery loaded or wrote those it covered): such a segment never
// changes again (recovery cuts nothing below the persisted HWM), so its
// index stays true for as long as the file keeps its name.
func (l *Log) writeDueIndexes() {
	if !l.cfg.SegmentIndexFiles {
		return
	}
	written := false
	for l.indexedThrough < len(l.segments)-1 {
		s, next := l.segments[l.indexedThrough], l.segments[l.indexedThrough+1]
		if next.base > l.hwmFile.value || s.syncedBytes != s.sizeBytes {
			break
		}
		chaos.Reached(chaos.MarkStorageSegmentIndexWritten)
		s.indexFile = writeSegmentIndex(l.fs, l.dir, s, next.base)
		written = written || s.indexFile
		l.indexedThrough++
	}
	if written {
		l.directoryDirty = true // the next round makes their names durable
		l.pageOut()
	}
}

// Unverified reports whether some sealed segment of the log was taken
// from its index file and not scanned since (VerifySegments): Corruption
// may then miss media damage that Read would meet.
func (l *Log) Unverified() bool {
	return slices.ContainsFunc(l.segments, func(s *segment) bool { return s.unverified })
}

// VerifySegments scans up to segmentsMax of the sealed segments recovery
// took from their index files, oldest first, as recovery would have, so
// that Corruption counts the damage the medium did since the index was
// written (a move's copy carries exactly the source's known corruption,
// and its destination refuses any other). Offsets found damaged become
// corrupt for Read, as recovery's are. Each segment is read whole, once
// per open of the log, so a call reads at most segmentsMax segments; a
// read error is returned and the segments not scanned stay unverified.
func (l *Log) VerifySegments(segmentsMax int) error {
	if err := l.usable(); err != nil {
		return err
	}
	for i, s := range l.segments {
		if !s.unverified {
			continue
		}
		if segmentsMax <= 0 {
			break
		}
		segmentsMax--
		if err := l.pageIn(i); err != nil {
			return err
		}
		if !s.unverified {
			continue // its index file did not hold: pageIn scanned it
		}
		scanned, err := l.scanSealed(s, l.segments[i+1].base)
		if err != nil {
			return err
		}
		if !sameFrames(scanned, s) {
			chaos.Reached(chaos.MarkStorageVerifyFoundDamage)
			l.adoptScan(i, scanned)
		}
		s.unverified = false
	}
	l.pageOut()
	return nil
}

// sameFrames reports whether two indexes of one sealed segment give the
// same frames and the same corrupt offsets. A run of corrupt offsets at
// its end is either marked (a damaged end recovery kept, indexCorrupt) or
// a gap below the next segment's base (a scan's): the two are the same
// offsets, so the marks at the end are not compared.
func sameFrames(a, b *segment) bool {
	trim := func(positions []uint32) []uint32 {
		end := len(positions)
		for end > 0 && positions[end-1] == positionCorrupt {
			end--
		}
		return positions[:end]
	}
	return a.corruptCount == b.corruptCount && slices.Equal(trim(a.positions), trim(b.positions))
}

// scanSealed scans the sealed segment s, which the segment of nextBase
// follows, below the persisted HWM, as recovery does, into a new segment
// value; it changes neither s nor its file.
func (l *Log) scanSealed(s *segment, nextBase uint64) (*segment, error) {
	file, err := l.fs.Open(segmentPath(l.dir, s.base))
	if err != nil {
		return nil, err
	}
	defer file.Close()
	r := &recoverer{fs: l.fs, dir: l.dir, cfg: l.cfg, persistedHWM: math.MaxUint64}
	r.reader.windowBytes = 2 * l.cfg.FrameBytesMax
	scanned := newSegment(s.base, file)
	scanned.sizeBytes = s.sizeBytes
	stop, err := r.scanSegment(scanned, nextBase)
	if err != nil {
		return nil, err
	}
	if _, err := r.settleSegment(scanned, stop, nextBase, true); err != nil { // below the HWM: counts a gap, cuts nothing
		return nil, err
	}
	scanned.file = nil
	return scanned, nil
}
