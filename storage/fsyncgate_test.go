package storage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cleanAfterFailedSyncFS wraps a MemFS with what Linux does after a
// failed fsync: the pages of the failed write-back are marked clean, so a
// later fsync of the file (from any descriptor) succeeds without writing
// them, until the file is written again. failSuffix names the next file
// whose Sync fails.
type cleanAfterFailedSyncFS struct {
	*MemFS
	failSuffix string
	// cleaned holds the files whose failed pages are marked clean.
	cleaned map[string]bool
}

func (f *cleanAfterFailedSyncFS) Create(name string) (File, error) {
	return f.wrap(name)(f.MemFS.Create(name))
}
func (f *cleanAfterFailedSyncFS) Open(name string) (File, error) {
	return f.wrap(name)(f.MemFS.Open(name))
}

func (f *cleanAfterFailedSyncFS) wrap(name string) func(File, error) (File, error) {
	return func(file File, err error) (File, error) {
		if err != nil {
			return nil, err
		}
		return &cleanAfterFailedSyncFile{File: file, fs: f, name: name}, nil
	}
}

type cleanAfterFailedSyncFile struct {
	File
	fs   *cleanAfterFailedSyncFS
	name string
}

func (f *cleanAfterFailedSyncFile) Sync() error {
	if f.fs.failSuffix != "" && strings.HasSuffix(f.name, f.fs.failSuffix) {
		f.fs.failSuffix = ""
		f.fs.cleaned[f.name] = true
		return fmt.Errorf("fdatasync %s: %w", f.name, ErrIO)
	}
	if f.fs.cleaned[f.name] {
		return nil // the failed pages are clean: nothing is written
	}
	return f.File.Sync()
}

func (f *cleanAfterFailedSyncFile) WriteAt(p []byte, off int64) (int, error) {
	delete(f.fs.cleaned, f.name)
	return f.File.WriteAt(p, off)
}

func (f *cleanAfterFailedSyncFile) Write(p []byte) (int, error) {
	delete(f.fs.cleaned, f.name)
	return f.File.Write(p)
}

func (f *cleanAfterFailedSyncFile) Truncate(size int64) error {
	delete(f.fs.cleaned, f.name)
	return f.File.Truncate(size)
}

// A round's fsync fails and the process restarts without a power loss:
// recovery finds the round's frames in the page cache above the persisted
// HWM and serves them only once they are durable, even though Linux marked
// their pages clean when the write-back failed. A power loss afterwards
// takes none of what recovery served.
func TestRecoveryAfterAFailedFsyncServesOnlyDurableFrames(t *testing.T) {
	mem := newLogMemFS(1)
	fs := &cleanAfterFailedSyncFS{MemFS: mem, cleaned: map[string]bool{}}
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 10, 20)
	fs.failSuffix = ".log"
	require.ErrorIs(t, log.Sync(), ErrLogFailed)

	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(20), recovery.HWM, "the frames found in the page cache are served")
	requireTestRecords(t, log, 0, 20)

	mem.Crash()
	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Zero(t, recovery.LostAcknowledged, "a record recovery served was not durable")
	require.Equal(t, uint64(20), recovery.HWM)
	requireTestRecords(t, log, 0, 20)
}

// On the operating system's file system too, recovery writes the frames
// above the persisted HWM again before it syncs and serves them: a log
// abandoned with an unsynced tail (the process died) reopens with every
// frame, and again after that.
func TestRecoveryRewritesTheUnsyncedTailOnTheOSFileSystem(t *testing.T) {
	fs, err := NewOSFS(t.TempDir())
	require.NoError(t, err)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 10, 20)
	require.NotNil(t, log.PrepareSync(true, false), "the round writes the frames; it never runs")
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(20), recovery.HWM)
	requireTestRecords(t, log, 0, 20)
	require.NoError(t, log.Close())
	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(20), recovery.HWM)
	requireTestRecords(t, log, 0, 20)
}
