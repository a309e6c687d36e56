package node

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// eioFS fails the reads of segment files while failReads is set with the
// error storage's OS file system returns for EIO (mapOSError: ErrIO
// joined with the *fs.PathError, which names the file).
type eioFS struct {
	*storage.MemFS
	failReads *bool
}

func (f eioFS) Create(name string) (storage.File, error) {
	file, err := f.MemFS.Create(name)
	return f.wrap(name, file), err
}

func (f eioFS) Open(name string) (storage.File, error) {
	file, err := f.MemFS.Open(name)
	return f.wrap(name, file), err
}

func (f eioFS) wrap(name string, file storage.File) storage.File {
	if file == nil || !strings.HasSuffix(name, ".log") {
		return file
	}
	return eioFile{File: file, name: name, failReads: f.failReads}
}

type eioFile struct {
	storage.File
	name      string
	failReads *bool
}

func (f eioFile) ReadAt(p []byte, off int64) (int, error) {
	if *f.failReads {
		return 0, errors.Join(storage.ErrIO, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EIO})
	}
	return f.File.ReadAt(p, off)
}

// TestAConsumeReadErrorNamesNoFile: docs/api.md#conventions says an
// error message never names a file on disk, and replay answers a read
// error with storageCause for that reason. A pinned consume whose record
// the disk fails to read answers 503 with the read error itself (%v),
// which on the OS file system carries the segment file's path.
func TestAConsumeReadErrorNamesNoFile(t *testing.T) {
	failReads := false
	cfg := DefaultConfig()
	cfg.HandleKey = testHandleKey
	h := &harness{t: t, cfg: cfg, fs: storage.NewMemFS(rand.New(rand.NewPCG(1, 2))), nowMs: harnessStartMs,
		replies: map[msg.RequestID]msg.Reply{}, metaPath: filepath.Join(t.TempDir(), "meta.db")}
	store, err := meta.OpenStore(h.metaPath, meta.StoreOptions{NoSync: true})
	require.NoError(t, err)
	h.node, err = New(h.cfg, eioFS{MemFS: h.fs, failReads: &failReads}, store, h.nowMs, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.node.Abandon() })
	h.flush()

	h.createTopic("orders")
	h.produce("orders", 0, "x")
	failReads = true

	replay := h.do(msg.Replay{Topic: "orders", Partition: 0, Offset: 0})
	require.NotContains(t, replay.Err.Error(), PartitionDir("orders", 0), "sanity: replay names no file")

	pinned := h.do(msg.Consume{Topic: "orders", Partition: 0})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(pinned.Err))
	require.NotContains(t, pinned.Err.Error(), PartitionDir("orders", 0), "a consume's read error names the segment file")
	require.NotContains(t, pinned.Err.Error(), ".log", "a consume's read error names the segment file")
}
