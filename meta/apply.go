package meta

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// applyEntry applies one committed entry to the state machine and
// records the outcome if this node proposed it. Entries arrive in index
// order, each exactly once per store.
func (m *Meta) applyEntry(entry *raftpb.Entry) {
	assert(entry.GetIndex() == m.applied.index+1, "committed entry %d follows applied entry %d", entry.GetIndex(), m.applied.index)
	switch entry.GetType() {
	case raftpb.EntryNormal:
		m.applyCommandEntry(entry)
	case raftpb.EntryConfChange:
		m.applyConfChangeEntry(entry)
	default:
		assert(false, "entry %d has type %v; meta writes only normal and conf change entries", entry.GetIndex(), entry.GetType())
	}
	m.applied = appliedPosition{index: entry.GetIndex(), term: entry.GetTerm()}
}

// applyCommandEntry applies a command; an empty entry is the leader's
// first entry of its term. A committed entry this binary cannot decode
// stops the replica: skipping it would make replicas diverge. A
// term-bound command appended in another term than it was proposed in is
// refused (ErrStaleProposal).
func (m *Meta) applyCommandEntry(entry *raftpb.Entry) {
	if len(entry.GetData()) == 0 {
		return
	}
	id, cmd, err := DecodeCommand(entry.GetData())
	assert(err == nil, "committed entry %d does not decode (%v): every replica must know every command in the log; "+
		"this binary is likely of an older release than the one that wrote the entry: start this node on the release the others run", entry.GetIndex(), err)
	if termBound(entry.GetData()) && id.Term != entry.GetTerm() {
		m.recordOutcome(id, entry.GetIndex(), fmt.Errorf("%w: proposed in term %d, appended in term %d", ErrStaleProposal, id.Term, entry.GetTerm()))
		return
	}
	m.recordOutcome(id, entry.GetIndex(), cmd.apply(m.state))
}

// applyConfChangeEntry decides a configuration change from the state,
// applies it to raft (as a no-op if rejected) and records it.
func (m *Meta) applyConfChangeEntry(entry *raftpb.Entry) {
	change := &raftpb.ConfChange{}
	err := proto.Unmarshal(entry.GetData(), change)
	assert(err == nil, "committed conf change %d does not decode: %v", entry.GetIndex(), err)
	context, err := decodeConfContext(change.GetContext())
	assert(err == nil && context.Change.Peer.RaftID == change.GetNodeId(),
		"committed conf change %d carries context %+v for raft id %d (%v)", entry.GetIndex(), context, change.GetNodeId(), err)
	result := m.state.checkConfChange(context.Change)
	if result != nil {
		change.NodeId = new(uint64(0)) // raft's way to cancel a change
	}
	confState := fromRaftConfState(m.raw.ApplyConfChange(change))
	if result == nil {
		m.state.applyConfChange(context.Change, confState)
		m.voterAdded = m.voterAdded || context.Change.Kind == AddVoter
	}
	m.confChangeTerm = 0
	m.recordOutcome(context.Proposal, entry.GetIndex(), result)
}

// recordOutcome keeps the result of an applied entry if this node
// proposed it.
func (m *Meta) recordOutcome(id ProposalID, index uint64, result error) {
	if id.Node == m.config.NodeID {
		m.outcomes = append(m.outcomes, Outcome{ID: id, Index: index, Err: result})
	}
}
