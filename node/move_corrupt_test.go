package node

import (
	"bytes"
	"fmt"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// corruptPayload is the payload of the record the source's disk damages.
const corruptPayload = "record-07"

// corruptSource produces records record-00 to record-19 into partition 0
// of t at its owner, whose hwm file is written every sync round, then
// crashes it, damages the payload of record-07 on its disk and starts it
// again: its recovery skips offset 7, below the persisted HWM. It returns
// the harness, the leader and the owner.
func corruptSource(t *testing.T) (c *clusterHarness, leader, source string) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	source = c.owners(leader, "t")[0]
	cfg := c.configs[source]
	cfg.Log.HWMLagBytesMax, cfg.Log.HWMLagMsMax = 0, 0 // every acknowledged record below the persisted HWM
	c.configs[source] = cfg
	c.crash(source)
	c.tickUntilServing(source)
	for i := range 20 {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("record-%02d", i))).Err)
	}
	require.NoError(t, c.nodes[source].Abandon())
	c.disks[source].Crash()
	damagePayload(t, c.disks[source], PartitionDir("t", 0), corruptPayload)
	c.start(source)
	c.tickUntilServing(source)
	requireUnreadable(t, c, source, 7, "the source's recovery skipped the damaged record")
	return c, leader, source
}

// damagePayload flips a byte of the first frame in dir's first segment
// whose bytes hold payload, durably: the frame's CRC no longer matches.
func damagePayload(t testing.TB, fs storage.FS, dir, payload string) {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	for _, name := range names {
		file, err := fs.Open(path.Join(dir, name))
		require.NoError(t, err)
		size, err := file.Size()
		require.NoError(t, err)
		data := make([]byte, size)
		_, err = file.ReadAt(data, 0)
		require.NoError(t, err)
		if at := bytes.Index(data, []byte(payload)); at >= 0 {
			_, err = file.WriteAt([]byte{data[at] ^ 0xff}, int64(at))
			require.NoError(t, err)
			require.NoError(t, file.Sync())
			require.NoError(t, file.Close())
			return
		}
		require.NoError(t, file.Close())
	}
	t.Fatalf("no file of %s holds %q", dir, payload)
}

// requireUnreadable checks that a replay of offset at node answers 410, as
// for a record recovery skipped.
func requireUnreadable(t *testing.T, c *clusterHarness, at string, offset uint64, why string) {
	t.Helper()
	replayed := c.do(at, msg.Replay{Topic: "t", Partition: 0, Offset: offset})
	require.Equal(t, msg.CodeGone, msg.CodeOf(replayed.Err), "%s: %v", why, replayed.Err)
}

// requireRecords checks that every record but record-07 replays at node
// with its payload.
func requireRecords(t *testing.T, c *clusterHarness, at string) {
	t.Helper()
	for i := range 20 {
		if i == 7 {
			continue
		}
		replayed := c.do(at, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
		require.NoError(t, replayed.Err)
		require.Equal(t, fmt.Sprintf("record-%02d", i), string(replayed.Result.(msg.ReplayResult).Message.Payload))
	}
}

// TestAPartitionWithACorruptRecordMoves: the source reports the record its
// disk destroyed, the destination accepts a copy with exactly that damage
// (it has no other copy to take the record from), the move completes, and
// the new owner answers the lost offset as the old one did.
func TestAPartitionWithACorruptRecordMoves(t *testing.T) {
	c, leader, source := corruptSource(t)
	state := sourceReportsRecord7(t, c, source)
	require.NotEmpty(t, state.Segments)
	target := moveWithGap(t, c, leader, source)
	requireRecords(t, c, target)
	produced := c.do(target, producePinned("t", 0, "after"))
	require.NoError(t, produced.Err)
	require.Equal(t, uint64(20), produced.Result.(msg.ProduceResult).Records[0].Offset)
}

// TestACopyDamagedAtTheDestinationIsCopiedAgain: a staged copy with a
// corrupt record the source does not report (a byte the destination's own
// disk damaged) fails verification; the session copies again, and the
// second copy, with only the source's damage, completes the move.
func TestACopyDamagedAtTheDestinationIsCopiedAgain(t *testing.T) {
	c, leader, source := corruptSource(t)
	target := c.otherThan(source)
	c.holdJobs = true
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return len(c.held) > 0 })
	first := c.held[0]
	c.held = nil
	require.Same(t, c.nodes[target], first.node)
	damagePayload(t, c.disks[target], first.job.pending.job.stagedDir, "record-12")
	first.job.Run()
	require.ErrorIs(t, first.job.pending.job.err, storage.ErrCorrupt, "the damage at the destination is refused")
	first.node.JobDone(first.job)

	c.tickUntil(100, 100, func() bool { return len(c.held) > 0 })
	second := c.held[0]
	c.held, c.holdJobs = nil, false
	second.job.Run()
	require.NoError(t, second.job.pending.job.err, "the fresh copy carries only the source's damage")
	second.node.JobDone(second.job)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target })
	c.tick(100)
	requireUnreadable(t, c, target, 7, "the new owner serves the source's gap")
	requireRecords(t, c, target)
}

// TestDamageUnderASegmentIndexIsFoundBeforeAMove: on a source whose
// recovery took the damaged record's sealed segment from its index file
// (so it did not see the damage), each move request scans one more such
// segment, the damage is reported once its segment is scanned, a freeze
// is not answered as final before all are, and the destination accepts
// the copy carrying the damage; without the scans the copy would hold a
// corrupt record the source does not report, refused at every attempt.
func TestDamageUnderASegmentIndexIsFoundBeforeAMove(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	source := c.owners(leader, "t")[0]
	cfg := c.configs[source]
	cfg.Log.HWMLagBytesMax, cfg.Log.HWMLagMsMax = 0, 0
	cfg.Log.SegmentBytes = 4 << 10 // a few records a segment: record-07 lands in a sealed one
	require.True(t, cfg.Log.SegmentIndexFiles, "on by default")
	c.configs[source] = cfg
	c.crash(source)
	c.tickUntilServing(source)
	padding := string(bytes.Repeat([]byte{'.'}, 600))
	for i := range 20 {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("record-%02d%s", i, padding))).Err)
	}
	require.NoError(t, c.nodes[source].Close()) // a clean stop: the index files stay (a crash may lose them, unsynced)
	damagePayload(t, c.disks[source], PartitionDir("t", 0), corruptPayload)
	c.start(source)
	c.tickUntilServing(source)
	requireUnreadable(t, c, source, 7, "a read verifies the frame")

	n := c.nodes[source]
	p := n.partitions[partitionKey{"t", 0}]
	require.True(t, p.log.Unverified(), "recovery took the sealed segments from their indexes")
	sealed := len(p.log.Segments()) - 1
	require.Greater(t, sealed, 2, "the records span sealed segments")
	n.beginFreeze(p, "probe", 1) // a freeze, to see when a state would be final
	for range sealed - 1 {
		status, err := n.moveStatus(statusOf(n, "t", 0, "", 0))
		require.NoError(t, err)
		require.True(t, p.log.Unverified(), "one segment a request")
		require.False(t, n.sourceState(p, p.log, "probe", 1).Frozen, "no final state before every segment is verified")
		require.LessOrEqual(t, status.(msg.MoveSourceState).CorruptCount, uint64(1))
	}
	sourceReportsRecord7(t, c, source) // the last request scanned the last one
	require.False(t, p.log.Unverified())
	require.True(t, n.sourceState(p, p.log, "probe", 1).Frozen)
	n.endFreeze(p)
	target := moveWithGap(t, c, leader, source)
	for _, i := range []int{0, 6, 8, 19} {
		replayed := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
		require.NoError(t, replayed.Err)
		require.Equal(t, fmt.Sprintf("record-%02d%s", i, padding), string(replayed.Result.(msg.ReplayResult).Message.Payload))
	}
}

// sourceReportsRecord7 asks source for partition 0's move status and
// checks that it reports offset 7, and only it, corrupt.
func sourceReportsRecord7(t *testing.T, c *clusterHarness, source string) msg.MoveSourceState {
	t.Helper()
	status, err := c.nodes[source].moveStatus(statusOf(c.nodes[source], "t", 0, "", 0))
	require.NoError(t, err)
	state := status.(msg.MoveSourceState)
	require.Equal(t, uint64(1), state.CorruptCount)
	require.Equal(t, []uint64{7}, state.CorruptOffsets)
	return state
}

// moveWithGap moves partition 0 from source to another node, checks that
// the new owner answers offset 7 as lost, and returns it.
func moveWithGap(t *testing.T, c *clusterHarness, leader, source string) string {
	t.Helper()
	target := c.otherThan(source)
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target })
	c.tick(100)
	requireUnreadable(t, c, target, 7, "the new owner serves the same gap")
	return target
}
