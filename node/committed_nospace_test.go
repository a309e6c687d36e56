package node

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// refuseCommittedFiles makes the next count creations of a committed
// offset file (the temporary of its atomic replace) find the disk full.
func refuseCommittedFiles(h *harness, count int) {
	h.fs.FailNextMatching(storage.FaultCreate, storage.ErrNoSpace, count, func(name string) bool {
		return strings.Contains(path.Base(name), "consumer.offset")
	})
}

// committedFileExists reports whether the partition's consumer.offset
// file is on the disk.
func committedFileExists(t *testing.T, h *harness, topicName string, partition int) bool {
	t.Helper()
	_, err := h.fs.Stat(path.Join(PartitionDir(topicName, partition), "consumer.offset"))
	if err != nil {
		require.ErrorIs(t, err, storage.ErrNotExist)
	}
	return err == nil
}

// consumeAck takes the next record of topicName and acknowledges it,
// returning its payload.
func consumeAck(t *testing.T, h *harness, topicName string) string {
	t.Helper()
	m, ok := h.consume(topicName)
	require.True(t, ok, "a record to consume")
	require.NoError(t, h.ackHandle(topicName, m.ReceiptHandle, msg.AckCommit))
	return string(m.Payload)
}

// Property: the first ack of a partition never acked before, on a disk
// with no room for the committed offset's file (its first write creates
// it), does not stop the node: the rounds that persist it are refused,
// said once, and the offset is persisted once the disk has room. A full
// disk stopped the node there (the harness fails on a failed round).
func TestAFirstAckOnAFullDiskIsPersistedOnceThereIsRoom(t *testing.T) {
	events := &eventRecorder{}
	h := newHarness(t)
	h.observer = events
	h.restart()
	h.createTopic("jobs")
	h.produce("jobs", 0, "a")
	h.produce("jobs", 0, "b")

	refuseCommittedFiles(h, 1_000)
	require.Equal(t, "a", consumeAck(t, h, "jobs"), "the ack is answered")
	for range 3 { // three persist intervals on the full disk
		h.tick(h.cfg.CommitPersistIntervalMs)
	}
	require.False(t, committedFileExists(t, h, "jobs", 0))
	require.Equal(t, 1, countOf(events.events, "committed-offset-write-refused"), "said once, not at each retry: %v", events.events)
	require.Zero(t, countOf(events.events, "log-failed"), "%v", events.events)
	h.produce("jobs", 0, "c") // the partition still takes records

	h.fs.FailNextMatching(storage.FaultCreate, nil, 0, nil) // room again
	h.tick(h.cfg.CommitPersistIntervalMs)
	require.True(t, committedFileExists(t, h, "jobs", 0), "written once the disk has room")
	h.crash()
	require.Equal(t, "b", consumeAck(t, h, "jobs"), "the persisted offset holds after a crash")
}

// Property: a crash, or a graceful stop, while the committed offset waits
// for room delivers the records acknowledged since its last persist
// again (duplicates, never a gap); the stop says it did not persist it.
func TestAnUnpersistedCommittedOffsetRedeliversAfterARestart(t *testing.T) {
	events := &eventRecorder{}
	h := newHarness(t)
	h.observer = events
	h.restart()
	h.createTopic("jobs")
	for _, payload := range []string{"a", "b", "c"} {
		h.produce("jobs", 0, payload)
	}
	require.Equal(t, "a", consumeAck(t, h, "jobs"))
	h.tick(h.cfg.CommitPersistIntervalMs) // consumer.offset says 1; consumer.offset.b is not there yet

	refuseCommittedFiles(h, 1_000)
	require.Equal(t, "b", consumeAck(t, h, "jobs"))
	h.tick(h.cfg.CommitPersistIntervalMs) // its round would create consumer.offset.b: refused
	require.Equal(t, 1, countOf(events.events, "committed-offset-write-refused"), "%v", events.events)
	h.crash()
	require.Equal(t, "b", consumeAck(t, h, "jobs"), "delivered again after a crash, not skipped")

	err := h.node.Close() // its persist of the offset finds no room either
	var unpersisted *UnpersistedOffsets
	require.ErrorAs(t, err, &unpersisted, "the stop says so")
	require.Same(t, unpersisted, err, "and nothing else failed: a driver need not read it as a failure")
	require.Equal(t, []string{PartitionDir("jobs", 0)}, unpersisted.Dirs)
	require.True(t, storage.OnlyNoSpace(err), "for a full disk: %v", err)
	h.node = nil
	h.fs.FailNextMatching(storage.FaultCreate, nil, 0, nil)
	h.start()
	require.Equal(t, "b", consumeAck(t, h, "jobs"), "delivered again after a graceful stop, not skipped")
	h.tick(h.cfg.CommitPersistIntervalMs)
	h.restart()
	require.Equal(t, "c", consumeAck(t, h, "jobs"), "persisted once the disk has room")
}
