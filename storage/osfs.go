package storage

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
)

// OSFS is the production FS: real files below Root. It is the only code in
// the deterministic core that calls package os.
type OSFS struct {
	// Root is the directory every path is relative to. Set once by NewOSFS.
	Root string
	// fsyncs counts the fsyncs (files and directories) run through this
	// FS, successful or not; shared with its files. Only increases.
	fsyncs *atomic.Uint64
}

// NewOSFS returns an FS rooted at dir, creating dir if needed.
func NewOSFS(dir string) (*OSFS, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //determinism:ok
		return nil, mapOSError(err)
	}
	return &OSFS{Root: dir, fsyncs: &atomic.Uint64{}}, nil
}

// Fsyncs returns how many fsyncs (of files and directories) this FS has
// run. Safe from any goroutine.
func (o *OSFS) Fsyncs() uint64 { return o.fsyncs.Load() }

func (o *OSFS) path(name string) (string, error) {
	clean := path.Clean(name)
	if path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", ErrBadPath
	}
	return filepath.Join(o.Root, filepath.FromSlash(clean)), nil
}

// entryPath is path for operations on an entry of a directory (remove,
// rename): the root itself is not such an entry.
func (o *OSFS) entryPath(name string) (string, error) {
	p, err := o.path(name)
	if err == nil && p == filepath.Clean(o.Root) {
		return "", ErrBadPath
	}
	return p, err
}

// Create implements FS.
func (o *OSFS) Create(name string) (File, error) {
	p, err := o.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644) //determinism:ok
	if err != nil {
		return nil, mapOSError(err)
	}
	return &osFile{f: f, fsyncs: o.fsyncs}, nil
}

// Open implements FS.
func (o *OSFS) Open(name string) (File, error) {
	p, err := o.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0) //determinism:ok
	if err != nil {
		return nil, mapOSError(err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, mapOSError(err)
	}
	return &osFile{f: f, end: info.Size(), fsyncs: o.fsyncs}, nil
}

// Remove implements FS.
func (o *OSFS) Remove(name string) error {
	p, err := o.entryPath(name)
	if err != nil {
		return err
	}
	return mapOSError(os.Remove(p)) //determinism:ok
}

// RemoveAll implements FS.
func (o *OSFS) RemoveAll(name string) error {
	p, err := o.entryPath(name)
	if err != nil {
		return err
	}
	return mapOSError(os.RemoveAll(p)) //determinism:ok
}

// Rename implements FS.
func (o *OSFS) Rename(oldName, newName string) error {
	from, err := o.entryPath(oldName)
	if err != nil {
		return err
	}
	to, err := o.entryPath(newName)
	if err != nil {
		return err
	}
	return mapOSError(os.Rename(from, to)) //determinism:ok
}

// MkdirAll implements FS.
func (o *OSFS) MkdirAll(name string) error {
	p, err := o.path(name)
	if err != nil {
		return err
	}
	return mapOSError(os.MkdirAll(p, 0o755)) //determinism:ok
}

// List implements FS.
func (o *OSFS) List(dir string) ([]string, error) {
	p, err := o.path(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p) //determinism:ok
	if err != nil {
		return nil, mapOSError(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (o *OSFS) Stat(name string) (FileInfo, error) {
	p, err := o.path(name)
	if err != nil {
		return FileInfo{}, err
	}
	info, err := os.Stat(p) //determinism:ok
	if err != nil {
		return FileInfo{}, mapOSError(err)
	}
	return FileInfo{IsDir: info.IsDir(), Size: info.Size()}, nil
}

// SyncDir implements FS.
func (o *OSFS) SyncDir(dir string) error {
	p, err := o.path(dir)
	if err != nil {
		return err
	}
	d, err := os.Open(p) //determinism:ok
	if err != nil {
		return mapOSError(err)
	}
	o.fsyncs.Add(1)
	syncErr := d.Sync()
	closeErr := d.Close()
	return mapOSError(errors.Join(syncErr, closeErr))
}

type osFile struct {
	f *os.File
	// end is the file's size as this handle knows it: where the next Write
	// lands. Invariant: end == the size on disk, as only this handle writes.
	end int64
	// closed is set by Close, so that Size, which does not touch the file,
	// also reports ErrClosed afterwards.
	closed bool
	// fsyncs is the counter of the FS that opened the file.
	fsyncs *atomic.Uint64
}

// ReadAt maps errors like every other method; io.EOF passes unchanged.
func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, mapOSError(err)
}

func (f *osFile) Write(p []byte) (int, error) {
	n, err := f.f.WriteAt(p, f.end)
	f.end += int64(n)
	return n, mapOSError(err)
}

func (f *osFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	if n > 0 { // an empty write does not extend the file
		f.end = max(f.end, off+int64(n))
	}
	return n, mapOSError(err)
}

func (f *osFile) Truncate(size int64) error {
	if err := f.f.Truncate(size); err != nil {
		return mapOSError(err)
	}
	f.end = size
	return nil
}

// Sync uses fdatasync: it makes the data and the metadata needed to read
// it (the size) durable, without the timestamp updates a full fsync
// journals. Measured here: one data+hwm round fell from 2.0 to 0.9 ms.
// Its CPU is paid per call, not per byte (BenchmarkDurableWrite, on a
// two-core VM: 70-130 µs of the thread's CPU for a write and its
// fdatasync alike at 256 B, 4 KiB and 64 KiB, 8-12 µs for an fdatasync
// with nothing to write); pwritev2 with RWF_DSYNC and an O_DSYNC file
// cost the same within the noise, so what saves CPU is fewer calls.
func (f *osFile) Sync() error {
	f.fsyncs.Add(1)
	return f.withFd(func(fd int) error { return syscall.Fdatasync(fd) })
}

// withFd runs a system call on the file's descriptor; a closed file is
// ErrClosed, never a call on a stale descriptor.
func (f *osFile) withFd(call func(fd int) error) error {
	if f.closed {
		return ErrClosed
	}
	raw, err := f.f.SyscallConn()
	if err != nil {
		return mapOSError(err)
	}
	var callErr error
	if err := raw.Control(func(fd uintptr) { callErr = call(int(fd)) }); err != nil {
		return mapOSError(err)
	}
	return mapOSError(callErr)
}

func (f *osFile) Close() error {
	f.closed = true
	return mapOSError(f.f.Close())
}

func (f *osFile) Size() (int64, error) {
	if f.closed {
		return 0, ErrClosed
	}
	return f.end, nil
}

// mapOSError wraps an os error so that errors.Is matches this package's
// sentinels while keeping the original message.
func mapOSError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return errors.Join(ErrNotExist, err)
	case errors.Is(err, fs.ErrExist):
		return errors.Join(ErrExist, err)
	case errors.Is(err, os.ErrClosed):
		return errors.Join(ErrClosed, err)
	case errors.Is(err, syscall.ENOSPC):
		return errors.Join(ErrNoSpace, err)
	case errors.Is(err, syscall.EIO):
		return errors.Join(ErrIO, err)
	}
	return err
}
