package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
	"narad/storage"
)

// installedUnflipped moves partition 0 of "t" (records r0.. written at the
// source) to another node whose proposals never reach the leader: the
// copy is verified and installed, the flip proposed and lost.
func installedUnflipped(t *testing.T, records int) (c *clusterHarness, leader, source, target string) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	source = c.owners(leader, "t")[0]
	target = c.otherThan(source)
	for i := range records {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("r%d", i))).Err)
	}
	c.drop = func(env msg.Envelope) bool { // the target's proposals never reach the leader
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.From == target && raft.Message.GetType() == raftpb.MsgProp
	}
	c.startMove(leader, "t", 0, target)
	sessions := c.nodes[target].MoveSessions()
	require.Len(t, sessions, 1)
	require.Equal(t, "flip", sessions[0].Phase, "copied, verified, installed; the flip is not applied")
	_, err := c.disks[target].Stat(PartitionDir("t", 0))
	require.NoError(t, err, "the copy is installed")
	require.Equal(t, 1, c.nodes[target].Stats().MoveSessions, "the metrics count the session")
	require.Equal(t, 1, c.nodes[source].Stats().FrozenPartitions, "and the source's frozen partition")
	return c, leader, source, target
}

// requireRecordsAt replays partition 0 of "t" at node: r0 .. r(count-1).
func requireRecordsAt(t *testing.T, c *clusterHarness, node string, count int) {
	t.Helper()
	for i := range count {
		r := c.do(node, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
		require.NoError(t, r.Err, "offset %d", i)
		result, _ := r.Result.(msg.ReplayResult)
		require.NotNil(t, result.Message, "offset %d acknowledged at the source is lost at %s (%+v)", i, node, r.Result)
		require.Equal(t, fmt.Sprintf("r%d", i), string(result.Message.Payload))
	}
}

// reinstallAfterCrash: the target installs its copy and proposes the flip
// (dropped on its way), crashes, restarts, and its new session of the same
// move reaches its finalize job, which the harness holds.
func reinstallAfterCrash(t *testing.T) (c *clusterHarness, leader, source, target string, out heldJob) {
	c, leader, source, target = installedUnflipped(t, 5)
	c.crash(target)
	c.holdJobs = true
	c.tickUntil(100, 200, func() bool { return len(c.held) > 0 })
	out = c.held[0]
	require.Same(t, c.nodes[target], out.node)
	return c, leader, source, target, out
}

// failHeldJob runs the held finalize job on its damaged copy and hands
// its failure back to the node.
func failHeldJob(t *testing.T, c *clusterHarness, target string, out heldJob) {
	damageStaged(t, c, target, out)
	out.job.Run()
	require.Error(t, out.job.pending.job.err, "the damaged copy fails verification")
	out.node.JobDone(out.job)
	c.held, c.holdJobs = nil, false
}

// damageStaged models media damage on the destination's disk in the staged
// copy (the case docs/architecture.md says sends the session back to copy).
func damageStaged(t *testing.T, c *clusterHarness, target string, out heldJob) {
	job := out.job.pending.job
	require.NoError(t, job.staged.Sync())
	files, err := c.disks[target].List(job.stagedDir)
	require.NoError(t, err)
	for _, f := range files {
		if info, err := c.disks[target].Stat(job.stagedDir + "/" + f); err == nil && info.Size > 40 {
			require.NoError(t, c.disks[target].FlipDurableByte(job.stagedDir+"/"+f, 30))
			return
		}
	}
	t.Fatal("no staged segment to damage")
}

// TestAFailedReinstallKeepsTheEarlierInstallForALateFlip: the earlier
// incarnation's flip applies while the new job is out (the path
// keepOrphanedJob exists for) and the job's copy fails its verification
// (media damage on the destination): the install it replaced, the one the
// flip was proposed for, must come back, or the new owner serves an empty
// log and the source's copy is swept (move review, high).
func TestAFailedReinstallKeepsTheEarlierInstallForALateFlip(t *testing.T) {
	c, leader, source, target, out := reinstallAfterCrash(t)
	c.drop = nil
	c.proposeFlip(leader, source, target) // the earlier incarnation's flip, applied late
	c.tickUntil(100, 100, func() bool { return c.owners(target, "t")[0] == target })

	failHeldJob(t, c, target, out)
	c.tick(100)
	requireRecordsAt(t, c, target, 5)
}

// TestAFailedReinstallBeforeALateFlipKeepsTheEarlierInstall: as above, but
// the job fails before the late flip applies; the session restarts and
// the flip then applies.
func TestAFailedReinstallBeforeALateFlipKeepsTheEarlierInstall(t *testing.T) {
	c, leader, source, target, out := reinstallAfterCrash(t)
	failHeldJob(t, c, target, out)
	c.drop = nil
	c.proposeFlip(leader, source, target) // the earlier incarnation's flip, applied late
	c.settle()
	require.Equal(t, target, c.owners(target, "t")[0])
	c.tick(100)
	requireRecordsAt(t, c, target, 5)
}

// TestATopicDeletedWhileAJobIsOutIsPurgedWhenTheJobReturns: a topic
// deleted while a move's finalize job is out leaves the job's partition
// directory to the job, which renames and reads it on another goroutine:
// the loop removing it meanwhile raced the job (and could leave the
// install the job puts back on failure). When the job returns, here
// failed after putting back the install it replaced, its directory and
// then the topic's go.
func TestATopicDeletedWhileAJobIsOutIsPurgedWhenTheJobReturns(t *testing.T) {
	c, leader, _, target, out := reinstallAfterCrash(t)
	c.drop = nil
	require.NoError(t, c.do(leader, msg.DeleteTopic{Name: "t"}).Err)
	c.settle()
	_, err := c.disks[target].Stat(PartitionDir("t", 0))
	require.NoError(t, err, "the directory the job works in is left to it")

	failHeldJob(t, c, target, out)
	c.tick(100)
	_, err = c.disks[target].Stat(PartitionDir("t", 0))
	require.ErrorIs(t, err, storage.ErrNotExist, "the install the failed job put back goes with the job")
	_, err = c.disks[target].Stat(topicsDir + "/t")
	require.ErrorIs(t, err, storage.ErrNotExist, "and the deleted topic's directory after it")
}

// TestAnAdoptedCopyKeepsTheNodeWithinItsCapOfOpenLogs: a move's verified
// copy is adopted open, past the cap of open logs; the node closes its
// least recently used log at once, not at its next Advance (several jobs
// returning in one round took it that many past the cap: storage review).
func TestAnAdoptedCopyKeepsTheNodeWithinItsCapOfOpenLogs(t *testing.T) {
	c, leader, source, target := pinnedForAMove(t, "r")
	cfg := c.configs[target]
	cfg.OpenLogsMax = 1
	c.configs[target] = cfg
	c.crash(target) // starts again with the cap of one
	c.settle()
	mine := slices.IndexFunc(c.owners(leader, "t"), func(owner string) bool { return owner == target })
	require.GreaterOrEqual(t, mine, 0, "the target owns a partition of its own")
	require.NoError(t, c.do(target, producePinned("t", mine, "own")).Err) // its one open log
	require.Len(t, c.nodes[target].store.OpenDirs(), 1)

	c.holdJobs = true
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return len(c.held) > 0 })
	out := c.held[0]
	out.job.Run()
	require.NoError(t, out.job.pending.job.err)
	out.node.JobDone(out.job)
	require.LessOrEqual(t, len(c.nodes[target].store.OpenDirs()), 1, "within the cap as soon as the copy is adopted")
	c.held, c.holdJobs = nil, false
	c.settle()
	require.Equal(t, target, c.owners(leader, "t")[0], "the move ends")
	replay := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: 0})
	require.NoError(t, replay.Err)
	require.Equal(t, "r", string(replay.Result.(msg.ReplayResult).Message.Payload), "the copy closed past the cap opens again (moved from %s)", source)
}
