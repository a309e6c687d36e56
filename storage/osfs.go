package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// OSFS is the production FS: real files below Root. It is the only code in
// the deterministic core that calls package os.
type OSFS struct {
	// Root is the directory every path is relative to. Set once by NewOSFS.
	Root string
	// fsyncs counts the fsyncs (files and directories) run through this
	// FS, successful or not; shared with its files. Only increases.
	fsyncs *atomic.Uint64
	// groupSyncs counts the syncfs calls of SyncGroup, successful or not.
	// Only increases.
	groupSyncs *atomic.Uint64
	// root is Root held open for syncfs(2), and rootDevice its device,
	// once EnableGroupSync succeeded; nil before, and SyncGroup fsyncs
	// each file and directory. Set once, before the FS is shared.
	root       *os.File
	rootDevice uint64
}

// The modes of what the FS creates: the records of every topic are in
// these files, which no grant guards, so only the node's own OS user may
// read them (another account on the host read every topic with the
// group and world read bits of 0o755 and 0o644). A directory or file
// that exists keeps its mode.
const (
	dirMode  os.FileMode = 0o700
	fileMode os.FileMode = 0o600
)

// NewOSFS returns an FS rooted at dir, creating dir if needed.
func NewOSFS(dir string) (*OSFS, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil { //determinism:ok
		return nil, mapOSError(err)
	}
	return &OSFS{Root: dir, fsyncs: &atomic.Uint64{}, groupSyncs: &atomic.Uint64{}}, nil
}

// groupSyncKernelMin is the first Linux release whose syncfs(2) reports
// every failure an fsync would: write-back errors of the file system's
// files since 5.8, and the file system's own sync step (ext4's journal
// commit and disk-cache flush) only since 5.17; an older one may return
// success for data it failed to make durable.
var groupSyncKernelMin = [2]int{5, 17}

// groupSyncFileSystem reports whether syncfs(2) on a file system of this
// type (statfs f_type) flushes the disk's write cache every time, as an
// fdatasync does. ext4's sync step always does (it commits the journal or
// issues the flush itself); XFS's forces its log and sends no flush when
// nothing was logged, which is the common case for a round that
// overwrites a segment's zero tail, so its data could still sit in the
// disk's cache when the round is acknowledged. Others are not known safe.
func groupSyncFileSystem(fsType int64) bool { return fsType == unix.EXT4_SUPER_MAGIC }

// EnableGroupSync lets SyncGroup make its files and directories durable
// with one syncfs(2) of the file system that holds Root, instead of an
// fsync each. It fails, changing nothing, on a kernel before
// groupSyncKernelMin, on a file system groupSyncFileSystem does not know
// safe, or when Root cannot be opened. Call it before the FS is shared;
// Close releases what it holds. A second call does nothing.
func (o *OSFS) EnableGroupSync() error {
	if o.root != nil {
		return nil
	}
	var name syscall.Utsname
	if err := syscall.Uname(&name); err != nil {
		return fmt.Errorf("group sync: uname: %w", err)
	}
	release := utsString(name.Release[:])
	if !kernelAtLeast(release, groupSyncKernelMin) {
		return fmt.Errorf("group sync needs Linux %d.%d or later (whose syncfs reports every failure an fsync would); this kernel is %s",
			groupSyncKernelMin[0], groupSyncKernelMin[1], release)
	}
	root, err := os.Open(o.Root) //determinism:ok the os implementation of FS
	if err != nil {
		return mapOSError(err)
	}
	var stat unix.Statfs_t
	if err := unix.Fstatfs(int(root.Fd()), &stat); err != nil {
		root.Close()
		return mapOSError(os.NewSyscallError("fstatfs", err))
	}
	if !groupSyncFileSystem(int64(stat.Type)) {
		root.Close()
		return fmt.Errorf("group sync is known safe only on ext4 (whose syncfs always flushes the disk's cache); %s is on file system type %#x",
			o.Root, stat.Type)
	}
	device, err := deviceOf(root)
	if err != nil {
		root.Close()
		return err
	}
	o.root, o.rootDevice = root, device
	return nil
}

// FreeBytes returns the bytes of Root's file system an unprivileged
// writer may still use (statfs f_bavail, counted in fragments of
// f_frsize bytes, as df counts them). Safe from any goroutine.
func (o *OSFS) FreeBytes() (int64, error) {
	var stat unix.Statfs_t
	if err := unix.Statfs(o.Root, &stat); err != nil {
		return 0, mapOSError(os.NewSyscallError("statfs", err))
	}
	return int64(stat.Bavail) * stat.Frsize, nil
}

// GroupSyncEnabled reports whether EnableGroupSync succeeded.
func (o *OSFS) GroupSyncEnabled() bool { return o.root != nil }

// GroupSyncs returns how many syncfs calls SyncGroup has made. Safe from
// any goroutine.
func (o *OSFS) GroupSyncs() uint64 { return o.groupSyncs.Load() }

// Close releases the root directory EnableGroupSync holds open.
func (o *OSFS) Close() error {
	if o.root == nil {
		return nil
	}
	return mapOSError(o.root.Close())
}

// SyncGroup implements GroupSyncer. Once group sync is enabled, the files
// and directories on Root's device are made durable by one syncfs(2) of
// that file system: Linux documents it as the same guarantee as an fsync
// of every file on it, on ext4 it always flushes the disk's cache, and
// since 5.17 it fails when any file's write-back or the journal's commit
// failed since the last call (a failure elsewhere on the file system, too,
// which fails the round: a false alarm costs a restart, never data).
// Those on another device (a mount below Root) are fsynced each, as is
// everything while group sync is off.
func (o *OSFS) SyncGroup(files []File, dirs []string) error {
	var errs []error
	for _, file := range files {
		if f, ok := file.(*osFile); !ok || !o.coversFile(f) {
			errs = append(errs, file.Sync())
		}
	}
	for _, dir := range dirs {
		if !o.coversDir(dir) {
			errs = append(errs, o.SyncDir(dir))
		}
	}
	if o.root != nil {
		o.groupSyncs.Add(1)
		errs = append(errs, o.syncfs())
	}
	return errors.Join(errs...)
}

// coversFile reports whether syncfs of Root's file system makes f durable.
func (o *OSFS) coversFile(f *osFile) bool {
	return o.root != nil && !f.closed && f.device == o.rootDevice
}

// coversDir reports whether syncfs of Root's file system makes the entries
// of dir durable; a directory it cannot stat is not covered (its SyncDir
// then reports the error).
func (o *OSFS) coversDir(dir string) bool {
	if o.root == nil {
		return false
	}
	p, err := o.path(dir)
	if err != nil {
		return false
	}
	info, err := os.Stat(p) //determinism:ok the os implementation of FS
	if err != nil {
		return false
	}
	device, err := deviceIn(info)
	return err == nil && device == o.rootDevice
}

// syncfs runs syncfs(2) on Root's file system.
func (o *OSFS) syncfs() error {
	raw, err := o.root.SyscallConn()
	if err != nil {
		return mapOSError(err)
	}
	var syncErr error
	if err := raw.Control(func(fd uintptr) { syncErr = unix.Syncfs(int(fd)) }); err != nil {
		return mapOSError(err)
	}
	if syncErr != nil {
		return mapOSError(os.NewSyscallError("syncfs", syncErr))
	}
	return nil
}

// deviceOf returns the device that holds f.
func deviceOf(f *os.File) (uint64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, mapOSError(err)
	}
	return deviceIn(info)
}

// deviceIn returns the device a stat result names.
func deviceIn(info fs.FileInfo) (uint64, error) {
	stat, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("stat of %s: no device number", info.Name())
	}
	return uint64(stat.Dev), nil
}

// utsString is a NUL-terminated field of a Utsname.
func utsString[T int8 | uint8](field []T) string {
	b := make([]byte, 0, len(field))
	for _, c := range field {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// kernelAtLeast reports whether a Linux release string ("6.1.0-13-amd64")
// is at least major.minor; one it cannot read is not.
func kernelAtLeast(release string, least [2]int) bool {
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > least[0] || major == least[0] && minor >= least[1]
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
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, fileMode) //determinism:ok
	if err != nil {
		return nil, mapOSError(err)
	}
	device, err := deviceOf(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &osFile{f: f, device: device, fsyncs: o.fsyncs}, nil
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
	device, err := deviceIn(info)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &osFile{f: f, end: info.Size(), device: device, fsyncs: o.fsyncs}, nil
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
	return mapOSError(os.MkdirAll(p, dirMode)) //determinism:ok
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
	// device is the device that holds the file (fixed at open).
	device uint64
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
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT): // a quota reached is a full disk to the node
		return errors.Join(ErrNoSpace, err)
	case errors.Is(err, syscall.EIO):
		return errors.Join(ErrIO, err)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return errors.Join(ErrNameTooLong, err)
	}
	return err
}
