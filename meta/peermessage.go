package meta

import (
	"go.etcd.io/raft/v3/confchange"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// sentBetweenReplicas reports whether a raft message of the type is one
// replica sends another. Every other type is local to a replica (a
// tick's MsgBeat, a campaign's MsgHup, storage and status reports):
// stepped from a peer it would drive this replica's raft from outside, or
// make it panic. (A switch, not a map: every message received asks.)
func sentBetweenReplicas(kind raftpb.MessageType) bool {
	switch kind {
	case raftpb.MsgApp, raftpb.MsgAppResp, raftpb.MsgVote, raftpb.MsgVoteResp,
		raftpb.MsgPreVote, raftpb.MsgPreVoteResp, raftpb.MsgSnap, raftpb.MsgHeartbeat,
		raftpb.MsgHeartbeatResp, raftpb.MsgTransferLeader, raftpb.MsgTimeoutNow, raftpb.MsgProp:
		return true
	}
	return false
}

// checkPeerMessage returns why raft must not step msg from a peer, or "".
// Raft trusts its peers and panics on some fields no replica sends (etcd
// raft's own asserts), so a message bad by accident or by forgery would
// end the process; refused here, it is counted and dropped like any bad
// peer message. The checks are what raft would otherwise panic on:
//   - a message of a type only a replica sends itself, or from raft id 0
//     or, but for a proposal (relayed towards the leader with its
//     proposer's id, it may come back), from this replica;
//   - a message from a replica removed from the group (a decommissioned
//     node still running, or its proposal relayed by another): raft
//     would take its proposals, and its votes could disturb elections;
//   - a proposal without entries, or one carrying a configuration change
//     (a follower forwards commands only; configuration changes are
//     proposed at the leader, ProposeConfChange);
//   - a heartbeat whose commit index is past this replica's last index (a
//     leader never sends one above what the follower acknowledged), or an
//     append's acknowledgement past the leader's last index (a follower
//     acknowledges only entries the leader sent it, after persisting its
//     own);
//   - a snapshot without metadata, or whose configuration does not
//     restore.
func (m *Meta) checkPeerMessage(msg *raftpb.Message) string {
	switch from := msg.GetFrom(); {
	case !sentBetweenReplicas(msg.GetType()):
		return "is not sent between replicas"
	case from == 0 || (from == m.self.RaftID && msg.GetType() != raftpb.MsgProp):
		return "names no other replica as its sender" // a proposal of this replica's may come back relayed
	case m.state.removedRaftIDs[from]:
		// A decommissioned node left running: its proposals, relayed by
		// a replica that still takes it for the leader, would apply.
		return "comes from a replica removed from the group"
	}
	switch msg.GetType() {
	case raftpb.MsgProp:
		return checkForwardedProposal(msg)
	case raftpb.MsgHeartbeat:
		if last, err := m.storage.LastIndex(); err != nil || msg.GetCommit() > last {
			return reasonCommitsPastLog
		}
	case raftpb.MsgApp:
		if last, err := m.storage.LastIndex(); m.logLostAt > 0 && msg.GetTerm() == m.logLostTerm && (err != nil || last < m.logLostAt) {
			return "comes from a leader that takes this replica's lost log for current"
		}
	case raftpb.MsgAppResp:
		if last, err := m.storage.LastIndex(); !msg.GetReject() && (err != nil || msg.GetIndex() > last) {
			return "acknowledges entries past this replica's log"
		}
	case raftpb.MsgSnap:
		return checkSnapshot(msg.GetSnapshot())
	case raftpb.MsgVote, raftpb.MsgPreVote:
		return m.voteOfAnotherDataDir(msg)
	}
	return ""
}

// reasonCommitsPastLog is checkPeerMessage's reason for a heartbeat
// that commits past this replica's log (Meta.LogLost).
const reasonCommitsPastLog = "commits past this replica's log"

func checkForwardedProposal(msg *raftpb.Message) string {
	if len(msg.GetEntries()) == 0 {
		return "carries no entry"
	}
	for _, entry := range msg.GetEntries() {
		if entry.GetType() != raftpb.EntryNormal {
			return "carries a configuration change"
		}
	}
	return ""
}

// checkSnapshot refuses a snapshot raft could not restore: raft restores
// its configuration with confchange.Restore and panics if that fails.
func checkSnapshot(snapshot *raftpb.Snapshot) string {
	metadata := snapshot.GetMetadata()
	if metadata == nil || metadata.GetConfState() == nil {
		return "carries no snapshot metadata"
	}
	changer := confchange.Changer{Tracker: tracker.MakeProgressTracker(1, 0), LastIndex: metadata.GetIndex()}
	if _, _, err := confchange.Restore(changer, metadata.GetConfState()); err != nil {
		return "carries a configuration that does not restore: " + err.Error()
	}
	return ""
}
