package node

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// fillDisk bounds the harness's disk to the bytes its files hold now:
// a write that grows a file finds no room, one in place still goes.
func fillDisk(t *testing.T, h *harness) {
	t.Helper()
	h.fs.SetCapacity(bytesUnder(t, h.fs, "."))
}

// bytesUnder sums the sizes of the files under dir.
func bytesUnder(t *testing.T, fs storage.FS, dir string) int64 {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var total int64
	for _, name := range names {
		info, err := fs.Stat(path.Join(dir, name))
		require.NoError(t, err)
		if info.IsDir {
			total += bytesUnder(t, fs, path.Join(dir, name))
			continue
		}
		total += info.Size
	}
	return total
}

// Property: records past a log's preallocated tail, on a disk with no
// room for them, fail their log, not the node: their produce is answered
// 503 (never 202), the node goes on serving, and once the disk has room
// the log recovers from its disk with every record answered 202. The
// round's failed write (on the loop, as the round was taken) failed the
// Ready and stopped the node (the harness fails on a failed round).
func TestRecordsPastTheTailOnAFullDiskFailTheirLogNotTheNode(t *testing.T) {
	events := &eventRecorder{}
	h := newHarness(t)
	h.observer = events
	h.restart()
	h.createTopic("jobs")
	big := strings.Repeat("x", 20<<10)
	h.produce("jobs", 0, "a")
	fillDisk(t, h)
	for range 3 { // 60 KiB into the segment's preallocated 64 KiB: no new block
		h.produce("jobs", 0, big)
	}

	reply := h.do(msg.Produce{Topic: "jobs", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte(big + "!")}}})
	require.Error(t, reply.Err, "a new segment's record found no room")
	require.Equal(t, msg.CodeUnavailable, reply.Err.(*msg.Error).Code, "%v", reply.Err)
	require.Contains(t, events.events, "log-failed")
	require.Equal(t, []string{"a", big, big, big}, h.replayAll("jobs", 0), "the node serves the records answered 202")

	h.fs.SetCapacity(0) // room again
	h.produce("jobs", 0, "b")
	payloads := h.replayAll("jobs", 0)
	require.Equal(t, []string{"a", big, big, big}, payloads[:4])
	require.Equal(t, "b", payloads[len(payloads)-1], "the log takes records again")
	require.LessOrEqual(t, len(payloads), 6, "the refused record at most once: %d records", len(payloads))
}
