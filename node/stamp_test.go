package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

func TestAStampNamesItsCreationAndRefusesDamage(t *testing.T) {
	identity := meta.TopicIdentity{Incarnation: 42, CreatedAtMs: 1_700_000_000_123}
	stamp := encodeStamp(identity)
	parsed, err := ParseStamp(stamp)
	require.NoError(t, err)
	require.Equal(t, identity, parsed)

	flipped := append([]byte(nil), stamp...)
	flipped[len(stampVersion)+2] ^= 0x01 // a digit of the incarnation
	for name, data := range map[string][]byte{
		"empty":         nil,
		"no newline":    stamp[:len(stamp)-1],
		"a digit moved": flipped,
		"other version": []byte("narad-topic-stamp 2 42 1700000000123 00000000\n"),
		"no checksum":   []byte("narad-topic-stamp 1 42 1700000000123\n"),
	} {
		_, err := ParseStamp(data)
		require.ErrorIs(t, err, errStampDamaged, name)
	}
}

// topicIdentityOf is the committed identity of a topic on the harness's
// node.
func (h *harness) topicIdentityOf(name string) meta.TopicIdentity {
	record, ok := h.node.meta.State().Topic(name)
	require.True(h.t, ok, "topic %s", name)
	return record.Identity()
}

// TestAPartitionIsStampedBeforeItsFirstRecord: a partition directory holds
// its topic's stamp, durably, once a record was acknowledged there.
func TestAPartitionIsStampedBeforeItsFirstRecord(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 1, "r")
	h.crash()
	identity, err := readStamp(h.fs, PartitionDir("orders", 1))
	require.NoError(t, err, "the stamp survives a crash")
	require.Equal(t, h.topicIdentityOf("orders"), identity)
}

// TestAMissingOrDamagedStampKeepsTheRecords: a directory without a stamp
// (a release before stamps) or with a damaged one is taken as the
// committed topic's and stamped again; its records are served, never
// deleted on a doubt.
func TestAMissingOrDamagedStampKeepsTheRecords(t *testing.T) {
	for name, spoil := range map[string]func(h *harness, path string){
		"missing": func(h *harness, path string) { require.NoError(h.t, h.fs.Remove(path)) },
		"damaged": func(h *harness, path string) {
			require.NoError(h.t, h.fs.FlipDurableByte(path, int64(len(stampVersion)+2)))
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.createTopic("orders")
			h.produce("orders", 0, "kept")
			require.NoError(t, h.node.Close())
			h.node = nil
			spoil(h, StampPath(PartitionDir("orders", 0)))
			h.start()

			m, ok := h.consume("orders")
			require.True(t, ok, "the record is served")
			require.Equal(t, "kept", string(m.Payload))
			identity, err := readStamp(h.fs, PartitionDir("orders", 0))
			require.NoError(t, err, "stamped again")
			require.Equal(t, h.topicIdentityOf("orders"), identity)
		})
	}
}

// TestAStaleCreationIsRemovedBeforeTheNewTopicOpens: a partition
// directory stamped with another creation of the topic is removed, and
// the partition opens empty under the committed topic.
func TestAStaleCreationIsRemovedBeforeTheNewTopicOpens(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 2, "old")
	stale := h.topicIdentityOf("orders")
	require.NoError(t, h.node.Close())
	h.node = nil
	stale.Incarnation++ // as if the directory were another creation's
	require.NoError(t, writeStamp(h.fs, storage.NewStore(h.fs, h.cfg.Log, 1, 0).EnsureDir, PartitionDir("orders", 2), stale))
	h.start()

	require.Equal(t, uint64(0), h.stats("orders", 2).HighWatermark, "the other creation's record is gone")
	replay := h.ok(msg.Replay{Topic: "orders", Partition: 2, Offset: 0}).(msg.ReplayResult)
	require.Nil(t, replay.Message, "nothing to replay")
	identity, err := readStamp(h.fs, PartitionDir("orders", 2))
	require.NoError(t, err)
	require.Equal(t, h.topicIdentityOf("orders"), identity, "stamped as the committed topic's")
}

// TestAMovedPartitionArrivesStamped: a move's copy is stamped with its
// topic's identity before it is installed, so the target's directory
// names its creation from the install on, before any open there.
func TestAMovedPartitionArrivesStamped(t *testing.T) {
	c, leader, _, target, out := finalizeJobHeld(t)
	record, ok := c.nodes[leader].meta.State().Topic("t")
	require.True(t, ok)
	identity, err := readStamp(c.disks[target], out.job.pending.job.stagedDir)
	require.NoError(t, err, "the staged copy is stamped before its finalize job runs")
	require.Equal(t, record.Identity(), identity)

	out.job.Run()
	require.NoError(t, out.job.pending.job.err)
	identity, err = readStamp(c.disks[target], PartitionDir("t", 0))
	require.NoError(t, err, "the install carries the stamp")
	require.Equal(t, record.Identity(), identity)
	out.node.JobDone(out.job)
	c.held, c.holdJobs = nil, false
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target })
	replayed := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: 0})
	require.NoError(t, replayed.Err)
	require.Equal(t, "r", string(replayed.Result.(msg.ReplayResult).Message.Payload), "the moved record is served")
}

// isStampWrite selects the temporary file through which a stamp is
// written.
func isStampWrite(name string) bool {
	return strings.HasSuffix(name, stampFile+storage.TemporarySuffix)
}

// startUnstamped starts a node over partition orders/0 holding the record
// "kept" and no stamp (a release before stamps), every write of a stamp
// failing with stampErr, its events going to observer when not nil.
func startUnstamped(t *testing.T, stampErr error, observer Observer) *harness {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 0, "kept")
	require.NoError(t, h.node.Close())
	h.node = nil
	require.NoError(t, h.fs.Remove(StampPath(PartitionDir("orders", 0))))
	if observer != nil {
		h.observer = observer
	}
	h.fs.FailNextMatching(storage.FaultCreate, stampErr, 1_000, isStampWrite)
	h.start()
	return h
}

// TestAFullDiskOpensAnUnstampedLogAndStampsItLater: a directory with a
// log and no stamp (a release before stamps) opens even when its stamp
// cannot be written for want of space (retention must be able to free
// space there), tries the stamp again only after stampRetryMs (one event,
// however many requests), and stamps it once there is space. A new
// directory gets no record before its stamp; another failure than a full
// disk refuses the open.
func TestAFullDiskOpensAnUnstampedLogAndStampsItLater(t *testing.T) {
	events := &detailRecorder{}
	h := startUnstamped(t, storage.ErrNoSpace, events)

	replay := h.ok(msg.Replay{Topic: "orders", Partition: 0, Offset: 0}).(msg.ReplayResult)
	require.NotNil(t, replay.Message, "the unstamped log is served")
	require.Equal(t, "kept", string(replay.Message.Payload))
	for range 5 {
		h.produce("orders", 0, "more")
	}
	_, err := readStamp(h.fs, PartitionDir("orders", 0))
	require.ErrorIs(t, err, storage.ErrNotExist, "the disk is full: no stamp yet")
	require.Equal(t, 1, countPrefix(events.events, "topic-stamp-unwritten"), "tried once until stampRetryMs: %v", events.events)

	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 1, Payload: []byte("new")}}}, msg.CodeUnavailable)
	holds, err := storage.HoldsSegments(h.fs, PartitionDir("orders", 1))
	require.NoError(t, err)
	require.False(t, holds, "no log was written in the unstamped new directory")

	h.fs.FailNext(storage.FaultCreate, nil, 0) // space again
	h.tick(stampRetryMs)
	h.produce("orders", 0, "stamped")
	identity, err := readStamp(h.fs, PartitionDir("orders", 0))
	require.NoError(t, err, "the stamp is written once tried again")
	require.Equal(t, h.topicIdentityOf("orders"), identity)
}

// TestAStampWriteThatFailsForAnotherReasonRefusesTheOpen: only a full
// disk lets an unstamped log open; an I/O error refuses it (retryable).
func TestAStampWriteThatFailsForAnotherReasonRefusesTheOpen(t *testing.T) {
	h := startUnstamped(t, storage.ErrIO, nil)
	h.fail(msg.Replay{Topic: "orders", Partition: 0, Offset: 0}, msg.CodeUnavailable)
}

func countPrefix(lines []string, prefix string) int {
	count := 0
	for _, line := range lines {
		if strings.HasPrefix(line, prefix) {
			count++
		}
	}
	return count
}

// TestAStampFoundAfterAFailedSyncOfItsDirectoryIsMadeDurable: a log that
// opened unstamped (a full disk) tries its stamp again; the stamp is
// renamed into place but the sync of the directory fails, and the next
// try finds it there. The log's rounds sync the directory only when they
// create a segment (its first one synced it before the stamp was there),
// so the node makes the stamp durable before it takes the directory as
// stamped: a crash after the next acknowledged records keeps it.
func TestAStampFoundAfterAFailedSyncOfItsDirectoryIsMadeDurable(t *testing.T) {
	h := startUnstamped(t, storage.ErrNoSpace, nil)
	h.produce("orders", 0, "unstamped")
	dir := PartitionDir("orders", 0)
	h.fs.FailNext(storage.FaultCreate, nil, 0) // space again
	h.fs.FailNextMatching(storage.FaultSyncDir, storage.ErrIO, 1, func(name string) bool { return name == dir })
	h.tick(stampRetryMs)
	h.fail(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("refused")}}}, msg.CodeUnavailable)
	h.produce("orders", 0, "stamped")

	identity, err := readStamp(h.fs.DurableClone(), dir)
	require.NoError(t, err, "the stamp found in place is durable once the directory is taken as stamped")
	require.Equal(t, h.topicIdentityOf("orders"), identity)
}
