package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
	"narad/msg"
)

// TestAChangeSentWhileTheLeaderStallsAppliesOnceAtTheNextLeader: a topic
// change sent to a follower while the metastore leader stalls (its
// forwarded proposal held in the stalled leader's inbox) is proposed
// again once the follower applies the next leader's first entry, and
// answered before the proposal timeout (it used to wait it out and answer
// 503 "may still apply"). The held forward, handed on to the new leader
// after the client changed the topic again, changes nothing: a command
// applies only in the term it was proposed in (it used to set the
// retention back to the first value).
func TestAChangeSentWhileTheLeaderStallsAppliesOnceAtTheNextLeader(t *testing.T) {
	c := newClusterHarness(t, 3)
	oldLeader := c.electWithTopic("t", 3)
	follower := c.otherThan(oldLeader)
	var held []msg.Envelope
	c.drop = func(env msg.Envelope) bool {
		raftMessage, isRaft := env.Message.(msg.RaftMessage)
		if isRaft && env.From == follower && env.To == oldLeader && raftMessage.Message.GetType() == raftpb.MsgProp {
			held = append(held, env)
			return true
		}
		return false
	}
	hour, twoHours := int64(3_600_000), int64(7_200_000)
	first := c.send(follower, msg.AlterTopic{Name: "t", RetentionMs: &hour})
	c.settle()
	require.Len(t, held, 1, "the follower forwarded its proposal to the leader")
	c.cut[oldLeader] = true // stalled: nothing in or out
	c.drop = nil

	steps := int(c.configs[follower].ProposalTimeoutMs/100) - 1
	reply := c.await(first, 100, steps)
	require.NoError(t, reply.Err, "the change applies at the next leader")
	newLeader, ok := c.leader()
	require.True(t, ok)
	require.NotEqual(t, oldLeader, newLeader)
	require.NoError(t, c.do(follower, msg.AlterTopic{Name: "t", RetentionMs: &twoHours}).Err)

	late := handedOn(t, held[0], oldLeader, newLeader)
	require.NoError(t, c.nodes[newLeader].Step(late))
	c.tick(100)
	for _, id := range c.except(oldLeader) {
		record, found := c.nodes[id].meta.State().Topic("t")
		require.True(t, found)
		require.Equal(t, twoHours, record.RetentionMs, "the held proposal of the first change applied late on %s", id)
	}
}

// handedOn is a forwarded proposal relayed by from to the leader to, as a
// stalled leader that learns of its successor relays what it holds (the
// proposal keeps its proposer's raft id).
func handedOn(t *testing.T, env msg.Envelope, from, to string) msg.Envelope {
	message := env.Message.(msg.RaftMessage).Message
	data, err := meta.MarshalMessage(message)
	require.NoError(t, err)
	copied, err := meta.UnmarshalMessage(data)
	require.NoError(t, err)
	raftID := meta.RaftIDOf(to)
	copied.To = &raftID
	return msg.Envelope{From: from, To: to, Message: msg.RaftMessage{Message: copied}}
}

// TestAProposalASnapshotMayHoldIsNotProposedAgain: a follower whose
// proposal committed while it was cut off, and that then installs a later
// leader's snapshot holding it, learns no outcome for it (a snapshot
// reports none) though it applied an entry of a later term. Proposed
// again, it would apply twice: a create answered 409 for the topic it
// made. It is left to its proposal timeout (503 "may still apply").
func TestAProposalASnapshotMayHoldIsNotProposedAgain(t *testing.T) {
	c := newClusterHarness(t, 5)
	c.reconfigure(func(cfg *Config) {
		cfg.Meta.SnapshotEntries, cfg.Meta.SnapshotTailEntries = 4, 1
		cfg.ProposalTimeoutMs = 60_000
	})
	oldLeader := c.elect()
	follower := c.otherThan(oldLeader)
	forwarded := false // the follower is cut off right after its proposal leaves
	c.drop = func(env msg.Envelope) bool {
		raftMessage, isRaft := env.Message.(msg.RaftMessage)
		if isRaft && env.From == follower && raftMessage.Message.GetType() == raftpb.MsgProp {
			forwarded = true
			return false
		}
		return forwarded && (env.From == follower || env.To == follower)
	}
	created := c.send(follower, msg.CreateTopic{Name: "once", Partitions: 3})
	c.tickUntil(100, 20, func() bool { return forwarded })
	c.drop, c.cut[follower] = nil, true
	c.tickUntil(100, 50, func() bool { _, exists := c.nodes[oldLeader].meta.State().Topic("once"); return exists })

	c.cut[oldLeader] = true // the next leader's term, among the other three
	c.tickUntil(100, 100, func() bool { now, ok := c.leader(); return ok && now != oldLeader })
	newLeader, _ := c.leader()
	for i := range 6 { // entries past the snapshot interval: the log is compacted
		require.NoError(t, c.do(newLeader, msg.CreateTopic{Name: fmt.Sprintf("later-%d", i), Partitions: 3}).Err)
	}
	installed := c.nodes[follower].meta.SnapshotsInstalled()
	c.cut[follower] = false
	c.tickUntil(100, 100, func() bool { return c.nodes[follower].meta.SnapshotsInstalled() > installed })
	c.tick(100)
	_, exists := c.nodes[follower].meta.State().Topic("once")
	require.True(t, exists, "the snapshot holds the create")
	if reply, answered := c.replies[created]; answered {
		require.NotEqual(t, msg.CodeConflict, msg.CodeOf(reply.Err), "the create was proposed again: %v", reply.Err)
	}
	reply := c.await(created, 1_000, 61)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "its outcome is unknown here: %v", reply.Err)
}
