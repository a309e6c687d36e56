package node

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// TestANodeOnAnotherDataDirectoryServesNothing: a member's node id
// started on another data directory (an operator's mistake; reproduced on
// real processes, where a node restarted on an empty directory, once a
// new leader caught its replica up, took produces at offsets that held
// acknowledged records on its own disk, which were gone once it was back
// there). Its beats must not count, and it must serve nothing, saying why.
// The harness keeps the node's disk and metastore file: only the data
// directory's id differs, which is what the node and the metastore see.
func TestANodeOnAnotherDataDirectoryServesNothing(t *testing.T) {
	c := newClusterHarness(t, 3)
	c.reconfigure(func(cfg *Config) { cfg.DataID = "data-of-" + cfg.NodeID })
	leader := c.electWithTopic("t", 3)
	follower := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), follower)
	require.GreaterOrEqual(t, index, 0, "sanity: the follower owns a partition")
	require.NoError(t, c.do(follower, producePinned("t", index, "acknowledged")).Err)
	member, _ := c.nodes[leader].meta.State().Member(follower)
	require.Equal(t, "data-of-"+follower, member.DataID, "the member is known by its data directory")

	cfg := c.configs[follower]
	cfg.DataID = "another-directory"
	c.configs[follower] = cfg
	require.NoError(t, c.nodes[follower].Abandon())
	c.start(follower)
	for range 20 {
		c.tick(250)
	}

	serving := c.nodes[follower].Serving()
	require.Error(t, serving)
	require.Contains(t, serving.Error(), "start "+follower+" on its own data directory")
	require.Contains(t, serving.Error(), `write "data-of-`+follower+`" back`, "the id to restore, if this is its directory")
	refused := c.do(follower, producePinned("t", index, "into the wrong directory"))
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "%+v", refused)
	member, _ = c.nodes[leader].meta.State().Member(follower)
	require.Equal(t, "data-of-"+follower, member.DataID, "the member keeps its data directory")
	require.False(t, member.Alive, "the beats from another directory do not count: it was marked dead")
	forwarded := c.do(leader, producePinned("t", index, "forwarded"))
	require.Error(t, forwarded.Err, "a produce for its partition is refused, not written into the other directory")

	cfg.DataID = "data-of-" + follower // back on its own directory
	c.configs[follower] = cfg
	require.NoError(t, c.nodes[follower].Abandon())
	c.start(follower)
	for range 20 {
		c.tick(250)
	}
	require.NoError(t, c.nodes[follower].Serving())
	require.NoError(t, c.do(follower, producePinned("t", index, "back home")).Err)
}

// A node whose metastore replica lost entries it had persisted (its node
// id started on an empty data directory) is stuck while the leader that
// knew the old replica leads: that leader's heartbeats commit past its
// log, and it takes the replica for current. The node said it was not a
// voter; it must say what happened.
func TestANodeWhoseReplicaLostItsLogSaysSo(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	follower := c.otherThan(leader)
	require.NoError(t, c.nodes[follower].Serving())

	kind, term := raftpb.MsgHeartbeat, c.nodes[follower].meta.Status().Term
	from, to, commit := meta.RaftIDOf(leader), meta.RaftIDOf(follower), c.nodes[follower].meta.AppliedIndex()+100
	beat := &raftpb.Message{Type: &kind, From: &from, To: &to, Term: &term, Commit: &commit}
	c.nodes[follower].Step(msg.Envelope{From: leader, To: follower, Message: msg.RaftMessage{Message: beat}})
	serving := c.nodes[follower].Serving()
	require.Error(t, serving)
	require.Contains(t, serving.Error(), "lacks entries it had persisted")
	require.Contains(t, serving.Error(), "start "+follower+" on its own data directory")
}

// A node started again is not ready until the metastore applied a
// heartbeat of this start: before, its readiness said ready while every
// write into its partitions was refused, for a second or two, as "lost
// contact with the metastore" (a user's tour of cluster operations).
func TestARestartedNodeIsReadyOnceItsHeartbeatApplied(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	follower := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), follower)
	require.NoError(t, c.nodes[follower].Serving())

	require.NoError(t, c.nodes[follower].Abandon())
	c.nowMs += c.configs[follower].MemberDeadAfterMs / 2 // down a while, not yet marked dead
	c.start(follower)
	beats := true // the node's heartbeats are held back while the test looks at it
	c.drop = func(env msg.Envelope) bool {
		_, beat := env.Message.(msg.Heartbeat)
		return beat && env.From == follower && !beats
	}
	beats = false
	c.tickUntil(10, 300, func() bool { _, known := c.nodes[follower].meta.Leader(); return known })
	serving := c.nodes[follower].Serving()
	require.Error(t, serving, "ready while its writes are fenced")
	require.Contains(t, serving.Error(), "started again and waits for the metastore to apply its first heartbeat")
	refused := c.do(follower, producePinned("t", index, "fenced"))
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err))

	beats = true
	c.tickUntil(10, 300, func() bool { return c.nodes[follower].Serving() == nil })
	require.NoError(t, c.nodes[follower].Serving())
	require.NoError(t, c.nodes[follower].writable(), "ready means it may write")
	require.NoError(t, c.do(follower, producePinned("t", index, "once ready")).Err)
}

// A move into a node whose member the metastore knows by another data
// directory must not complete: the node serves nothing, and a flip would
// make it the owner of records that live only in the wrong directory (the
// source lets its copy go), so that its own directory, once it is back
// there, serves the partition empty. Reproduced with the node restarted on
// an empty directory and its replica caught up by a new leader, while the
// member is still listed alive.
func TestAMoveIntoANodeOnAnotherDataDirectoryDoesNotComplete(t *testing.T) {
	c := newClusterHarness(t, 3)
	c.reconfigure(func(cfg *Config) { cfg.DataID, cfg.MemberDeadAfterMs = "data-of-"+cfg.NodeID, 30_000 })
	leader := c.electWithTopic("t", 3)
	index, source, target := c.partitionAwayFromLeader(leader, "acknowledged")

	elsewhere := c.configs[target]
	elsewhere.DataID = "another-directory"
	require.NoError(t, c.nodes[target].Abandon())
	c.disks[target] = storage.NewMemFS(rand.New(rand.NewPCG(99, 1)))
	c.metaPaths[target] = filepath.Join(t.TempDir(), "elsewhere.db")
	c.configs[target] = elsewhere
	c.start(target)

	// A new leader, which knows nothing of the old replica, catches it up.
	// It is elected by a transfer: the replica on another directory votes
	// for no candidate that names its member's directory (meta/votes.go).
	require.NoError(t, c.nodes[leader].meta.TransferLeadership(source))
	c.tickUntil(100, 300, func() bool {
		now, ok := c.leader()
		return ok && now != leader && c.nodes[target].otherDataDirError() != nil
	})
	now, _ := c.leader()
	member, _ := c.nodes[now].meta.State().Member(target)
	require.True(t, member.Alive, "sanity: the member is still listed alive")

	c.startMove(now, "t", index, target)
	for range 100 {
		c.tick(100)
	}
	require.Equal(t, source, c.owners(now, "t")[index], "a node on another data directory took a partition over")
	_, err := c.nodes[target].fs.Stat(PartitionDir("t", index))
	require.Error(t, err, "nothing of the partition was installed in the other directory")

	replayed := c.do(source, msg.Replay{Topic: "t", Partition: index, Offset: 0})
	require.NoError(t, replayed.Err)
	require.Equal(t, "acknowledged", string(replayed.Result.(msg.ReplayResult).Message.Payload), "the source keeps the partition's records")
}

// Readiness shares the write fence, no more (docs/api.md, /readyz): a
// node started again within half of MemberDeadAfterMs of its last
// applied heartbeat is ready, and may write, on its earlier start's
// heartbeat, before any of this start applied; one started again later
// waits for a heartbeat of this start.
func TestANodeStartedAgainSoonIsReadyOnItsEarlierStartsHeartbeat(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	follower := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), follower)
	require.NoError(t, c.nodes[follower].Abandon())
	c.start(follower)
	c.drop = func(env msg.Envelope) bool {
		_, beat := env.Message.(msg.Heartbeat)
		return beat && env.From == follower
	}
	c.tickUntil(10, 300, func() bool { _, known := c.nodes[follower].meta.Leader(); return known })
	member, _ := c.nodes[follower].meta.State().Member(follower)
	require.NotEqual(t, c.nodes[follower].incarnation, member.Incarnation, "sanity: no heartbeat of this start applied")
	require.NoError(t, c.nodes[follower].Serving())
	require.NoError(t, c.do(follower, producePinned("t", index, "on the earlier start's heartbeat")).Err)
}

// A replica that lost entries it had acknowledged (its node on an empty
// data directory) is not probed without end: the leader never backs off
// below what the replica acknowledged, so each rejection of its append
// brought the same append back at once (986 appends in five seconds of
// the harness, as fast as the network carries them). The replica drops
// that leader's appends; a later leader catches it up (above).
func TestAReplicaThatLostItsLogIsNotProbedWithoutEnd(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	follower := c.otherThan(leader)
	appends := 0
	c.drop = func(env msg.Envelope) bool {
		if r, ok := env.Message.(msg.RaftMessage); ok && env.To == follower && r.Message.GetType() == raftpb.MsgApp {
			appends++
		}
		return appends > 5_000 // ends the storm, should there be one
	}
	require.NoError(t, c.nodes[follower].Abandon())
	c.disks[follower] = storage.NewMemFS(rand.New(rand.NewPCG(99, 1)))
	c.metaPaths[follower] = filepath.Join(t.TempDir(), "elsewhere.db")
	c.start(follower)
	for range 50 {
		c.tick(100) // member heartbeats make entries, which the leader appends
	}
	require.Less(t, appends, 50, "the leader probed the replica that lost its log without end")
	_, lost := c.nodes[follower].meta.LogLost()
	require.True(t, lost)
}
