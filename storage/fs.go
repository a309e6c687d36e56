package storage

import (
	"errors"
	"io"
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

// File is an open file of an FS. Writes always append at the end of the
// file; reads are positional.
type File interface {
	io.ReaderAt
	// Write appends p at the end of the file.
	Write(p []byte) (int, error)
	// WriteAt overwrites bytes at off (used for small fixed-size slots,
	// never past the end of the file plus len(p)).
	WriteAt(p []byte, off int64) (int, error)
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	// Sync makes every write to the file so far durable.
	Sync() error
	// Size returns the current (not necessarily durable) size.
	Size() (int64, error)
	Close() error
}

// Preallocator is implemented by files that can reserve disk space ahead
// of their writes without changing their size (fallocate with KEEP_SIZE).
// It is optional: the log uses it when present.
type Preallocator interface {
	Preallocate(bytes int64) error
}

// How far ahead of its writes the active segment reserves space: as far
// as it has written already (the reservation doubles as the segment
// grows), at least preallocateStepMinBytes and at most
// preallocateStepMaxBytes. An empty partition's first write thus reserves
// a few tens of kilobytes, not megabytes, and a busy segment still
// reserves in large steps.
const (
	preallocateStepMinBytes = 64 << 10
	preallocateStepMaxBytes = 4 << 20
)

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
)
