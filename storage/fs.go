package storage

import (
	"errors"
	"io"
	"slices"
)

// FS is the file system the partition log runs on: the operations the log
// needs and nothing more. Paths are slash-separated and relative to the
// FS's root; implementations reject paths that escape it.
//
// Durability contract (both implementations, checked by one conformance
// suite):
//   - data written to a File is durable only after File.Sync returns nil;
//   - a created, renamed or removed name is durable only after SyncDir of
//     its parent directory returns nil;
//   - Rename is atomic: after a crash the new name holds either the old
//     content of the target or the full content of the source.
type FS interface {
	// Create creates name, truncating it if it exists, open for writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading and appending.
	Open(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a directory and everything below it; a missing
	// path is not an error.
	RemoveAll(name string) error
	// Rename atomically replaces newName with oldName.
	Rename(oldName, newName string) error
	// MkdirAll creates a directory and its missing parents.
	MkdirAll(name string) error
	// List returns the names (not paths) of the entries of a directory,
	// sorted. A missing directory is ErrNotExist.
	List(dir string) ([]string, error)
	// Stat reports whether name exists, whether it is a directory, and the
	// size of a file.
	Stat(name string) (FileInfo, error)
	// SyncDir makes the entries of a directory (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
}

// GroupSyncer is an FS that can make writes to several of its files, and
// the entries of several directories, durable at once for less than an
// fsync each (OSFS: one syncfs(2) of the file system, once enabled).
// RunTogether uses it for the rounds of one Ready.
type GroupSyncer interface {
	// SyncGroup makes durable every write so far to each of files and the
	// entries of each of dirs, as File.Sync of each file and SyncDir of
	// each directory would; it may make more durable than that (other
	// files of the file system). It fails if any of them may not be.
	SyncGroup(files []File, dirs []string) error
}

// File is an open file of an FS. Write appends at the end of the file;
// WriteAt and reads are positional.
type File interface {
	io.ReaderAt
	// Write appends p at the end of the file.
	Write(p []byte) (int, error)
	// WriteAt writes p at off, overwriting or extending the file; off is
	// never past the end of the file (no holes).
	WriteAt(p []byte, off int64) (int, error)
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	// Sync makes every write to the file so far durable.
	Sync() error
	// Size returns the current (not necessarily durable) size.
	Size() (int64, error)
	Close() error
}

// How far ahead of its frames the active segment keeps zeros written in
// its file (its zero tail; see doc.go): as far as the segment grew since
// its log opened, at least zeroTailStepMinBytes and at most
// zeroTailStepMaxBytes, and never past LogConfig.SegmentBytes. A round
// tops the tail up when less than half a step is left, so an empty
// partition writes a few tens of kilobytes of zeros, not megabytes, and
// no round writes more than zeroTailStepMaxBytes of them. A closed log
// keeps at most zeroTailKeptBytes of its tail, a step of a log just
// opened: a node holds at most that much of zeros per partition it
// does not have open, and zeroTailStepMaxBytes per open one.
const (
	zeroTailStepMinBytes = 64 << 10
	zeroTailStepMaxBytes = 1 << 20
	zeroTailKeptBytes    = zeroTailStepMinBytes
)

// zeroBlock is the source of the zero tail's writes, written in pieces of
// at most its size.
var zeroBlock [64 << 10]byte

// FileInfo describes a name in an FS.
type FileInfo struct {
	IsDir bool
	Size  int64
}

// Errors every FS implementation returns (wrapped or as is), so callers
// can test them with errors.Is.
var (
	ErrNotExist = errors.New("storage: file does not exist")
	ErrExist    = errors.New("storage: file already exists")
	// ErrIO is an injected or real input/output failure.
	ErrIO = errors.New("storage: input/output error")
	// ErrNoSpace is an injected or real disk-full failure.
	ErrNoSpace = errors.New("storage: no space left on device")
	ErrClosed  = errors.New("storage: file already closed")
	ErrBadPath = errors.New("storage: path escapes the file system root")
	// ErrNameTooLong: an element of the path is longer than
	// FileNameBytesMax.
	ErrNameTooLong = errors.New("storage: file name too long")
)

// OnlyNoSpace reports whether err says that a file system had no room and
// nothing else: ErrNoSpace, as an FS returns it (alone, or joined with
// the os error it stands for), wrapped, or joined only with more of the
// same. errors.Is(err, ErrNoSpace) holds as well for a join that also
// carries another failure (an EIO of another file, a failed close),
// which a caller that shrugs off a full disk must not shrug off.
func OnlyNoSpace(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case interface{ Unwrap() []error }:
		members := e.Unwrap()
		paired := slices.Contains(members, ErrNoSpace)
		for _, member := range members {
			_, joined := member.(interface{ Unwrap() []error })
			if member != ErrNoSpace && !OnlyNoSpace(member) && (!paired || joined) {
				return false
			}
		}
		return len(members) > 0
	case interface{ Unwrap() error }:
		return OnlyNoSpace(e.Unwrap())
	}
	return err == ErrNoSpace
}
