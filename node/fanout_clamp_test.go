package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A cursor file that cannot be read stalls at most its own child's
// cursor: a parent's log still opens, and its partition serves, when the
// cursor files are checked against the high watermark it opened at.
func TestAnUnreadableCursorFileDoesNotKeepTheParentClosed(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit")
	h.createTopic("gone")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	h.produce("orders", 0, "first")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)

	for _, child := range []string{"audit", "gone"} { // a linked child's file, and a leftover one
		path := cursorPath(PartitionDir("orders", 0), child)
		_ = h.fs.Remove(path)                   // the linked child's, replaced
		require.NoError(t, h.fs.MkdirAll(path)) // a directory under a cursor file's name: no read succeeds
	}
	require.NoError(t, h.fs.SyncDir(PartitionDir("orders", 0)))
	h.crash()
	h.tick(h.cfg.Fanout.RetryMs)
	placement := h.produce("orders", 0, "second")
	require.Equal(t, uint64(1), placement.Offset)
}

// A cursor file that cannot be read is retried as a stalled batch is:
// after Fanout.RetryMs, with one warning per StallLogIntervalMs. The load
// was tried, and warned of, at every tick (ten a second on a host, each
// counted as an operational error), for as long as the file stayed
// unreadable; once it reads again the child gets its records.
func TestAnUnreadableCursorFileIsRetriedWithoutAWarningPerTick(t *testing.T) {
	events := &detailRecorder{}
	h := observedFanoutHarness(t, events)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	path := cursorPath(PartitionDir("orders", 0), "audit")
	require.NoError(t, h.fs.Remove(path))
	require.NoError(t, h.fs.MkdirAll(path)) // a directory under the cursor file's name: no read succeeds
	h.restart()

	for range 100 { // ten seconds of a host's ticks
		h.tick(h.cfg.MetaTickIntervalMs)
	}
	failures := 0
	for _, event := range events.events {
		if strings.HasPrefix(event, "fanout-cursor-load-failed") {
			failures++
		}
	}
	require.Equal(t, 1, failures, "one warning within StallLogIntervalMs")

	require.NoError(t, h.fs.Remove(path))
	h.produce("orders", 0, "x")
	h.tick(h.cfg.Fanout.RetryMs)
	h.tick(h.cfg.Fanout.LingerMs)
	require.Equal(t, []string{"x"}, h.replayAll("audit", 0), "the load was tried again")
}
