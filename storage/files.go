package storage

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Names inside a partition directory (docs/operations.md#data-directory).
const (
	segmentSuffix       = ".log"
	segmentDigits       = 20
	hwmFileName         = "hwm"
	committedFileName   = "consumer.offset"
	temporarySuffix     = ".tmp"
	asideSuffix         = ".aside"
	replacedSuffix      = ".replaced"
	unverifiedSuffix    = ".unverified"
	segmentNameBytesLen = segmentDigits + len(segmentSuffix)
)

// TemporarySuffix ends the name of the temporary file through which
// WriteFileAtomic replaces a file: a caller that names files after user
// input keeps their names short enough for it (node's fan-out cursors).
const TemporarySuffix = temporarySuffix

// FileNameBytesMax is the longest file name the file systems a node runs
// on accept (NAME_MAX of ext4, xfs and tmpfs). MemFS refuses longer ones
// as the kernel does (ErrNameTooLong), so that the simulator meets the
// limit production meets.
const FileNameBytesMax = 255

// segmentName is the file name of the segment whose first offset is base:
// 20 zero-padded decimal digits, so names sort in offset order.
func segmentName(base uint64) string {
	return fmt.Sprintf("%0*d%s", segmentDigits, base, segmentSuffix)
}

// parseSegmentName returns the base offset of a segment file name, and
// false for any other name.
func parseSegmentName(name string) (uint64, bool) {
	if len(name) != segmentNameBytesLen || !strings.HasSuffix(name, segmentSuffix) {
		return 0, false
	}
	digits := name[:segmentDigits]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil
}

// HoldsSegments reports whether dir holds a segment file: a log was
// written there. A missing directory holds none.
func HoldsSegments(fs FS, dir string) (bool, error) {
	names, err := fs.List(dir)
	if errors.Is(err, ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(names, func(name string) bool {
		_, segment := parseSegmentName(name)
		return segment
	}), nil
}

// parentDir returns the directory holding name ("." at the root).
func parentDir(name string) string { return path.Dir(name) }

// WriteFileAtomic replaces name with data so that after a crash name holds
// either its old content or all of data: write a temporary file, Sync it,
// Rename it over name, then SyncDir the parent so the rename is durable.
func WriteFileAtomic(fs FS, name string, data []byte) error {
	return WriteFilesAtomic(fs, []NamedData{{Name: name, Data: data}})
}

// NamedData is a file's name and its whole content.
type NamedData struct {
	Name string
	Data []byte
}

// WriteFilesAtomic replaces each file as WriteFileAtomic does, sharing the
// directory syncs: every temporary file is written and synced, then all
// are renamed, then each parent directory is synced once. After a crash
// each file holds its old content or its new one (not necessarily the
// same for all); once it returned, all hold the new.
func WriteFilesAtomic(fs FS, files []NamedData) error {
	return WriteFilesAtomicTogether(fs, eachSyncer{fs}, files, nil)
}

// WriteFilesAtomicTogether replaces each file as WriteFilesAtomic does,
// with one group.SyncGroup for every temporary file (and for alsoSync,
// files the caller wrote and wants durable at the same time) and one for
// the parent directories after the renames. group must sync fs's files.
func WriteFilesAtomicTogether(fs FS, group GroupSyncer, files []NamedData, alsoSync []File) error {
	temporaries, err := writeTemporaries(fs, files)
	if err != nil {
		return err
	}
	return replaceWithTemporaries(fs, group, files, temporaries, alsoSync)
}

// writeTemporaries creates the temporary file of each file and writes its
// data there, without syncing it. On failure it closes those it created
// and returns the error; nothing else was written.
func writeTemporaries(fs FS, files []NamedData) ([]File, error) {
	temporaries := make([]File, 0, len(files))
	for _, named := range files {
		file, err := fs.Create(named.Name + temporarySuffix)
		if err != nil {
			return nil, errors.Join(err, closeEach(temporaries))
		}
		temporaries = append(temporaries, file)
		n, err := file.Write(named.Data)
		if err != nil {
			return nil, errors.Join(err, closeEach(temporaries))
		}
		assert(n == len(named.Data), "short write without error: %d of %d bytes", n, len(named.Data))
	}
	return temporaries, nil
}

// replaceWithTemporaries ends WriteFilesAtomicTogether once the
// temporaries of files are written: one group.SyncGroup for them and
// alsoSync, then the renames, then one for the parent directories. It
// closes the temporaries.
func replaceWithTemporaries(fs FS, group GroupSyncer, files []NamedData, temporaries, alsoSync []File) error {
	if err := group.SyncGroup(slices.Concat(alsoSync, temporaries), nil); err != nil {
		return errors.Join(err, closeEach(temporaries))
	}
	if err := closeEach(temporaries); err != nil {
		return err
	}
	dirs, err := renameTemporaries(fs, files)
	if err != nil || len(dirs) == 0 {
		return err
	}
	return group.SyncGroup(nil, dirs)
}

// closeEach closes each of files and joins their errors.
func closeEach(files []File) error {
	var errs []error
	for _, file := range files {
		errs = append(errs, file.Close())
	}
	return errors.Join(errs...)
}

// renameTemporaries renames each file's temporary over it and returns the
// parent directories, sorted, whose entries changed.
func renameTemporaries(fs FS, files []NamedData) ([]string, error) {
	var dirs []string
	for _, file := range files {
		if err := fs.Rename(file.Name+temporarySuffix, file.Name); err != nil {
			return nil, err
		}
		if dir := parentDir(file.Name); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	return dirs, nil
}

// eachSyncer is the GroupSyncer of an FS that makes each file and
// directory durable on its own (syncEach).
type eachSyncer struct{ fs FS }

func (e eachSyncer) SyncGroup(files []File, dirs []string) error { return syncEach(e.fs, files, dirs) }

// syncEach runs File.Sync of each file, then fs.SyncDir of each
// directory, and stops at the first failure.
func syncEach(fs FS, files []File, dirs []string) error {
	for _, file := range files {
		if err := file.Sync(); err != nil {
			return err
		}
	}
	for _, dir := range dirs {
		if err := fs.SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile returns the whole content of name. Files above readFileBytesMax
// are refused with ErrFileTooLarge (this helper is for small metadata).
func ReadFile(fs FS, name string) ([]byte, error) {
	file, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	data, err := readAll(file)
	return data, errors.Join(err, file.Close())
}

// readAll reads a whole open file, bounded by readFileBytesMax.
func readAll(file File) ([]byte, error) {
	size, err := file.Size()
	if err != nil {
		return nil, err
	}
	if size > readFileBytesMax {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFileTooLarge, size, readFileBytesMax)
	}
	data := make([]byte, size)
	if err := readFull(file, data, 0); err != nil {
		return nil, err
	}
	return data, nil
}

// readFull fills buf from position, treating a short read as an error.
func readFull(file File, buf []byte, position int64) error {
	n, err := file.ReadAt(buf, position)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("storage: read %d of %d bytes at %d: %w", n, len(buf), position, err)
}

// deletingSuffix names a directory DeletePartition renamed aside to
// remove it. A topic's name never holds '~' (node: validTopicName), so
// the aside of a topic's directory is never another topic's.
const deletingSuffix = "~deleting"

// asideName is where DeletePartition renames dir: dir with deletingSuffix,
// or, when that would pass FileNameBytesMax (a topic name of more than 246
// bytes), the name cut short and told apart from the other names cut
// alike by a hash of the whole.
func asideName(dir string) string {
	parent, base := path.Split(dir)
	if len(base)+len(deletingSuffix) <= FileNameBytesMax {
		return dir + deletingSuffix
	}
	hash := fnv.New64a()
	hash.Write([]byte(base))
	tag := fmt.Sprintf("~%016x", hash.Sum64())
	return parent + base[:FileNameBytesMax-len(tag)-len(deletingSuffix)] + tag + deletingSuffix
}

// DeletePartition removes a partition directory (or a topic's) and
// everything in it, and makes the removal durable. The caller closes any
// open Log of dir first (Store.Close). The name goes first, in one rename
// made durable: a removal that stops partway (an I/O error, as
// os.RemoveAll goes on entry by entry, or a crash) never leaves part of
// the directory under its name, where a later open would take what is
// left (its stamp gone before its segments, say) for a directory of its
// own. What a stopped removal leaves aside (DeletingLeftover) goes at the
// next DeletePartition of the name, or when the caller sweeps it.
func DeletePartition(fs FS, dir string) error {
	aside := asideName(dir)
	if err := fs.RemoveAll(aside); err != nil { // a stopped removal's
		return err
	}
	if _, err := fs.Stat(dir); err == nil {
		if err := fs.Rename(dir, aside); err != nil {
			return err
		}
	} else if !errors.Is(err, ErrNotExist) {
		return err
	}
	if err := fs.SyncDir(parentDir(dir)); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	return fs.RemoveAll(aside)
}

// DeletingLeftover reports whether entry, a name in a directory, is what
// a DeletePartition that stopped partway left aside.
func DeletingLeftover(entry string) bool { return strings.HasSuffix(entry, deletingSuffix) }
