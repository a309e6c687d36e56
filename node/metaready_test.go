package node

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// A metastore Ready that carries only Raft heartbeats has nothing for the
// store: the node persists it itself and hands out no Sync, so that a
// cluster at rest makes no sync round of every heartbeat and its answer.
// A Ready that appends entries still carries the metastore's Sync.
func TestAHeartbeatOnlyMetastoreReadyCarriesNoSync(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	c.settle()
	heartbeatReadys, answerReadys := 0, 0
	for range 20 {
		c.nowMs += c.configs[leader].MetaTickIntervalMs
		c.nodes[leader].Tick(c.nowMs) // the leader alone: the followers' clocks stand still
		for c.nodes[leader].HasReady() {
			rd := c.nodes[leader].Ready()
			if onlyRaft(rd.Messages, raftpb.MsgHeartbeat) {
				heartbeatReadys++
				require.Empty(t, rd.Syncs, "a Ready of heartbeats alone")
			}
			c.finish(c.nodes[leader], rd)
		}
		for _, id := range c.except(leader) {
			for c.nodes[id].HasReady() {
				rd := c.nodes[id].Ready()
				if onlyRaft(rd.Messages, raftpb.MsgHeartbeatResp) {
					answerReadys++
					require.Empty(t, rd.Syncs, "a Ready of heartbeat answers alone")
				}
				if onlyRaft(rd.Messages, raftpb.MsgAppResp) {
					require.True(t, rd.Metastore(), "a Ready that appended entries persists them")
				}
				c.finish(c.nodes[id], rd)
			}
		}
	}
	require.GreaterOrEqual(t, heartbeatReadys, 10, "Readys of the leader's heartbeats alone")
	require.GreaterOrEqual(t, answerReadys, 20, "Readys of the followers' answers alone")
	reply := c.await(c.send(leader, msg.CreateTopic{Name: "after-heartbeats", Partitions: 3}), 100, 50)
	require.NoError(t, reply.Err, "the cluster still commits")
}

// onlyRaft reports whether envelopes is not empty and holds Raft messages
// of one type alone.
func onlyRaft(envelopes []msg.Envelope, kind raftpb.MessageType) bool {
	for _, env := range envelopes {
		raft, ok := env.Message.(msg.RaftMessage)
		if !ok || raft.Message.GetType() != kind {
			return false
		}
	}
	return len(envelopes) > 0
}
