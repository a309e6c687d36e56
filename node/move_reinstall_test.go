package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// reinstallAfterCrash: the target installs its copy and proposes the flip
// (dropped on its way), crashes, restarts, and its new session of the same
// move reaches its finalize job, which the harness holds.
func reinstallAfterCrash(t *testing.T) (c *clusterHarness, leader, source, target string, out heldJob) {
	c = newClusterHarness(t, 3)
	leader = c.electWithTopic("t", 3)
	source = c.owners(leader, "t")[0]
	target = c.otherThan(source)
	for i := range 5 {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("r%d", i))).Err)
	}
	c.drop = func(env msg.Envelope) bool { // the target's proposals never reach the leader
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.From == target && raft.Message.GetType() == raftpb.MsgProp
	}
	c.startMove(leader, "t", 0, target)
	require.Equal(t, "flip", c.nodes[target].MoveSessions()[0].Phase, "installed, the flip proposed")
	_, err := c.disks[target].Stat(PartitionDir("t", 0))
	require.NoError(t, err, "the earlier incarnation's verified copy is installed")

	c.crash(target)
	c.holdJobs = true
	c.tickUntil(100, 200, func() bool { return len(c.held) > 0 })
	out = c.held[0]
	require.Same(t, c.nodes[target], out.node)
	return c, leader, source, target, out
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

	damageStaged(t, c, target, out)
	out.job.Run()
	require.Error(t, out.job.pending.job.err, "the damaged copy fails verification")
	out.node.JobDone(out.job)
	c.held, c.holdJobs = nil, false
	c.tick(100)

	for i := range 5 {
		r := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
		require.NoError(t, r.Err, "offset %d", i)
		result, _ := r.Result.(msg.ReplayResult)
		require.NotNil(t, result.Message, "offset %d acknowledged at the source is lost at the new owner (%+v)", i, r.Result)
		require.Equal(t, fmt.Sprintf("r%d", i), string(result.Message.Payload))
	}
}

// TestAFailedReinstallBeforeALateFlipKeepsTheEarlierInstall: as above, but
// the job fails before the late flip applies; the session restarts and
// the flip then applies.
func TestAFailedReinstallBeforeALateFlipKeepsTheEarlierInstall(t *testing.T) {
	c, leader, source, target, out := reinstallAfterCrash(t)
	damageStaged(t, c, target, out)
	out.job.Run()
	require.Error(t, out.job.pending.job.err)
	out.node.JobDone(out.job)
	c.held, c.holdJobs = nil, false
	c.drop = nil
	c.proposeFlip(leader, source, target) // the earlier incarnation's flip, applied late
	c.settle()
	require.Equal(t, target, c.owners(target, "t")[0])
	c.tick(100)
	for i := range 5 {
		r := c.do(target, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
		require.NoError(t, r.Err, "offset %d", i)
		result, _ := r.Result.(msg.ReplayResult)
		require.NotNil(t, result.Message, "offset %d acknowledged at the source is lost at the new owner (%+v)", i, r.Result)
		require.Equal(t, fmt.Sprintf("r%d", i), string(result.Message.Payload))
	}
}
