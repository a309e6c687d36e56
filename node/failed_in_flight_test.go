package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// TestALogFailedWhileItsRoundIsInFlightReopensOnlyAfterTheRound: with
// pipelined group commit a log can fail (an append's write) while its
// sync round is on disk on another goroutine. Until that round completed,
// the partition does not open again: recovery of the directory would
// remove the round's temporary files (a committed offset file it is
// creating) and write the hwm file under it (node doc, "nothing closes or
// deletes what an in-flight round syncs"). A produce meanwhile is
// answered 503; after the round, the log reopens and serves every record
// the round made durable.
func TestALogFailedWhileItsRoundIsInFlightReopensOnlyAfterTheRound(t *testing.T) {
	h := newHarness(t)
	h.cfg.Log.WriteBufferBytesMax = 1 // an append writes at once: a write fault fails its log
	h.restart()
	h.createTopic("t")
	h.produce("t", 0, "first")

	h.nextID++
	durable := h.nextID
	h.node.Handle(durable, producePinned("t", 0, "in the round"))
	rd := h.node.Ready()
	require.NotEmpty(t, rd.Syncs, "the produce's round is in flight")

	h.fs.FailNext(storage.FaultWrite, storage.ErrIO, 1)
	h.nextID++
	failed := h.nextID
	h.node.Handle(failed, producePinned("t", 0, "its write fails"))
	h.nextID++
	during := h.nextID
	h.node.Handle(during, producePinned("t", 0, "while the round is on disk"))
	require.NotContains(t, h.node.store.OpenDirs(), PartitionDir("t", 0), "the failed log's directory is not opened again while its round is in flight")

	for _, s := range rd.Syncs {
		require.NoError(t, s.Run())
	}
	h.takeReplies(rd.Replies)
	h.node.Advance(rd)
	h.flush()
	require.NoError(t, h.replies[durable].Err, "the round's fsyncs succeeded: its produce stands")
	for _, id := range []msg.RequestID{failed, during} {
		var refused *msg.Error
		require.ErrorAs(t, h.replies[id].Err, &refused, "request %d", id)
		require.Equal(t, msg.CodeUnavailable, refused.Code, "request %d: %s", id, refused.Message)
	}

	h.produce("t", 0, "after the round")
	require.Equal(t, uint64(3), h.stats("t", 0).NextOffset, "the reopened log serves the records the round made durable")
}
