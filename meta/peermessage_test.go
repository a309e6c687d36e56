package meta

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// Property: raft messages no replica sends, or whose fields raft would
// panic on, are refused with ErrBadPeerMessage and change nothing: each
// of them made etcd raft panic (the process would end on one forged or
// corrupted message), and the cluster commits as before afterwards.
func TestStepRefusesMessagesRaftWouldPanicOn(t *testing.T) {
	c := newTestCluster(t, 3, 1, true, nil)
	leader := c.waitLeader()
	c.stabilize()
	follower := c.meta(otherThan(c.ids, leader)[0])
	leaderMeta := c.meta(leader)
	term := follower.raw.BasicStatus().GetTerm()
	message := func(kind raftpb.MessageType, to, from *Meta, fill func(*raftpb.Message)) *raftpb.Message {
		toID, fromID := to.self.RaftID, from.self.RaftID
		m := &raftpb.Message{Type: &kind, To: &toID, From: &fromID, Term: &term}
		if fill != nil {
			fill(m)
		}
		return m
	}
	far := uint64(1 << 40)
	confChange := raftpb.EntryConfChange
	badVoters := &raftpb.ConfState{Learners: []uint64{2}} // learners and no voter
	zero := uint64(0)
	for name, m := range map[string]*raftpb.Message{
		"heartbeat committing past the log": message(raftpb.MsgHeartbeat, follower, leaderMeta, func(m *raftpb.Message) { m.Commit = &far }),
		"empty proposal":                    message(raftpb.MsgProp, leaderMeta, follower, nil),
		"forwarded configuration change": message(raftpb.MsgProp, leaderMeta, follower, func(m *raftpb.Message) {
			m.Entries = []*raftpb.Entry{{Type: &confChange, Data: []byte{0xff, 0xff}}}
		}),
		"acknowledgement past the log": message(raftpb.MsgAppResp, leaderMeta, follower, func(m *raftpb.Message) { m.Index = &far }),
		"snapshot without metadata":    message(raftpb.MsgSnap, follower, leaderMeta, func(m *raftpb.Message) { m.Snapshot = &raftpb.Snapshot{} }),
		"snapshot whose configuration does not restore": message(raftpb.MsgSnap, follower, leaderMeta, func(m *raftpb.Message) {
			index := uint64(1 << 20)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: &index, Term: &term, ConfState: badVoters}}
		}),
		"a replica's own campaign":  message(raftpb.MsgHup, follower, leaderMeta, nil),
		"a replica's own heartbeat": message(raftpb.MsgBeat, leaderMeta, follower, nil),
		"no sender":                 message(raftpb.MsgHeartbeat, follower, leaderMeta, func(m *raftpb.Message) { m.From = &zero }),
	} {
		to := follower
		if m.GetTo() == leaderMeta.self.RaftID {
			to = leaderMeta
		}
		require.NotPanics(t, func() {
			require.ErrorIs(t, to.Step(m), ErrBadPeerMessage, name)
		}, name)
	}
	c.stabilize()
	require.Equal(t, leader, c.waitLeader(), "nothing refused changed the leadership")
	commit, lost := follower.LogLost()
	require.True(t, lost, "a heartbeat committing past the log says the replica lost what it had persisted")
	require.Equal(t, far, commit)
	_, lost = leaderMeta.LogLost()
	require.False(t, lost, "no other refusal says so")
	c.heartbeatAll(leader, 10)
	c.requireApplied(c.propose(leader, createTopic("after", leader)), nil)
}

// Property: once a replica's removal applied, what it sends is refused:
// a proposal of a decommissioned node left running (sent to the leader
// it still knows, or relayed by a follower with its raft id) never
// applies. Raft itself takes a proposal from anyone.
func TestARemovedReplicasProposalsAreRefused(t *testing.T) {
	c := newTestCluster(t, 4, 31, true, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	victim := otherThan(c.ids, leader)[0]
	c.requireApplied(c.proposeConfChange(leader, ConfChange{Kind: RemoveVoter, Peer: Peer{ID: victim}}), nil)
	c.stabilize()
	require.True(t, c.meta(victim).raw.BasicStatus().Lead != 0, "the removed replica still knows a leader, so it can propose")
	_, err := c.meta(victim).Propose(createTopic("from-removed", leader))
	require.NoError(t, err)
	c.stabilize()
	_, found := c.meta(leader).State().Topic("from-removed")
	require.False(t, found, "the removed replica's proposal applied")

	follower := c.meta(otherThan(c.ids, leader, victim)[0])
	data, err := EncodeCommand(ProposalID{Node: victim, Sequence: 1}, createTopic("relayed", leader))
	require.NoError(t, err)
	kind, from, to := raftpb.MsgProp, c.nodes[victim].peer.RaftID, follower.self.RaftID
	relayed := &raftpb.Message{Type: &kind, From: &from, To: &to, Entries: []*raftpb.Entry{{Data: data}}}
	require.ErrorIs(t, follower.Step(relayed), ErrBadPeerMessage)
	c.stabilize()
	_, found = c.meta(leader).State().Topic("relayed")
	require.False(t, found)
	c.requireApplied(c.propose(leader, createTopic("after", leader)), nil)
}

// Property: once a heartbeat said this replica lost entries it had
// acknowledged, that term's appends are refused (its leader would probe
// the replica without end: it never backs off below what the replica
// acknowledged); a later term's leader probes afresh and is heard.
func TestALeaderThatTakesALostLogForCurrentIsNotHeard(t *testing.T) {
	c := newTestCluster(t, 3, 1, true, nil)
	leader := c.waitLeader()
	c.stabilize()
	follower := c.meta(otherThan(c.ids, leader)[0])
	from, to := c.meta(leader).self.RaftID, follower.self.RaftID
	term := follower.raw.BasicStatus().GetTerm()
	far, app, beat := uint64(1<<40), raftpb.MsgApp, raftpb.MsgHeartbeat
	appendAt := func(term uint64) *raftpb.Message {
		return &raftpb.Message{Type: &app, From: &from, To: &to, Term: &term, Index: &far, LogTerm: &term}
	}
	require.Empty(t, follower.checkPeerMessage(appendAt(term)), "heard before anything said its log was lost")

	require.ErrorIs(t, follower.Step(&raftpb.Message{Type: &beat, From: &from, To: &to, Term: &term, Commit: &far}), ErrBadPeerMessage)
	require.ErrorIs(t, follower.Step(appendAt(term)), ErrBadPeerMessage)
	require.Empty(t, follower.checkPeerMessage(appendAt(term+1)), "a later term's leader is heard")
}
