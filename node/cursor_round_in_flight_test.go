package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// renameHookFS calls before once, at the first rename of a fan-out cursor
// file's temporary into place: what the loop does while a round that runs
// on another goroutine is between writing that temporary and renaming it.
type renameHookFS struct {
	storage.FS
	before func()
}

func (fs *renameHookFS) Rename(oldName, newName string) error {
	if fs.before != nil && strings.HasSuffix(oldName, cursorFileSuffix+storage.TemporarySuffix) {
		before := fs.before
		fs.before = nil
		before()
	}
	return fs.FS.Rename(oldName, newName)
}

// takeCursorRound takes a Ready whose round of the parent partition 0 of
// "orders" writes its cursor file alone (its log has nothing to sync, so
// it is not Syncing), and makes loop run while that round is between
// writing the file's temporary and renaming it.
func takeCursorRound(t *testing.T, h *harness, loop func()) (Ready, *renameHookFS) {
	h.produce("orders", 0, "x")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied: the cursor advanced, its file waits for the interval
	h.nowMs += h.cfg.Fanout.CursorPersistIntervalMs
	h.node.Tick(h.nowMs)
	rd := h.node.Ready()
	hook := &renameHookFS{before: loop}
	found := false
	for i := range rd.Syncs {
		if s := &rd.Syncs[i]; s.Dir == PartitionDir("orders", 0) {
			require.Equal(t, 1, s.CursorWrites(), "the parent's round writes its cursor file")
			require.False(t, s.Data() || s.CommittedSync(), "the round writes the cursor file alone")
			hook.FS, s.fs, found = s.fs, hook, true
		}
	}
	require.True(t, found, "the parent partition has a round")
	return rd, hook
}

// runLate runs rd's Syncs (the loop's inputs run inside, at the hook),
// then advances, and requires every request fed meanwhile to be served or
// refused as retryable.
func runLate(t *testing.T, h *harness, rd Ready, hook *renameHookFS, during []msg.RequestID) {
	for _, s := range rd.Syncs {
		require.NoError(t, s.Run(), "a round whose writes succeed completes: nothing removed its files meanwhile")
	}
	require.Nil(t, hook.before, "the loop took its inputs while the round ran")
	h.takeReplies(rd.Replies)
	h.node.Advance(rd)
	h.flush()
	for _, id := range during {
		if err := h.replies[id].Err; err != nil {
			var refused *msg.Error
			require.ErrorAs(t, err, &refused, "request %d", id)
			require.Equal(t, msg.CodeUnavailable, refused.Code, "request %d: %s", id, refused.Message)
		}
	}
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 0, "audit").NextOffset, "the round wrote the cursor file")
}

// TestAnEvictionSparesALogWhoseCursorRoundIsInFlight: a sync round that
// writes only a parent's fan-out cursor file runs off the loop while the
// loop serves other partitions at the cap of open logs. The parent's log
// must not be evicted meanwhile: a produce to it would open it again by
// recovery, which removes the temporary files in its directory, the
// round's cursor file among them, whose rename then fails the Ready and
// so stops the node (node doc: nothing closes what an in-flight round
// syncs).
func TestAnEvictionSparesALogWhoseCursorRoundIsInFlight(t *testing.T) {
	h := evictingFanoutHarness(t, 1_000) // far past the linger
	h.produce("other", 0, "a")
	h.produce("other", 1, "b")
	var during []msg.RequestID
	rd, hook := takeCursorRound(t, h, func() {
		// Reads of two other partitions, at the cap of two open logs, and
		// a produce to the parent.
		for _, req := range []msg.Request{msg.Replay{Topic: "other", Partition: 0}, msg.Replay{Topic: "other", Partition: 1}, producePinned("orders", 0, "y")} {
			h.nextID++
			during = append(during, h.nextID)
			h.node.Handle(h.nextID, req)
		}
	})
	runLate(t, h, rd, hook, during)
	require.NoError(t, h.replies[during[2]].Err, "the parent's log stayed open: its produce is served")
}

// TestALogFailedWhileItsCursorRoundIsInFlightReopensOnlyAfterTheRound:
// as TestALogFailedWhileItsRoundIsInFlightReopensOnlyAfterTheRound, for a
// round that writes the parent's cursor file alone: the log is not
// Syncing, yet its directory must not be recovered before the round's
// end. A produce meanwhile is answered 503.
func TestALogFailedWhileItsCursorRoundIsInFlightReopensOnlyAfterTheRound(t *testing.T) {
	h := evictingFanoutHarness(t, 1_000)
	h.cfg.Log.WriteBufferBytesMax = 1 // an append writes at once: a write fault fails its log
	h.restart()
	h.tick(1)
	var during []msg.RequestID
	rd, hook := takeCursorRound(t, h, func() {
		h.fs.FailNext(storage.FaultWrite, storage.ErrIO, 1)
		for _, payload := range []string{"its write fails", "after the failure"} {
			h.nextID++
			during = append(during, h.nextID)
			h.node.Handle(h.nextID, producePinned("orders", 0, payload))
		}
	})
	runLate(t, h, rd, hook, during)
	require.Error(t, h.replies[during[0]].Err, "the write fault failed the log")
	h.produce("orders", 0, "after the round")
}
