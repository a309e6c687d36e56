package storage

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// SegmentInfo describes a segment for the move protocol.
type SegmentInfo struct {
	// Base is the segment's first offset.
	Base uint64
	// Size is the number of bytes, from the start of the file, that hold
	// only frames of offsets below the HWM: durable, and a frame boundary.
	Size int64
	// Sealed: Size will not change any more (a later segment exists and
	// starts at or below the HWM).
	Sealed bool
}

// Segments lists the segments a move must copy: the first retained one
// and every one starting below the HWM, in offset order.
func (l *Log) Segments() []SegmentInfo {
	var infos []SegmentInfo
	for i, s := range l.segments {
		if i > 0 && s.base >= l.hwm {
			break
		}
		sealed := i+1 < len(l.segments) && l.segments[i+1].base <= l.hwm
		size := s.durableBytesBelow(l.hwm)
		assert(size <= s.syncedBytes, "segment %d reports %d bytes below hwm %d, only %d durable", s.base, size, l.hwm, s.syncedBytes)
		infos = append(infos, SegmentInfo{Base: s.base, Size: size, Sealed: sealed})
	}
	return infos
}

// ReadChunk copies into buf the bytes of segment base at position, never
// past the segment's SegmentInfo.Size and at most ChunkBytesMax. It
// returns 0 at the end. The bytes are raw frames; the destination
// verifies them all when it recovers the staged copy (VerifyStaged).
func (l *Log) ReadChunk(base uint64, position int64, buf []byte) (int, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	s, ok := l.segmentByBase(base)
	if !ok {
		return 0, fmt.Errorf("%w: base %d in %s", ErrNoSegment, base, l.dir)
	}
	size := s.durableBytesBelow(l.hwm)
	if position < 0 || position > size {
		return 0, fmt.Errorf("%w: position %d, segment %d has %d readable bytes", ErrChunkPosition, position, base, size)
	}
	n := int(min(int64(len(buf)), int64(l.cfg.ChunkBytesMax), size-position))
	file, err := l.segmentFile(s)
	if err != nil {
		return 0, err
	}
	if err := readFull(file, buf[:n], position); err != nil {
		return 0, err
	}
	return n, nil
}

// segmentByBase finds the retained segment starting at base.
func (l *Log) segmentByBase(base uint64) (*segment, bool) {
	index := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base >= base })
	if index == len(l.segments) || l.segments[index].base != base {
		return nil, false
	}
	return l.segments[index], true
}

// StagedCopy is a partition directory being built by a move on the
// destination: segments copied chunk by chunk, then the source's HWM and
// committed offset. It is not a Log; VerifyStaged recovers it as one.
type StagedCopy struct {
	// fs, dir and cfg are fixed at CreateStaged.
	fs  FS
	dir string
	cfg LogConfig
	// segments are the staged segment files in base order. Changed by
	// WriteChunk (append-only per segment) and Sync.
	segments []*stagedSegment
	// hwm and committed are the state set by SetState; stateDirty until a
	// Sync wrote them. Invariant: committed <= hwm.
	hwm, committed uint64
	stateDirty     bool
	// segmentCreated: a file was created since the last Sync.
	segmentCreated bool
	// failure latches the first I/O error; closed is set by Close.
	failure error
	closed  bool
}

// stagedSegment is one segment file of a staged copy.
type stagedSegment struct {
	base uint64
	// file is the open segment file; nil once it is not among the newest
	// stagedFilesOpenMax and either a later segment was created
	// (closeOlderFiles) or Sync made its every byte durable (segmentFor
	// reopens it for a chunk that extends it, syncStaged to fsync it).
	file File
	// sizeBytes is what WriteChunk appended; syncedBytes what Sync made
	// durable. Invariant: syncedBytes <= sizeBytes.
	sizeBytes, syncedBytes int64
}

// CreateStaged starts an empty staged copy in dir, removing whatever dir
// held before.
func CreateStaged(fs FS, dir string, cfg LogConfig) (*StagedCopy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := fs.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := ensureDir(fs, dir); err != nil {
		return nil, err
	}
	return &StagedCopy{fs: fs, dir: dir, cfg: cfg}, nil
}

// usable returns the error every call of a failed or closed copy returns.
func (s *StagedCopy) usable() error {
	if s.failure != nil {
		return s.failure
	}
	if s.closed {
		return ErrClosed
	}
	return nil
}

// fail latches the first I/O error of the copy.
func (s *StagedCopy) fail(err error) error {
	if s.failure == nil {
		s.failure = fmt.Errorf("%w: staged %s: %w", ErrLogFailed, s.dir, err)
	}
	return s.failure
}

// WriteChunk appends data to the staged segment base. position must equal
// the staged segment's current size (0 creates the segment; an empty chunk
// at 0 creates an empty one), else ErrChunkPosition.
func (s *StagedCopy) WriteChunk(base uint64, position int64, data []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	if len(data) > s.cfg.ChunkBytesMax {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrChunkTooLarge, len(data), s.cfg.ChunkBytesMax)
	}
	staged, err := s.segmentFor(base, position)
	if err != nil {
		return err
	}
	if staged.sizeBytes+int64(len(data)) > stagedSegmentBytesMax {
		// No segment of a log grows past this (its roll comes first); its
		// positions must stay below what a segment's index can hold.
		return fmt.Errorf("%w: staged segment %d would grow past %d bytes", ErrChunkTooLarge, base, int64(stagedSegmentBytesMax))
	}
	n, err := staged.file.WriteAt(data, staged.sizeBytes)
	if err != nil {
		return s.fail(err)
	}
	assert(n == len(data), "short staged write without error: %d of %d bytes", n, len(data))
	staged.sizeBytes += int64(n)
	return nil
}

// segmentFor returns the staged segment a chunk at position extends,
// creating it for a chunk at position 0.
func (s *StagedCopy) segmentFor(base uint64, position int64) (*stagedSegment, error) {
	index := sort.Search(len(s.segments), func(i int) bool { return s.segments[i].base >= base })
	if index < len(s.segments) && s.segments[index].base == base {
		staged := s.segments[index]
		if position != staged.sizeBytes {
			return nil, fmt.Errorf("%w: chunk at %d, staged segment %d has %d bytes", ErrChunkPosition, position, base, staged.sizeBytes)
		}
		if staged.file == nil { // closed by a Sync: the source's segment grew since
			file, err := s.fs.Open(segmentPath(s.dir, base))
			if err != nil {
				return nil, s.fail(err)
			}
			staged.file = file
		}
		return staged, nil
	}
	if position != 0 {
		return nil, fmt.Errorf("%w: first chunk of segment %d at %d", ErrChunkPosition, base, position)
	}
	file, err := s.fs.Create(segmentPath(s.dir, base))
	if err != nil {
		return nil, s.fail(err)
	}
	staged := &stagedSegment{base: base, file: file}
	s.segments = append(s.segments[:index], append([]*stagedSegment{staged}, s.segments[index:]...)...)
	s.segmentCreated = true
	if err := s.closeOlderFiles(staged); err != nil {
		return nil, s.fail(err)
	}
	return staged, nil
}

// closeOlderFiles closes the files of the staged segments older than the
// newest stagedFilesOpenMax, synced or not, but for keep. A chunk that
// starts a segment ends the copy's writes into those before it (a
// catch-up pass that extends one reopens it), and the node syncs a copy
// once, after its last chunk: holding their files until then held a
// descriptor per segment, a thousand for a partition of 64 GiB (storage
// review). syncStaged reopens such a segment to fsync it: an fsync makes
// durable what any descriptor of the file wrote, and (Linux 4.16 and
// later) reports a writeback error no descriptor reported yet.
func (s *StagedCopy) closeOlderFiles(keep *stagedSegment) error {
	for _, staged := range s.segments[:max(0, len(s.segments)-stagedFilesOpenMax)] {
		if staged.file == nil || staged == keep {
			continue
		}
		if err := staged.file.Close(); err != nil {
			return err
		}
		staged.file = nil
	}
	return nil
}

// StagedSize is the number of bytes staged for segment base (0 if none):
// where the next chunk of it must start.
func (s *StagedCopy) StagedSize(base uint64) int64 {
	for _, staged := range s.segments {
		if staged.base == base {
			return staged.sizeBytes
		}
	}
	return 0
}

// SetState records the source's HWM and committed consumer offset; Sync
// writes them.
func (s *StagedCopy) SetState(hwm, committed uint64) error {
	if err := s.usable(); err != nil {
		return err
	}
	if committed > hwm {
		return fmt.Errorf("%w: committed %d above hwm %d", ErrStagedState, committed, hwm)
	}
	s.hwm, s.committed, s.stateDirty = hwm, committed, true
	return nil
}

// Sync makes the staged segments durable, then the HWM and committed
// offset (if set), then the directory. On error the copy is failed.
func (s *StagedCopy) Sync() error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.syncSegments(); err != nil {
		return s.fail(err)
	}
	if err := s.writeState(); err != nil {
		return s.fail(err)
	}
	if !s.segmentCreated {
		return nil
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return s.fail(err)
	}
	s.segmentCreated = false
	return nil
}

// syncSegments fsyncs every staged segment with unsynced bytes.
func (s *StagedCopy) syncSegments() error {
	for _, staged := range s.segments {
		if staged.syncedBytes == staged.sizeBytes {
			continue
		}
		if err := s.syncStaged(staged); err != nil {
			return err
		}
		staged.syncedBytes = staged.sizeBytes
	}
	return s.releaseFiles()
}

// syncStaged fsyncs one staged segment, through a descriptor opened for
// it when closeOlderFiles closed its own.
func (s *StagedCopy) syncStaged(staged *stagedSegment) error {
	if staged.file != nil {
		return staged.file.Sync()
	}
	file, err := s.fs.Open(segmentPath(s.dir, staged.base))
	if err != nil {
		return err
	}
	return errors.Join(file.Sync(), file.Close())
}

// releaseFiles closes the files of the staged segments whose every byte
// is durable, but for the newest stagedFilesOpenMax (a catch-up pass
// extends those): a copy of a partition of thousands of segments held a
// descriptor for each until its install (storage review).
func (s *StagedCopy) releaseFiles() error {
	for _, staged := range s.segments[:max(0, len(s.segments)-stagedFilesOpenMax)] {
		if staged.file == nil || staged.syncedBytes != staged.sizeBytes {
			continue
		}
		if err := staged.file.Close(); err != nil {
			return err
		}
		staged.file = nil
	}
	return nil
}

// writeState persists the state set by SetState, if it changed.
func (s *StagedCopy) writeState() error {
	if !s.stateDirty {
		return nil
	}
	if err := writeHWMFile(s.fs, s.dir, s.hwm); err != nil {
		return err
	}
	if err := writeFreshCommittedFiles(s.fs, s.dir, s.committed); err != nil {
		return err
	}
	s.stateDirty = false
	return nil
}

// Close closes the staged files. It does not sync.
func (s *StagedCopy) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	var errs []error
	for _, staged := range s.segments {
		if staged.file != nil {
			errs = append(errs, staged.file.Close())
		}
	}
	return errors.Join(errs...)
}

// VerifyStaged recovers the staged copy in dir as a log and checks that it
// reaches minHWM with no record lost below its HWM and no corrupt record
// but exactly those of allowed (the source's, which the copy carries
// over: checkCorruption): otherwise the error wraps ErrStagedBehind (and
// ErrCorrupt for corruption).
func VerifyStaged(fs FS, dir string, cfg LogConfig, minHWM uint64, allowed Corruption) (Recovery, error) {
	log, recovery, err := OpenLog(fs, dir, cfg)
	if err != nil {
		return Recovery{}, err
	}
	if err := log.Close(); err != nil {
		return recovery, err
	}
	return recovery, checkRecovered(recovery, minHWM, allowed)
}

// OpenVerified opens the log in dir (a copy a move installed) and checks,
// as VerifyStaged does, that it recovers to at least minHWM with nothing
// lost below its HWM and no corruption but allowed; on success the log
// stays open for the caller (Store.Adopt), so the copy is read once, not
// twice.
func OpenVerified(fs FS, dir string, cfg LogConfig, minHWM uint64, allowed Corruption) (*Log, Recovery, error) {
	log, recovery, err := OpenLog(fs, dir, cfg)
	if err != nil {
		return nil, Recovery{}, err
	}
	if err := checkRecovered(recovery, minHWM, allowed); err != nil {
		return nil, recovery, errors.Join(err, log.Close())
	}
	return log, recovery, nil
}

// checkRecovered is the verdict of VerifyStaged and OpenVerified, the one
// place the rule for a copy's corruption is applied.
func checkRecovered(recovery Recovery, minHWM uint64, allowed Corruption) error {
	if recovery.HWM < minHWM || recovery.LostAcknowledged > 0 {
		return fmt.Errorf("%w: recovered hwm %d, need %d, lost %d", ErrStagedBehind, recovery.HWM, minHWM, recovery.LostAcknowledged)
	}
	return checkCorruption(recovery, allowed)
}

// InstallStaged makes the staged copy the partition directory finalDir:
// if finalDir exists it is renamed aside, the staged directory is renamed
// to finalDir and the parents are synced. The directory set aside stays
// until the caller has verified the installed copy: CommitInstall then
// marks it replaced (DropReplaced removes it), UndoInstall puts it back.
// A copy that fails its verification must never cost the copy it
// replaced, which may be an earlier verified install of the same move
// whose flip is still on its way. On an error nothing is installed and
// finalDir is what it was. A crash in between leaves finalDir with its
// aside (or replaced) copy, or the aside copy alone; RepairInstall puts
// that right. The caller closes any open Log of finalDir first.
func InstallStaged(fs FS, stagedDir, finalDir string) error {
	aside := finalDir + asideSuffix
	// An earlier install's leftovers (an undo that failed part-way) are
	// put right first: an aside copy there is the one to keep.
	if err := RepairInstall(fs, finalDir); err != nil {
		return err
	}
	if err := ensureDir(fs, parentDir(finalDir)); err != nil {
		return err
	}
	if err := renameIfExists(fs, finalDir, aside); err != nil {
		return err
	}
	if err := fs.Rename(stagedDir, finalDir); err != nil {
		return errors.Join(err, renameIfExists(fs, aside, finalDir))
	}
	if err := syncParents(fs, stagedDir, finalDir); err != nil {
		return errors.Join(err, UndoInstall(fs, finalDir))
	}
	return nil
}

// CommitInstall records, durably, that the copy InstallStaged installed
// at finalDir verified: the directory it set aside is renamed to its
// replaced name, which RepairInstall removes, where it would restore an
// aside one. Until it returns, a crash puts the replaced copy back. A
// commit that fails leaves the aside copy under its aside name (the
// rename is undone when the sync after it fails), so the caller's
// UndoInstall restores it rather than removing it as replaced.
func CommitInstall(fs FS, finalDir string) error {
	if err := renameIfExists(fs, finalDir+asideSuffix, finalDir+replacedSuffix); err != nil {
		return err
	}
	if err := fs.SyncDir(parentDir(finalDir)); err != nil {
		return errors.Join(err, renameIfExists(fs, finalDir+replacedSuffix, finalDir+asideSuffix))
	}
	return nil
}

// DropReplaced removes the directory a committed install replaced.
func DropReplaced(fs FS, finalDir string) error { return DeletePartition(fs, finalDir+replacedSuffix) }

// UndoInstall removes the copy InstallStaged installed at finalDir and
// renames the directory it set aside, if any, back to finalDir.
func UndoInstall(fs FS, finalDir string) error {
	if err := discardInstalled(fs, finalDir); err != nil {
		return err
	}
	return RepairInstall(fs, finalDir)
}

// discardInstalled renames the copy at finalDir to its unverified name,
// which RepairInstall removes: the partition directory's own name is
// never removed while a copy set aside may take its place (a node never
// deletes a partition directory it owns or targets).
func discardInstalled(fs FS, finalDir string) error {
	unverified := finalDir + unverifiedSuffix
	if err := fs.RemoveAll(unverified); err != nil {
		return err
	}
	return renameIfExists(fs, finalDir, unverified)
}

// renameIfExists renames from to to when from exists.
func renameIfExists(fs FS, from, to string) error {
	if _, err := fs.Stat(from); errors.Is(err, ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return fs.Rename(from, to)
}

// syncParents syncs the parent directories of two paths (once if shared).
func syncParents(fs FS, first, second string) error {
	if err := fs.SyncDir(parentDir(second)); err != nil {
		return err
	}
	if parentDir(first) == parentDir(second) {
		return nil
	}
	return fs.SyncDir(parentDir(first))
}

// InstallLeftover reports whether entry, a name in a topic's directory,
// is what an install leaves beside a partition directory (an aside,
// replaced or unverified copy), and names that partition directory: the
// caller runs RepairInstall on it.
func InstallLeftover(entry string) (partitionDir string, ok bool) {
	for _, suffix := range []string{asideSuffix, replacedSuffix, unverifiedSuffix} {
		if partitionDir, ok = strings.CutSuffix(entry, suffix); ok {
			return partitionDir, true
		}
	}
	return "", false
}

// RepairInstall finishes or undoes an install a crash interrupted. An
// aside copy is restored to finalDir, in place of the copy installed
// there if any (that copy never verified: CommitInstall had not renamed
// the aside one), which is renamed unverified first; unverified and
// replaced copies are removed (a replaced one was replaced by a verified
// install). Call it before opening finalDir.
func RepairInstall(fs FS, finalDir string) error {
	aside := finalDir + asideSuffix
	if _, err := fs.Stat(aside); err == nil {
		if err := discardInstalled(fs, finalDir); err != nil {
			return err
		}
		if err := fs.Rename(aside, finalDir); err != nil {
			return err
		}
		if err := fs.SyncDir(parentDir(finalDir)); err != nil {
			return err
		}
	} else if !errors.Is(err, ErrNotExist) {
		return err
	}
	if err := DeletePartition(fs, finalDir+unverifiedSuffix); err != nil {
		return err
	}
	return DeletePartition(fs, finalDir+replacedSuffix)
}
