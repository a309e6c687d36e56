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

// readFailingFS is a MemFS whose segment files fail every read while
// failReads is set, as a disk with a bad sector does: with the error
// storage's OS file system returns for EIO (ErrIO joined with the
// *fs.PathError, which names the file).
type readFailingFS struct {
	*storage.MemFS
	failReads *bool
}

func (f readFailingFS) Create(name string) (storage.File, error) {
	file, err := f.MemFS.Create(name)
	return f.wrap(name, file), err
}

func (f readFailingFS) Open(name string) (storage.File, error) {
	file, err := f.MemFS.Open(name)
	return f.wrap(name, file), err
}

func (f readFailingFS) wrap(name string, file storage.File) storage.File {
	if file == nil || !strings.HasSuffix(name, ".log") {
		return file
	}
	return readFailingFile{File: file, name: name, failReads: f.failReads}
}

type readFailingFile struct {
	storage.File
	name      string
	failReads *bool
}

func (f readFailingFile) ReadAt(p []byte, off int64) (int, error) {
	if *f.failReads {
		return 0, errors.Join(storage.ErrIO, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EIO})
	}
	return f.File.ReadAt(p, off)
}

// readFailingHarness is a node on a readFailingFS with one record in
// partition 0 of "orders"; reads fail while *failReads is set.
func readFailingHarness(t *testing.T) (h *harness, failReads *bool) {
	failReads = new(bool)
	cfg := DefaultConfig()
	cfg.HandleKey = testHandleKey
	h = &harness{t: t, cfg: cfg, fs: storage.NewMemFS(rand.New(rand.NewPCG(1, 2))), nowMs: harnessStartMs,
		replies: map[msg.RequestID]msg.Reply{}, metaPath: filepath.Join(t.TempDir(), "meta.db")}
	store, err := meta.OpenStore(h.metaPath, meta.StoreOptions{NoSync: true})
	require.NoError(t, err)
	h.node, err = New(h.cfg, readFailingFS{MemFS: h.fs, failReads: failReads}, store, h.nowMs, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.node.Abandon() })
	h.flush()
	h.createTopic("orders")
	h.produce("orders", 0, "x")
	return h, failReads
}

// TestAConsumeSurvivesAReadError: a consume whose record cannot be
// read from disk (an I/O error, not corruption) must be answered, as a
// replay of the same offset is (500), and leave the record to be delivered
// later. It used to reach invariant.Broken in skipUnreadable, which took
// the whole node down from a client's request.
func TestAConsumeSurvivesAReadError(t *testing.T) {
	h, failReads := readFailingHarness(t)
	*failReads = true
	replay := h.do(msg.Replay{Topic: "orders", Partition: 0, Offset: 0})
	require.Equal(t, msg.CodeInternal, msg.CodeOf(replay.Err), "replay answers a read error")

	var pinned msg.Reply
	require.NotPanics(t, func() { pinned = h.do(msg.Consume{Topic: "orders", Partition: 0}) }, "a consume must not panic the node on a read error")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(pinned.Err), "a pinned consume says its partition could not be read")
	unpinned := h.do(msg.Consume{Topic: "orders", Partition: msg.PartitionNone})
	require.NoError(t, unpinned.Err, "an unpinned consume answers from the partitions it can read")
	require.Empty(t, unpinned.Result.(msg.ConsumeResult).Messages)

	*failReads = false // no tick: the failed reads left no lease behind
	again := h.do(msg.Consume{Topic: "orders", Partition: 0})
	require.NoError(t, again.Err)
	messages := again.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the record is delivered once the disk reads again")
	require.Equal(t, uint32(1), messages[0].DeliveryCount, "the failed reads were no deliveries")
}

// TestAConsumeReadErrorNamesNoFile: docs/api.md#conventions says an
// error message never names a file on disk, and replay answers a read
// error with storageCause for that reason. A pinned consume whose record
// the disk failed to read answered 503 with the read error itself, which
// on the OS file system carries the segment file's path.
func TestAConsumeReadErrorNamesNoFile(t *testing.T) {
	h, failReads := readFailingHarness(t)
	*failReads = true
	replay := h.do(msg.Replay{Topic: "orders", Partition: 0, Offset: 0})
	require.NotContains(t, replay.Err.Error(), PartitionDir("orders", 0), "sanity: replay names no file")

	pinned := h.do(msg.Consume{Topic: "orders", Partition: 0})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(pinned.Err))
	require.NotContains(t, pinned.Err.Error(), PartitionDir("orders", 0), "a consume's read error names the segment file")
	require.NotContains(t, pinned.Err.Error(), ".log", "a consume's read error names the segment file")
}

// TestAParkedPollLooksAgainAfterAReadError: a long poll whose look found
// its only record unreadable (an I/O error, not corruption) parks, and
// nothing else would wake it: no record becomes visible, no lease lapses.
// It waited until its wait ended (10 s) with the record readable again
// after a second. It looks again readRetryIntervalMs after the failure,
// and again after each failure while the disk keeps failing.
func TestAParkedPollLooksAgainAfterAReadError(t *testing.T) {
	h, failReads := readFailingHarness(t)
	*failReads = true
	poll := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 10_000})
	_, answered := h.replies[poll]
	require.False(t, answered, "the poll parks: its only record could not be read")

	h.tick(readRetryIntervalMs) // still failing: looked at, fails again, noted again
	_, answered = h.replies[poll]
	require.False(t, answered, "the disk still fails")

	*failReads = false
	for waited := int64(0); waited < 2*readRetryIntervalMs; waited += 100 {
		h.tick(100)
	}
	reply, answered := h.replies[poll]
	require.True(t, answered, "the parked poll looks again after the read error, not only when its wait ends")
	require.NoError(t, reply.Err)
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1, "it gets the record")
	require.Less(t, h.nowMs-harnessStartMs, int64(10_000), "answered before the wait ended")
}
