package meta

import (
	"encoding/binary"
	"slices"

	"go.etcd.io/raft/v3"
)

// ReadConfirmed is a read request of this replica's (RequestRead) that
// raft confirmed: the replica led when a quorum answered a heartbeat
// sent after the request, so no other leader had committed anything at
// that moment, and Index is the commit index the replica had when the
// request reached raft. Once the replica applied Index, its state holds
// every entry committed before the request: an answer taken from it then
// is one no newer leader can contradict.
type ReadConfirmed struct {
	// Tag is the caller's, given to RequestRead.
	Tag uint64
	// Index is the read's index: apply up to it before answering.
	Index uint64
}

// pendingRead is a read request raft has not confirmed yet.
type pendingRead struct {
	// id numbers the request among this instance's (Meta.readSeq).
	id uint64
	// term is the term it was asked in: raft forgets the requests of a
	// leadership that ended (a new term, or a step down within it), and
	// Meta forgets them too (forgetLostReads).
	term uint64
}

// readContextBytes is the size of a read request's context: its id, then
// the caller's tag, both big-endian. The tag travels in the context so
// that a confirmation raft hands out after Meta forgot its request (the
// leadership ended between the confirmation and the Ready) still says
// whom it is for.
const readContextBytes = 16

// RequestRead asks raft for a read index (raft's ReadIndex, with
// ReadOnlySafe: confirmed by a quorum's answer to a heartbeat, never by
// a lease on the clock). Its confirmation comes in a later Ready's Reads
// with tag; none comes if the leadership ends first, and the caller
// answers whoever waits for it at its own deadline. Only a leader past
// its barrier asks (ErrBarrierPending before it: raft would park the
// request until the leader commits in its term), and at most
// ReadRequestsMax requests are outstanding at once (ErrReadsFull).
func (m *Meta) RequestRead(tag uint64) error {
	if err := m.checkProposer(); err != nil {
		return err
	}
	if !m.Barrier() {
		return ErrBarrierPending
	}
	m.forgetLostReads()
	if len(m.reads) >= ReadRequestsMax {
		return ErrReadsFull
	}
	m.readSeq++
	m.reads = append(m.reads, pendingRead{id: m.readSeq, term: m.raw.BasicStatus().GetTerm()})
	context := make([]byte, readContextBytes)
	binary.BigEndian.PutUint64(context, m.readSeq)
	binary.BigEndian.PutUint64(context[8:], tag)
	m.raw.ReadIndex(context)
	return nil
}

// ReadsOutstanding counts the read requests raft may still confirm (and
// whose confirmation no Ready handed out yet): none once the leadership
// they were asked in ended.
func (m *Meta) ReadsOutstanding() int {
	m.forgetLostReads()
	return len(m.reads)
}

// forgetLostReads drops the read requests of a leadership that ended:
// raft dropped them when it left the leader state, and a leader of a
// later term is another leadership.
func (m *Meta) forgetLostReads() {
	if len(m.reads) == 0 {
		return
	}
	status := m.raw.BasicStatus()
	leads := m.usable() == nil && status.RaftState == raft.StateLeader
	m.reads = slices.DeleteFunc(m.reads, func(r pendingRead) bool { return !leads || r.term != status.GetTerm() })
}

// confirmReads turns the read states of raft's Ready into the
// confirmations of this replica's requests, in the order raft confirmed
// them, and forgets those requests. Raft gives read states only for
// requests of this replica (a peer's MsgReadIndex and MsgReadIndexResp
// are refused: checkPeerMessage), so every context is one RequestRead
// made.
func (m *Meta) confirmReads(states []raft.ReadState) []ReadConfirmed {
	if len(states) == 0 {
		return nil
	}
	confirmed := make([]ReadConfirmed, len(states))
	for i, state := range states {
		context := state.RequestCtx
		assert(len(context) == readContextBytes, "a read state carries a context of %d bytes, not %d", len(context), readContextBytes)
		id := binary.BigEndian.Uint64(context)
		assert(id >= 1 && id <= m.readSeq, "a read state names request %d; this replica made %d", id, m.readSeq)
		confirmed[i] = ReadConfirmed{Tag: binary.BigEndian.Uint64(context[8:]), Index: state.Index}
		m.reads = slices.DeleteFunc(m.reads, func(r pendingRead) bool { return r.id == id })
	}
	return confirmed
}
