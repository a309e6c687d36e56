package node

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// readFailingFS is a MemFS whose segment files fail every read while
// failReads is set, as a disk with a bad sector does (EIO).
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
	return readFailingFile{File: file, failReads: f.failReads}
}

type readFailingFile struct {
	storage.File
	failReads *bool
}

func (f readFailingFile) ReadAt(p []byte, off int64) (int, error) {
	if *f.failReads {
		return 0, fmt.Errorf("bad sector: %w", storage.ErrIO)
	}
	return f.File.ReadAt(p, off)
}

// TestAConsumeSurvivesAReadError: a consume whose record cannot be
// read from disk (an I/O error, not corruption) must be answered, as a
// replay of the same offset is (500), and leave the record to be delivered
// later. It used to reach invariant.Broken in skipUnreadable, which took
// the whole node down from a client's request.
func TestAConsumeSurvivesAReadError(t *testing.T) {
	failReads := false
	cfg := DefaultConfig()
	cfg.HandleKey = testHandleKey
	h := &harness{t: t, cfg: cfg, fs: storage.NewMemFS(rand.New(rand.NewPCG(1, 2))), nowMs: harnessStartMs,
		replies: map[msg.RequestID]msg.Reply{}, metaPath: filepath.Join(t.TempDir(), "meta.db")}
	store, err := meta.OpenStore(h.metaPath, meta.StoreOptions{NoSync: true})
	require.NoError(t, err)
	h.node, err = New(h.cfg, readFailingFS{MemFS: h.fs, failReads: &failReads}, store, h.nowMs, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.node.Abandon() })
	h.flush()

	h.createTopic("orders")
	h.produce("orders", 0, "x")
	failReads = true
	replay := h.do(msg.Replay{Topic: "orders", Partition: 0, Offset: 0})
	require.Equal(t, msg.CodeInternal, msg.CodeOf(replay.Err), "replay answers a read error")

	var pinned msg.Reply
	require.NotPanics(t, func() { pinned = h.do(msg.Consume{Topic: "orders", Partition: 0}) }, "a consume must not panic the node on a read error")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(pinned.Err), "a pinned consume says its partition could not be read")
	unpinned := h.do(msg.Consume{Topic: "orders", Partition: msg.PartitionNone})
	require.NoError(t, unpinned.Err, "an unpinned consume answers from the partitions it can read")
	require.Empty(t, unpinned.Result.(msg.ConsumeResult).Messages)

	failReads = false // no tick: the failed reads left no lease behind
	again := h.do(msg.Consume{Topic: "orders", Partition: 0})
	require.NoError(t, again.Err)
	messages := again.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the record is delivered once the disk reads again")
	require.Equal(t, uint32(1), messages[0].DeliveryCount, "the failed reads were no deliveries")
}
