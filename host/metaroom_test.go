package host

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fallocateSupported reports whether the file system of dir allocates
// past a file's end (tmpfs, ext4 and xfs do).
func fallocateSupported(t *testing.T, dir string) bool {
	file, err := os.Create(filepath.Join(dir, "probe"))
	require.NoError(t, err)
	defer file.Close()
	err = unix.Fallocate(int(file.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 4096)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return false
	}
	require.NoError(t, err)
	return true
}

// The metastore's file keeps metaStoreAheadBytes of disk allocated past
// its end, topped up once bbolt's growth (a truncate up) ate more than
// half of it, and the writes of that growth find their blocks allocated:
// on a full disk they need no new one (disk-full audit: an idle node
// stopped 2 s after the disk filled, at a heartbeat's metastore write).
func TestTheMetastoreFileKeepsRoomAllocatedPastItsEnd(t *testing.T) {
	dir := t.TempDir()
	if !fallocateSupported(t, dir) {
		t.Skip("the temporary directory's file system cannot allocate past a file's end")
	}
	path := filepath.Join(dir, "meta.db")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{1}, 64<<10), 0o600))
	var logs bytes.Buffer
	room := &metaRoom{path: path}
	room.keep(slog.New(slog.NewTextHandler(&logs, nil)))
	size, allocated := fileAllocation(t, path)
	require.EqualValues(t, 64<<10, size, "the size stays bbolt's")
	require.GreaterOrEqual(t, allocated, size+metaStoreAheadBytes, "room allocated past the end")
	require.EqualValues(t, allocated-size, room.ahead.Load())

	require.NoError(t, os.Truncate(path, size+metaStoreAheadLowBytes+(1<<20))) // bbolt grows its file
	_, before := fileAllocation(t, path)
	writeAt(t, path, size+metaStoreAheadLowBytes, bytes.Repeat([]byte{2}, 1<<20)) // and writes its new pages
	_, after := fileAllocation(t, path)
	require.Equal(t, before, after, "the growth's pages were already allocated: no new block")

	room.keep(slog.New(slog.NewTextHandler(&logs, nil)))
	grown, topped := fileAllocation(t, path)
	require.GreaterOrEqual(t, topped, grown+metaStoreAheadBytes, "topped up once under metaStoreAheadLowBytes were left")
	require.EqualValues(t, topped-grown, room.ahead.Load())
	require.Empty(t, logs.String(), "nothing to say while top-ups succeed")
}

// A top-up that fails (here: the file is gone) is a warning once, not
// every second, and its end is said.
func TestAFailingTopUpOfTheMetastoresRoomIsSaidOnce(t *testing.T) {
	dir := t.TempDir()
	if !fallocateSupported(t, dir) {
		t.Skip("the temporary directory's file system cannot allocate past a file's end")
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	room := &metaRoom{path: filepath.Join(dir, "meta.db")}
	room.keep(logger)
	room.keep(logger)
	require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("level=WARN")), logs.String())
	require.NoError(t, os.WriteFile(room.path, []byte("x"), 0o600))
	room.keep(logger)
	require.Contains(t, logs.String(), "room ahead is allocated again")
	require.False(t, room.failing)
}

// A node publishes its metastore's room in /metrics.
func TestANodePublishesItsMetastoresRoom(t *testing.T) {
	h := testHost(t)
	if !fallocateSupported(t, t.TempDir()) {
		t.Skip("the temporary directory's file system cannot allocate past a file's end")
	}
	_, scrape := call(t, h, get("/metrics"))
	match := regexp.MustCompile(`(?m)^narad_metastore_room_ahead_bytes (\S+)$`).FindStringSubmatch(scrape)
	require.NotNil(t, match, "the gauge is published")
	ahead, err := strconv.ParseFloat(match[1], 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ahead, float64(metaStoreAheadLowBytes), "allocated at the loop's first disk check, before the node's first write")
}

func fileAllocation(t *testing.T, path string) (size, allocated int64) {
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	size, allocated, err = allocation(file)
	require.NoError(t, err)
	return size, allocated
}

func writeAt(t *testing.T, path string, offset int64, data []byte) {
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer file.Close()
	_, err = file.WriteAt(data, offset)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
}
