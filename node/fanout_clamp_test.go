package node

import (
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
