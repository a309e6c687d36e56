package meta

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// confContextVersion is the first byte of a configuration change's
// context.
const confContextVersion = 1

// confContext travels in raftpb.ConfChange.Context: who proposed the
// change and the whole change (with the peer's address).
type confContext struct {
	Proposal ProposalID `json:"proposal"`
	Change   ConfChange `json:"change"`
}

// Propose proposes a command. It returns the proposal's id, whose Outcome
// Advance reports once the entry is applied here; a proposal may also be
// lost (leadership changes before it commits, or a forwarded proposal is
// dropped on the way), so the proposer needs a timeout; once this replica
// applied an entry of a later term than the id's (AppliedTerm), a
// proposal whose Outcome has not arrived never applies, unless this
// replica installed a snapshot since (SnapshotsInstalled): it may hold
// the entry, and reports no outcome for it. Any replica that
// knows a leader may propose: a follower's proposal travels to the leader
// inside raft (MsgProp), and its Outcome arrives when this replica applies
// the entry, so the proposer reads its own write. With no leader known:
// ErrNoLeader.
func (m *Meta) Propose(cmd Command) (ProposalID, error) {
	if err := m.checkLeaderKnown(); err != nil {
		return ProposalID{}, err
	}
	if err := cmd.Validate(); err != nil {
		return ProposalID{}, err
	}
	if err := checkNamesCreation(cmd); err != nil {
		return ProposalID{}, err
	}
	if err := checkProposedGrants(cmd); err != nil {
		return ProposalID{}, err
	}
	id := m.nextProposalID()
	data, err := EncodeCommand(id, cmd)
	if err != nil {
		return ProposalID{}, err
	}
	if err := m.raw.Propose(data); err != nil {
		return ProposalID{}, proposeError(err)
	}
	return id, nil
}

// ProposeConfChange proposes adding or removing one voter. Besides the
// errors of Propose: ErrBarrierPending until the leader applied an entry
// of its term, ErrConfChangeInProgress while its previous change is not
// applied, ErrTooFewVoters when a removal would leave fewer than three
// voters, ErrRemovingLeader for the leader itself, and the rejections of
// checkConfChange. The change is checked again when applied.
func (m *Meta) ProposeConfChange(change ConfChange) (ProposalID, error) {
	if err := m.checkConfChangeProposer(); err != nil {
		return ProposalID{}, err
	}
	change, err := m.resolveConfChange(change)
	if err != nil {
		return ProposalID{}, err
	}
	if err := m.state.checkConfChange(change); err != nil {
		return ProposalID{}, err
	}
	id := m.nextProposalID()
	if err := m.raw.ProposeConfChange(raftConfChange(id, change)); err != nil {
		return ProposalID{}, proposeError(err)
	}
	m.confChangeTerm = id.Term
	return id, nil
}

// checkConfChangeProposer checks that this replica may propose a
// configuration change now.
func (m *Meta) checkConfChangeProposer() error {
	if err := m.checkProposer(); err != nil {
		return err
	}
	if !m.Barrier() {
		return ErrBarrierPending
	}
	if m.confChangeTerm == m.raw.BasicStatus().GetTerm() {
		return ErrConfChangeInProgress
	}
	return nil
}

// resolveConfChange completes a removal from the voter list and refuses
// to remove the leader.
func (m *Meta) resolveConfChange(change ConfChange) (ConfChange, error) {
	if change.Kind != RemoveVoter {
		return change, nil
	}
	peer, found := m.state.PeerByNodeID(change.Peer.ID)
	if !found {
		return change, rejectf(ErrPeerNotFound, "node %q is not a voter", change.Peer.ID)
	}
	if peer.RaftID == m.self.RaftID {
		return change, ErrRemovingLeader
	}
	change.Peer = peer
	return change, nil
}

// checkLeaderKnown returns nil when this replica knows a leader to send a
// proposal to (itself included).
func (m *Meta) checkLeaderKnown() error {
	if err := m.usable(); err != nil {
		return err
	}
	if m.raw.BasicStatus().Lead == raft.None {
		return ErrNoLeader
	}
	return nil
}

// checkProposer returns nil on the leader, else why this replica cannot
// propose a configuration change.
func (m *Meta) checkProposer() error {
	if err := m.usable(); err != nil {
		return err
	}
	status := m.raw.BasicStatus()
	if status.RaftState == raft.StateLeader {
		return nil
	}
	if peer, found := m.PeerByRaftID(status.Lead); found && status.Lead != raft.None {
		return &NotLeaderError{LeaderID: peer.ID}
	}
	return ErrNoLeader
}

// nextProposalID numbers a proposal of the current term.
func (m *Meta) nextProposalID() ProposalID {
	m.sequence++
	return ProposalID{Node: m.config.NodeID, Term: m.raw.BasicStatus().GetTerm(), Sequence: m.sequence}
}

// proposeError translates raft's refusal.
func proposeError(err error) error {
	if errors.Is(err, raft.ErrProposalDropped) {
		return fmt.Errorf("%w: %v", ErrProposalDropped, err)
	}
	return fmt.Errorf("meta: propose: %w", err)
}

// raftConfChange builds raft's configuration change, carrying the whole
// change and the proposal id in its context.
func raftConfChange(id ProposalID, change ConfChange) *raftpb.ConfChange {
	changeType := raftpb.ConfChangeAddNode
	if change.Kind == RemoveVoter {
		changeType = raftpb.ConfChangeRemoveNode
	}
	return &raftpb.ConfChange{Type: changeType.Enum(), NodeId: new(change.Peer.RaftID),
		Context: encodeConfContext(id, change)}
}

// encodeConfContext encodes the context of a configuration change.
func encodeConfContext(id ProposalID, change ConfChange) []byte {
	data, err := json.Marshal(confContext{Proposal: id, Change: change})
	assert(err == nil, "a configuration change context does not encode: %v", err)
	return append([]byte{confContextVersion}, data...)
}

// decodeConfContext decodes the context of a configuration change.
func decodeConfContext(data []byte) (confContext, error) {
	var context confContext
	if len(data) < 1 || data[0] != confContextVersion {
		return context, fmt.Errorf("%w: configuration change context version", ErrUnknownCommand)
	}
	err := decodeStrict(data[1:], &context)
	return context, err
}
