package storage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"narad/chaos"
)

// Log is the partition log of one directory. It is not safe for concurrent
// use: the node calls it from its single loop. See doc.go for the sync
// round and the recovery rules.
type Log struct {
	// fs, dir and cfg are fixed at OpenLog.
	fs  FS
	dir string
	cfg LogConfig

	// segments are the retained segments in offset order; the last is the
	// active one, the only one Append writes. Invariant: non-empty while
	// open; bases strictly increase. Changed by Append (roll) and
	// ApplyRetention.
	segments []*segment
	// sealedOpen are the sealed, synced segments whose files are open,
	// least recently read first; at most sealedFilesOpenMax. A sealed
	// segment not in it has its file closed, but for those sealed since
	// the last completed round (they are being synced). Changed by
	// releaseSealedFiles, segmentFile and retention.
	sealedOpen []*segment
	// pending holds frames appended to the active segment but not yet
	// written to its file. Invariant: len(pending) ==
	// active.sizeBytes - active.writtenBytes, and is below
	// cfg.WriteBufferBytesMax between calls.
	pending []byte
	// next is the offset the next Append gets. Invariant: next ==
	// active.indexedEnd() and next >= hwm. Changed by Append.
	next uint64
	// hwm is the visible high watermark: offsets in [Oldest(), hwm) are
	// readable and their frames durable. Invariant: hwm <= next, the
	// durable value in the hwm file <= hwm, and hwm never decreases while
	// the log is open. Changed only by Sync.
	hwm uint64
	// hwmFile is the open two-slot hwm file. It lags hwm within the
	// bounds of hwmLag.
	hwmFile *hwmFile
	// hwmLag is what was appended since the hwm file was last written;
	// it decides when a round writes it again.
	hwmLag hwmLag
	// rollBeforeAppend is set by a recovery that kept a damaged end of
	// the active segment (recovery.go, keepDamagedEnd): the next Append
	// seals that segment as it is, damaged bytes included, and starts a
	// new one, so that no later recovery has to find frames past the
	// damage (it could not tell the last of them from a frame inside a
	// payload when a torn append follows it). Cleared by roll.
	rollBeforeAppend bool
	// unsyncedFrom indexes the first segment that may hold bytes not yet
	// fsynced: every segment before it is durable. Changed by Sync (moves
	// to the active segment) and ApplyRetention (shifts down).
	unsyncedFrom int
	// directoryDirty: the directory may hold entries that are not durable
	// yet, so the next sync round must sync it before the hwm covers them:
	// a segment created since the last round, or, after recovery, entries
	// found by listing the directory (a listing shows names a crash could
	// still take away), or an index file written since (writeDueIndexes).
	// Set by roll, recovery and writeDueIndexes, cleared by Sync.
	directoryDirty bool
	// committed is the in-memory committed consumer offset, and
	// committedSynced the value last made durable. Invariant: Oldest() <=
	// committed <= hwm (ApplyRetention raises committed along with Oldest).
	// Changed by SetCommitted, SyncCommitted and ApplyRetention.
	committed, committedSynced uint64
	// committedFiles is what each committed offset file holds on disk, and
	// committedNext the one the next round writes in place (offset.go):
	// the one not holding committedSynced. Set by recovery and reopen,
	// then only by completeRound.
	committedFiles [committedFiles]committedFile
	committedNext  int
	// failure is the first write-path I/O error, wrapped in ErrLogFailed.
	// Once set it never changes and every later call returns it.
	failure error
	// closed is set by Close.
	closed bool
	// reopenable is set by a Close that left the log's files exactly as
	// its state describes them (reopen.go); spent is set once a warm
	// reopen took its state over. Both change only at Close and reopen.
	reopenable, spent bool
	// indexedThrough counts the leading segments past which
	// writeDueIndexes looks for sealed segments due an index file (doc.go,
	// "Segment index files"): each before it has one, or its write was
	// tried once. Changed by writeDueIndexes and ApplyRetention (shifts
	// down).
	indexedThrough int
	// uses counts the reads of sealed segments (pageIn), whose
	// segment.lastUse orders them for paging out. Changed by pageIn.
	uses uint64
	// syncing is the sync round in flight (PrepareSync to CompleteSync),
	// or nil. Invariant: while set, Dirty() or CommittedDirty() holds, the
	// files stay open (Close defers closing them to CompleteSync) and no
	// segment is deleted.
	syncing *SyncRound
}

// hwmLag tracks what was appended since the hwm file was last written.
type hwmLag struct {
	// bytes are the frame bytes appended since then.
	bytes int64
	// firstTimeMs and newestTimeMs are the times of the first and the
	// newest record appended since then (meaningless while bytes is 0).
	firstTimeMs, newestTimeMs int64
	// sealed is set when a segment was sealed since then.
	sealed bool
	// asked is set by PersistHWMNextRound.
	asked bool
}

// add accounts one appended frame.
func (h *hwmLag) add(frameBytes, timeMs int64) {
	if h.bytes == 0 {
		h.firstTimeMs, h.newestTimeMs = timeMs, timeMs
	}
	h.bytes += frameBytes
	h.newestTimeMs = max(h.newestTimeMs, timeMs)
}

// due reports whether the next round must write the hwm file.
func (h hwmLag) due(cfg LogConfig) bool {
	return h.sealed || h.asked || h.bytes >= cfg.HWMLagBytesMax || h.newestTimeMs-h.firstTimeMs >= cfg.HWMLagMsMax
}

// PersistHWMNextRound makes the next sync round that carries frames
// write the hwm file, however little it lags. A caller that expects to
// close the log soon asks for it: Close writes a lagging hwm file with an
// fsync of its own, where a round's hwm write shares the round's (one
// group sync for every log of the round, EnableGroupSync).
func (l *Log) PersistHWMNextRound() { l.hwmLag.asked = true }

// ZeroTailBytes is the zero tail of the active segment: the bytes of its
// file past its written frames (doc.go). Of a closed log, what its close
// left.
func (l *Log) ZeroTailBytes() int64 {
	active := l.active()
	return active.fileBytes - active.writtenBytes
}

// LogStats is a snapshot of a log's size and bounds.
type LogStats struct {
	Segments  int
	Oldest    uint64
	HWM       uint64
	Next      uint64
	SizeBytes int64
	// OldestSegmentTimeMs is the newest record time of the oldest segment
	// (the time retention compares), or 0 if that segment has no record.
	OldestSegmentTimeMs int64
	// ZeroTailBytes is the zero tail of the active segment: disk the log
	// holds written ahead of its frames (doc.go). Of a closed log, the
	// tail its close left.
	ZeroTailBytes int64
}

// OpenLog opens the partition log in dir, creating dir if it is missing,
// and recovers it (see doc.go). The Recovery describes what was found.
func OpenLog(fs FS, dir string, cfg LogConfig) (*Log, Recovery, error) {
	return openLog(fs, dir, cfg, nil, nil)
}

// OpenLogReusing is OpenLog with recovery's read window kept in *buffer
// between calls (recoverLog): a caller that recovers many logs one after
// another, as the simulator's state checker does, allocates the window
// (up to 2×FrameBytesMax) once instead of at each open. buffer must not
// be shared by two recoveries at once.
func OpenLogReusing(fs FS, dir string, cfg LogConfig, buffer *[]byte) (*Log, Recovery, error) {
	return openLog(fs, dir, cfg, buffer, nil)
}

// openLog is OpenLog with recovery's reusable window buffer (recoverLog)
// and the directories a Store knows it made durable (ensureDirKnown; nil:
// none).
func openLog(fs FS, dir string, cfg LogConfig, buffer *[]byte, known map[string]struct{}) (*Log, Recovery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, Recovery{}, err
	}
	if err := ensureDirKnown(fs, dir, known); err != nil {
		return nil, Recovery{}, err
	}
	return recoverLog(fs, dir, cfg, buffer)
}

// ensureDir creates dir and its missing ancestors, and makes the entry of
// dir and of each ancestor durable by syncing its parent: every one, at
// every call. An earlier call (or process) may have created them and
// failed, or crashed, before one of those syncs; a retry that synced
// only what it created itself, or only dir's parent, would leave an
// ancestor's entry to a crash, and every file later made durable below it
// with it.
func ensureDir(fs FS, dir string) error { return ensureDirKnown(fs, dir, nil) }

// ensureDirKnown is ensureDir that skips the sync of an existing
// directory's entry when known holds it, and adds to known every
// directory whose entry it made durable. known lists what this process
// made durable (a Store's, see Store.ensured): an entry made durable
// stays so, and a directory removed and made again is made durable by
// whatever made it (this function, which finds it missing, or an
// install's rename and the sync of its parent), so a known directory
// that exists needs no sync. A nil known syncs every ancestor, as
// ensureDir must for what another process may have left.
//
// The directories this call finds missing leave known before it makes
// them: known may still hold them from before a removal, and a sync that
// fails part way must leave every one it made unknown, or the next call,
// finding them present, would skip their syncs (nightly seed 7562330).
func ensureDirKnown(fs FS, dir string, known map[string]struct{}) error {
	missing, err := missingDirs(fs, dir)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		for _, made := range missing {
			delete(known, made)
		}
		if err := fs.MkdirAll(dir); err != nil {
			return err
		}
	}
	for current := dir; current != "." && current != "/"; current = parentDir(current) {
		if _, ok := known[current]; ok {
			continue
		}
		if err := fs.SyncDir(parentDir(current)); err != nil {
			return err
		}
		if known != nil {
			known[current] = struct{}{}
		}
	}
	return nil
}

// missingDirs returns dir and those of its ancestors that do not exist,
// innermost first.
func missingDirs(fs FS, dir string) ([]string, error) {
	var missing []string
	for current := dir; current != "." && current != "/"; current = parentDir(current) {
		info, err := fs.Stat(current)
		if err == nil && !info.IsDir {
			return nil, fmt.Errorf("storage: %s is not a directory: %w", current, ErrExist)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotExist) {
			return nil, err
		}
		missing = append(missing, current)
	}
	return missing, nil
}

// usable returns the error every call of a failed or closed log returns.
func (l *Log) usable() error {
	if l.failure != nil {
		return l.failure
	}
	if l.closed {
		return ErrClosed
	}
	return nil
}

// fail latches the log into the failed state with the first error and
// returns the latched error.
func (l *Log) fail(err error) error {
	assert(err != nil, "failing log %s with a nil error", l.dir)
	if l.failure == nil {
		l.failure = fmt.Errorf("%w: %s: %w", ErrLogFailed, l.dir, err)
	}
	return l.failure
}

// active is the segment Append writes.
func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// Dir is the directory of the log.
func (l *Log) Dir() string { return l.dir }

// HWM is the visible high watermark: offsets in [Oldest(), HWM()) are
// readable.
func (l *Log) HWM() uint64 { return l.hwm }

// Next is the offset the next Append gets.
func (l *Log) Next() uint64 { return l.next }

// Oldest is the first retained offset.
func (l *Log) Oldest() uint64 { return l.segments[0].base }

// Dirty reports appended records not yet made durable and visible by a
// completed sync round (those of a round in flight included).
func (l *Log) Dirty() bool { return l.next > l.hwm }

// Append adds r at offset Next() to the active segment, rolling to a new
// segment first if the frame would take the active one past SegmentBytes.
// The record is neither durable nor visible until a Sync round covers it.
func (l *Log) Append(r Record) (uint64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	if recordBytes(r) > l.cfg.RecordBytesMax {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, recordBytes(r), l.cfg.RecordBytesMax)
	}
	if r.Origin != nil {
		if err := checkOrigin(*r.Origin); err != nil {
			return 0, err
		}
	}
	frameBytes := int64(frameHeaderBytes + envelopeBytes(r))
	if l.rollBeforeAppend || l.active().sizeBytes > 0 && l.active().sizeBytes+frameBytes > l.cfg.SegmentBytes {
		if err := l.roll(); err != nil {
			return 0, err
		}
	}
	offset := l.next
	l.appendFrame(offset, r, frameBytes)
	if chaos.Planted(chaos.BugVisibleBeforeDurable) {
		return offset, l.plantedVisibleBeforeDurable()
	}
	if len(l.pending) >= l.cfg.WriteBufferBytesMax {
		return offset, l.flushPending()
	}
	return offset, nil
}

// extendZeroTail tops up the zero tail of the active segment s when less
// than half a step (fs.go) is left ahead of its frames: zeros written now
// become durable with the round's fsync, so the next rounds' frames
// overwrite blocks that are already allocated, written and synced, and
// their fsyncs commit no size change or extent conversion. The writes go
// past the logical end only, never under a frame.
func (l *Log) extendZeroTail(s *segment) error {
	step := min(max(s.writtenBytes-s.openedBytes, zeroTailStepMinBytes), zeroTailStepMaxBytes)
	if s.fileBytes-s.writtenBytes >= step/2 {
		return nil
	}
	return s.zeroUpTo(min(s.writtenBytes+step, l.cfg.SegmentBytes))
}

// zeroUpTo writes zeros past the end of s's file up to target, raising
// fileBytes; nothing when the file already reaches it.
func (s *segment) zeroUpTo(target int64) error {
	for s.fileBytes < target {
		piece := zeroBlock[:min(target-s.fileBytes, int64(len(zeroBlock)))]
		n, err := s.file.WriteAt(piece, s.fileBytes)
		if err != nil {
			return err
		}
		assert(n == len(piece), "short zero write without error: %d of %d bytes", n, len(piece))
		s.fileBytes += int64(n)
	}
	return nil
}

// cutZeroTail truncates the zero tail of s, which is being sealed: sealed
// segments end at their last frame. The cut becomes durable with the next
// fsync of s, if any; until then recovery cuts a zero tail it finds.
func (l *Log) cutZeroTail(s *segment) error { return l.trimZeroTail(s, 0) }

// trimZeroTail truncates the zero tail of s to at most keep bytes. Like a
// cut, the trim becomes durable with the next fsync of s, if any; until
// then recovery takes the longer tail it finds for the zero tail it is.
func (l *Log) trimZeroTail(s *segment, keep int64) error {
	if s.fileBytes-s.writtenBytes <= keep {
		return nil
	}
	if err := s.file.Truncate(s.writtenBytes + keep); err != nil {
		return err
	}
	s.fileBytes = s.writtenBytes + keep
	return nil
}

// sealActive cuts the zero tail of the active segment that a roll seals.
// With index files, the cut size must be durable before the segment's
// index is written (an index names its segment's size, and recovery
// refuses one that differs): a segment whose frames a round synced
// already, or that the round in flight covers whole (its fsync may have
// run before the cut), is in no later round, so its cut is fsynced here,
// one fsync a roll; one with frames no round covers is synced, cut
// included, by the next round.
func (l *Log) sealActive() error {
	s := l.active()
	cut := s.fileBytes > s.writtenBytes
	if err := l.cutZeroTail(s); err != nil {
		return err
	}
	if cut && l.cfg.SegmentIndexFiles && l.syncedByRounds(s) {
		return s.file.Sync()
	}
	return nil
}

// syncedByRounds reports whether every frame of s is synced, or will be
// once the round in flight completes: no later round syncs s.
func (l *Log) syncedByRounds(s *segment) bool {
	if s.syncedBytes == s.sizeBytes {
		return true
	}
	if r := l.syncing; r != nil {
		for i, captured := range r.segments {
			if captured == s {
				return r.syncedBytes[i] == s.sizeBytes
			}
		}
	}
	return false
}

// plantedVisibleBeforeDurable is planted bug BugVisibleBeforeDurable: the
// record becomes readable before any fsync.
func (l *Log) plantedVisibleBeforeDurable() error {
	err := l.flushPending()
	l.hwm = l.next
	return err
}

// appendFrame encodes the frame of r into the pending buffer and indexes it.
func (l *Log) appendFrame(offset uint64, r Record, frameBytes int64) {
	active := l.active()
	start := len(l.pending)
	l.pending = encodeRecordFrame(l.pending, offset, r)
	if int64(len(l.pending)-start) != frameBytes { // not assert(...): its arguments would be boxed on every append
		assert(false, "frame of offset %d is %d bytes, expected %d", offset, len(l.pending)-start, frameBytes)
	}
	if invariantsEnabled {
		checkEncodedFrame(l.pending[start:], offset, r, l.cfg.FrameBytesMax)
	}
	active.index(active.sizeBytes, r.TimeMs)
	active.sizeBytes += frameBytes
	l.hwmLag.add(frameBytes, r.TimeMs)
	l.next++
}

// roll seals the active segment and starts a new one at Next().
func (l *Log) roll() error {
	if err := l.flushPending(); err != nil {
		return err
	}
	if err := l.sealActive(); err != nil {
		return l.fail(err)
	}
	file, err := l.fs.Create(segmentPath(l.dir, l.next))
	if err != nil {
		// Nothing changed but the tail cut: the append is refused and the
		// log stays as it was (a file Create failed to make is not there).
		return errors.Join(ErrSegmentNotCreated, err)
	}
	l.segments = append(l.segments, newSegment(l.next, file))
	l.directoryDirty = true
	l.hwmLag.sealed = true
	l.rollBeforeAppend = false
	return nil
}

// flushPending writes the pending frames to the active segment file.
func (l *Log) flushPending() error {
	if len(l.pending) == 0 {
		return nil
	}
	active := l.active()
	n, err := active.file.WriteAt(l.pending, active.writtenBytes) // over the zero tail, if any
	if err != nil {
		return l.fail(err)
	}
	assert(n == len(l.pending), "short segment write without error: %d of %d bytes", n, len(l.pending))
	active.writtenBytes += int64(n)
	active.fileBytes = max(active.fileBytes, active.writtenBytes)
	assert(active.writtenBytes == active.sizeBytes, "segment %d written %d bytes, size %d", active.base, active.writtenBytes, active.sizeBytes)
	l.pending = l.pending[:0]
	if cap(l.pending) > l.cfg.WriteBufferBytesMax {
		l.pending = nil // grown past the buffer by a large frame: an idle log does not keep it
	}
	return nil
}

// Sync runs one whole sync round on the caller's goroutine (PrepareSync,
// Run, CompleteSync): write the pending frames, fsync every segment
// written since the last round (and the directory if a segment was
// created), THEN, when the lag bounds say so, persist Next() in the hwm
// file, THEN make it the visible HWM. On error the log is failed (see
// ErrLogFailed).
func (l *Log) Sync() error {
	round := l.PrepareSync(true, false)
	if round == nil {
		return l.usable()
	}
	return l.CompleteSync(round, round.Run())
}

// checkInvariants cross-checks the log's fields against each other and
// the index (the costly tier, run when invariantsEnabled).
func (l *Log) checkInvariants() {
	assert(len(l.segments) > 0, "log %s has no segment", l.dir)
	assert(l.next == l.active().indexedEnd(), "next %d, active segment ends at %d", l.next, l.active().indexedEnd())
	assert(l.Oldest() <= l.committed && l.committed <= l.hwm && l.hwm <= l.next,
		"bounds out of order: oldest %d, committed %d, hwm %d, next %d", l.Oldest(), l.committed, l.hwm, l.next)
	assert(l.hwmFile.value <= l.hwm, "persisted hwm %d above the visible %d", l.hwmFile.value, l.hwm)
	for i, s := range l.segments {
		assert(s.syncedBytes <= s.writtenBytes && s.writtenBytes <= s.sizeBytes && s.writtenBytes <= s.fileBytes,
			"segment %d sizes: synced %d, written %d, size %d, file %d", s.base, s.syncedBytes, s.writtenBytes, s.sizeBytes, s.fileBytes)
		assert(i == len(l.segments)-1 || s.fileBytes == s.writtenBytes, "sealed segment %d keeps a zero tail", s.base)
		assert(i == 0 || l.segments[i-1].indexedEnd() <= s.base, "segment %d overlaps the one before", s.base)
		assert(i >= l.unsyncedFrom || s.syncedBytes == s.sizeBytes, "segment %d before unsyncedFrom is not durable", s.base)
		assert(s.file != nil || (i < len(l.segments)-1 && s.syncedBytes == s.sizeBytes), "segment %d closed while active or unsynced", s.base)
		assert(!s.keptOpen || s.file != nil, "segment %d kept open has no file", s.base)
		assert(!s.paged || (i < len(l.segments)-1 && s.indexFile && s.corruptCount == 0 && s.positions == nil),
			"segment %d paged out while active, without its index file, with corrupt offsets or with its positions", s.base)
	}
	assert(len(l.sealedOpen) <= sealedFilesOpenMax, "%d sealed segment files open, bound %d", len(l.sealedOpen), sealedFilesOpenMax)
	assert(int64(len(l.pending)) == l.active().sizeBytes-l.active().writtenBytes,
		"pending %d bytes, active segment has %d unwritten", len(l.pending), l.active().sizeBytes-l.active().writtenBytes)
}

// persistHWM writes value, whose frames are durable, in the hwm file.
func (l *Log) persistHWM(value uint64) error {
	if err := l.hwmFile.write(value); err != nil {
		return err
	}
	l.hwmLag = hwmLag{}
	return nil
}

// Read returns the record at offset, verified (frame CRC, offset and
// envelope) on every call. It returns ErrBeyondHWM at or above the HWM,
// ErrAgedOut below Oldest and ErrCorrupt for a frame recovery skipped or
// that fails verification now. The record's slices are freshly allocated.
func (l *Log) Read(offset uint64) (Record, error) {
	if err := l.usable(); err != nil {
		return Record{}, err
	}
	if offset >= l.hwm {
		return Record{}, fmt.Errorf("%w: offset %d, hwm %d", ErrBeyondHWM, offset, l.hwm)
	}
	if offset < l.Oldest() {
		return Record{}, fmt.Errorf("%w: offset %d, oldest %d", ErrAgedOut, offset, l.Oldest())
	}
	i := l.segmentIndexOf(offset)
	s := l.segments[i]
	if i < len(l.segments)-1 {
		if err := l.pageIn(i); err != nil {
			return Record{}, err
		}
	}
	position, length, ok := s.frameBounds(offset, l.cfg.FrameBytesMax)
	if !ok {
		return Record{}, fmt.Errorf("%w: offset %d was skipped by recovery", ErrCorrupt, offset)
	}
	if position+int64(length) > s.writtenBytes { // guarded: the arguments would allocate on every read
		assert(false, "visible offset %d reaches byte %d of segment %d, only %d written",
			offset, position+int64(length), s.base, s.writtenBytes)
	}
	buffer := make([]byte, length)
	file, err := l.segmentFile(s)
	if err != nil {
		return Record{}, err
	}
	if err := readFull(file, buffer, position); err != nil {
		return Record{}, err
	}
	return decodeStoredRecord(buffer, offset, l.cfg.FrameBytesMax)
}

// decodeStoredRecord verifies the frame read for offset and decodes it.
func decodeStoredRecord(buffer []byte, offset uint64, frameBytesMax int) (Record, error) {
	frameOffset, envelope, _, err := DecodeFrame(buffer, frameBytesMax)
	if err != nil {
		return Record{}, fmt.Errorf("%w: offset %d: %w", ErrCorrupt, offset, err)
	}
	if frameOffset != offset {
		return Record{}, fmt.Errorf("%w: frame at the position of offset %d holds offset %d", ErrCorrupt, offset, frameOffset)
	}
	return DecodeRecord(envelope)
}

// segmentIndexOf returns the index in l.segments of the segment holding
// offset, which must be retained.
func (l *Log) segmentIndexOf(offset uint64) int {
	index := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > offset }) - 1
	assert(index >= 0, "offset %d below the oldest segment %d", offset, l.segments[0].base)
	return index
}

// segmentOf returns the segment holding offset, which must be retained.
func (l *Log) segmentOf(offset uint64) *segment { return l.segments[l.segmentIndexOf(offset)] }

// Committed is the in-memory committed consumer offset.
func (l *Log) Committed() uint64 { return l.committed }

// SetCommitted moves the committed consumer offset forward, in memory
// only. It must not go backwards nor past the HWM.
func (l *Log) SetCommitted(offset uint64) {
	if offset < l.committed || offset > l.hwm { // guarded: the arguments would allocate on every ack
		assert(offset >= l.committed, "committed offset of %s moving back from %d to %d", l.dir, l.committed, offset)
		assert(offset <= l.hwm, "committed offset %d of %s above hwm %d", offset, l.dir, l.hwm)
	}
	l.committed = offset
}

// CommittedDirty reports a committed offset not yet made durable.
func (l *Log) CommittedDirty() bool { return l.committed != l.committedSynced }

// SyncCommitted persists the committed offset (in place, in the file the
// last round did not write: offset.go). On error the log is failed, but
// for a disk with no room for the write (SyncRound.CommittedRefused):
// that error is returned, the log stays usable and the offset dirty.
func (l *Log) SyncCommitted() error {
	round := l.PrepareSync(false, true)
	if round == nil {
		return l.usable()
	}
	if err := l.CompleteSync(round, round.Run()); err != nil {
		return err
	}
	return round.CommittedRefused()
}

// Stats returns a snapshot of the log's bounds and size.
func (l *Log) Stats() LogStats {
	stats := LogStats{Segments: len(l.segments), Oldest: l.Oldest(), HWM: l.hwm, Next: l.next, ZeroTailBytes: l.ZeroTailBytes()}
	for _, s := range l.segments {
		stats.SizeBytes += s.sizeBytes
	}
	if l.segments[0].newestTimeMs != math.MinInt64 {
		stats.OldestSegmentTimeMs = l.segments[0].newestTimeMs
	}
	return stats
}

// Close writes the visible HWM in the hwm file if it lags (a healthy log
// with no round in flight only), then closes every file of the log; with
// a round in flight, CompleteSync closes them once it ends. Frames
// appended since the last Sync are dropped (they were never
// acknowledged). Later calls return ErrClosed, or the failure of a failed
// log.
func (l *Log) Close() error {
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	if l.syncing != nil {
		return nil
	}
	var errs []error
	if l.failure == nil && l.hwmFile.value < l.hwm {
		errs = append(errs, l.persistHWM(l.hwm))
	}
	if l.failure == nil && errors.Join(errs...) == nil {
		l.writeDueIndexes()
	}
	if l.failure == nil {
		// A closed log keeps at most zeroTailKeptBytes of its zero tail
		// (doc.go): reopened, its first rounds write over those zeros, so
		// their fsyncs commit no block allocation, where cutting it all
		// made every reopen's round write a new tail and journal it.
		errs = append(errs, l.trimZeroTail(l.active(), zeroTailKeptBytes))
	}
	settled := l.settledForReopen()
	err := errors.Join(append(errs, l.closeFiles())...)
	l.reopenable = settled && err == nil
	l.pending = nil // dropped frames; a closed log (kept, say) holds no write buffer
	return err
}

// closeFiles closes the segment files and the hwm file.
func (l *Log) closeFiles() error {
	var errs []error
	for _, s := range l.segments {
		if s.file != nil {
			errs = append(errs, s.file.Close())
		}
	}
	l.sealedOpen = nil
	errs = append(errs, l.hwmFile.file.Close())
	return errors.Join(errs...)
}

// segmentFile returns the file of segment s, reopening that of a sealed
// segment the log closed (past sealedFilesOpenMax, the least recently
// read one's closes). Only reads use it: a closed file is fully synced.
func (l *Log) segmentFile(s *segment) (File, error) {
	if s.file != nil {
		l.readFrom(s)
		return s.file, nil
	}
	chaos.Reached(chaos.MarkStorageSegmentReopened)
	file, err := l.fs.Open(segmentPath(l.dir, s.base))
	if err != nil {
		return nil, err
	}
	s.file = file
	l.keepOpen(s)
	return file, nil
}

// readFrom marks a sealed segment kept open as the most recently read.
func (l *Log) readFrom(s *segment) {
	if !s.keptOpen || l.sealedOpen[len(l.sealedOpen)-1] == s {
		return
	}
	index := slices.Index(l.sealedOpen, s)
	l.sealedOpen = append(slices.Delete(l.sealedOpen, index, index+1), s)
}

// keepOpen adds a sealed, synced segment with an open file to
// sealedOpen, closing the least recently read past the bound.
func (l *Log) keepOpen(s *segment) {
	assert(s.syncedBytes == s.sizeBytes && s != l.active(), "keeping open segment %d of %s, active or unsynced", s.base, l.dir)
	s.keptOpen = true
	l.sealedOpen = append(l.sealedOpen, s)
	for len(l.sealedOpen) > sealedFilesOpenMax {
		oldest := l.sealedOpen[0]
		l.sealedOpen = l.sealedOpen[1:]
		oldest.keptOpen = false
		_ = oldest.file.Close() // only read, and every byte synced: its close loses nothing
		oldest.file = nil
	}
}

// releaseSealedFiles bounds the open files of sealed segments once they
// are synced: after a completed round and after recovery. Those not yet
// in sealedOpen are the newest sealed ones (segments seal in order, and
// a round syncs every segment it finds unsynced).
func (l *Log) releaseSealedFiles() {
	start := len(l.segments) - 1
	for start > 0 {
		s := l.segments[start-1]
		if s.file == nil || s.keptOpen || s.syncedBytes != s.sizeBytes {
			break
		}
		start--
	}
	for _, s := range l.segments[start : len(l.segments)-1] {
		l.keepOpen(s)
	}
}
