package meta

import (
	"bytes"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
)

// Votes of a replica that lost its store.
//
// Raft counts on a voter's log holding what the voter acknowledged. A
// replica started again on an empty store under its old raft id (its disk
// lost, its data directory replaced) holds none of it, and grants its
// vote to any candidate: with it, a candidate whose log lacks entries
// that this replica and the old leader committed can win an election,
// lead without them, and contradict the old leader's committed log when
// it comes back (TestAWipedReplicaDoesNotElectALeaderLackingCommittedEntries).
//
// The metastore keeps the data directory of each member's first
// heartbeat (Member.DataID), and each replica knows its own
// (Config.DataID). A candidate names, in each vote and pre-vote request,
// the directory its state knows the recipient by; a replica on another
// directory refuses the request. A member that never beat (a fresh
// cluster's first elections, a joiner) is named by none, and its vote is
// as raft says: it never acknowledged anything under that id.

// voteContextPrefix starts the context of a vote request that names the
// voter's data directory. Raft gives a vote request's context a meaning
// of its own only in a leadership transfer, which this never touches.
const voteContextPrefix = "narad-voter-data-id:"

// nameVoters writes into each outgoing vote and pre-vote request the data
// directory this replica's state knows its recipient by.
func (m *Meta) nameVoters(messages []*raftpb.Message) {
	for _, message := range messages {
		if kind := message.GetType(); (kind != raftpb.MsgVote && kind != raftpb.MsgPreVote) || len(message.GetContext()) > 0 {
			continue // not a vote request, or a leadership transfer's campaign (raft's own context)
		}
		peer, found := m.PeerByRaftID(message.GetTo())
		if !found {
			continue
		}
		if member, known := m.state.Member(peer.ID); known && member.DataID != "" {
			message.Context = []byte(voteContextPrefix + member.DataID)
		}
	}
}

// voteOfAnotherDataDir returns why a vote or pre-vote request is refused,
// or "": it names a data directory other than this replica's.
func (m *Meta) voteOfAnotherDataDir(message *raftpb.Message) string {
	named, ok := bytes.CutPrefix(message.GetContext(), []byte(voteContextPrefix))
	if !ok || m.config.DataID == "" || string(named) == m.config.DataID {
		return ""
	}
	return fmt.Sprintf("asks for the vote of data directory %q, and this replica runs on %q: it holds nothing that directory acknowledged",
		named, m.config.DataID)
}
