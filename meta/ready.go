package meta

import (
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// readyPhase is where the replica is in the Ready cycle.
type readyPhase uint8

const (
	phaseIdle      readyPhase = iota // no Ready outstanding
	phaseTaken                       // Ready returned, not persisted
	phasePersisted                   // persisted, not advanced
)

// Ready is the work a replica hands its driver: persist it (Persist),
// then send Messages, then Advance. Only Messages and Reads are for the
// driver; the rest is opaque.
type Ready struct {
	// Messages go to peers after Persist returned: To is a raft id
	// (Meta.PeerByRaftID gives the address). Any of them may be lost; a
	// lost MsgSnap is sent again after SnapshotAckTicks. The messages must
	// not be modified.
	Messages []*raftpb.Message
	// Reads are this replica's read requests (RequestRead) raft confirmed
	// since the last Ready, in the order it confirmed them. They need
	// nothing persisted: the driver may act on them once the replica
	// applied up to their Index.
	Reads []ReadConfirmed
	// raft is raft's Ready; number matches Meta.readyNumber.
	raft   raft.Ready
	number uint64
}

// afterCommit is what Persist does to raft's in-memory log once the bbolt
// transaction committed.
type afterCommit struct {
	// snapshot was written in the transaction; nil if none.
	snapshot *raftpb.Snapshot
	// compactIndex: entries at or before it were dropped; 0 if none.
	compactIndex uint64
}

// HasReady reports whether a Ready is waiting (and no Ready is
// outstanding).
func (m *Meta) HasReady() bool {
	return m.usable() == nil && m.phase == phaseIdle && m.raw.HasReady()
}

// Ready returns the pending work. It must be followed by Persist and
// Advance with the same Ready before the next call.
func (m *Meta) Ready() Ready {
	if m.phase != phaseIdle { // guarded: the arguments would allocate on every call
		assert(false, "Ready called while Ready %d is outstanding (phase %d)", m.readyNumber, m.phase)
	}
	assert(m.usable() == nil, "Ready called on an unusable instance: %v", m.usable())
	rd := m.raw.Ready()
	m.nameVoters(rd.Messages)
	messages := rd.Messages
	if m.noteSnapshotsSent(rd.Messages) {
		messages = loseSnapshots(messages)
	}
	m.readyNumber++
	m.phase = phaseTaken
	return Ready{Messages: messages, Reads: m.confirmReads(rd.ReadStates), raft: rd, number: m.readyNumber}
}

// Persist writes the Ready in one bbolt transaction: a received snapshot
// (replacing the state machine), the new entries, the hard state, the
// committed entries applied to the state machine, the applied index, and
// a new snapshot with log compaction every SnapshotEntries entries. An
// entry and the applied index are committed together, so a crash never
// applies an entry twice. If it fails the instance is finished: the driver
// must not send the Messages or Advance, and restarts from the store.
func (m *Meta) Persist(rd Ready) error {
	if err := m.usable(); err != nil {
		return err
	}
	if m.phase != phaseTaken || rd.number != m.readyNumber { // guarded: the arguments would allocate on every call
		assert(false, "Persist of Ready %d in phase %d, Ready %d outstanding", rd.number, m.phase, m.readyNumber)
	}
	var work afterCommit
	if needsWrite(rd.raft) {
		err := m.store.db.Update(func(tx *bolt.Tx) error { return m.writeReady(tx, rd.raft, &work) })
		if err != nil {
			return m.fail(err)
		}
	}
	m.updateRaftLog(rd.raft, work)
	m.phase = phasePersisted
	return nil
}

// NeedsStore reports whether Persist of the Ready writes the store. One
// that carries only messages (heartbeats and their answers, most Readys
// of a cluster at rest) costs no transaction and no fsync: its Persist
// touches memory alone, so a driver may run it where it stands.
func (rd Ready) NeedsStore() bool { return needsWrite(rd.raft) }

// needsWrite reports whether a Ready has anything for the store; one that
// only carries messages (heartbeats) costs no transaction and no fsync.
func needsWrite(rd raft.Ready) bool {
	return !raft.IsEmptySnap(rd.Snapshot) || len(rd.Entries) > 0 || rd.HardState != nil || len(rd.CommittedEntries) > 0
}

// Advance tells raft the Ready was persisted and its messages sent, and
// returns the outcomes of this node's proposals applied by Persist.
func (m *Meta) Advance(rd Ready) []Outcome {
	if m.phase != phasePersisted || rd.number != m.readyNumber { // guarded: the arguments would allocate on every call
		assert(false, "Advance of Ready %d in phase %d, Ready %d outstanding", rd.number, m.phase, m.readyNumber)
	}
	m.raw.Advance(rd.raft)
	m.phase = phaseIdle
	outcomes := m.outcomes
	m.outcomes = nil
	return outcomes
}

// writeReady is the body of Persist's transaction.
func (m *Meta) writeReady(tx *bolt.Tx, rd raft.Ready, work *afterCommit) error {
	stored := m.applied // what the store holds: a snapshot or an entry moves it below
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := m.installSnapshot(tx, rd.Snapshot); err != nil {
			return err
		}
	}
	if err := appendEntries(tx, rd.Entries); err != nil {
		return err
	}
	if rd.HardState != nil {
		if err := putProto(tx.Bucket(bucketRaft), keyHardState, rd.HardState); err != nil {
			return err
		}
	}
	for _, entry := range rd.CommittedEntries {
		m.applyEntry(entry)
	}
	if err := m.state.flushDirty(tx); err != nil {
		return err
	}
	if err := putApplied(tx, stored, m.applied); err != nil {
		return err
	}
	return m.maybeSnapshot(tx, work)
}

// putApplied writes the applied position if it moved since the store's
// (stored: the store holds it after every committed transaction and at
// New, and an absent key reads as zero). A Ready that only appends
// entries (about half of a cluster's) then leaves the raft bucket
// untouched.
func putApplied(tx *bolt.Tx, stored, applied appliedPosition) error {
	if applied == stored {
		return nil
	}
	return tx.Bucket(bucketRaft).Put(keyApplied, encodeApplied(applied))
}

// updateRaftLog makes raft's in-memory log match the committed
// transaction.
func (m *Meta) updateRaftLog(rd raft.Ready, work afterCommit) {
	if !raft.IsEmptySnap(rd.Snapshot) {
		err := m.storage.ApplySnapshot(rd.Snapshot)
		assert(err == nil, "raft's log refused snapshot %d: %v", rd.Snapshot.GetMetadata().GetIndex(), err)
	}
	err := m.storage.Append(rd.Entries)
	assert(err == nil, "raft's log refused %d entries: %v", len(rd.Entries), err)
	if rd.HardState != nil {
		assert(m.storage.SetHardState(rd.HardState) == nil, "raft's log refused the hard state")
	}
	if work.snapshot != nil {
		m.compactRaftLog(work)
	}
}

// compactRaftLog records a new snapshot in raft's log and drops the
// entries the store dropped.
func (m *Meta) compactRaftLog(work afterCommit) {
	metadata := work.snapshot.GetMetadata()
	created, err := m.storage.CreateSnapshot(metadata.GetIndex(), metadata.GetConfState(), work.snapshot.GetData())
	assert(err == nil && created.GetMetadata().GetTerm() == metadata.GetTerm(),
		"snapshot at %d term %d: raft's log made term %d (%v)", metadata.GetIndex(), metadata.GetTerm(),
		created.GetMetadata().GetTerm(), err)
	firstIndex, err := m.storage.FirstIndex()
	assert(err == nil, "raft's log has no first index: %v", err)
	if work.compactIndex >= firstIndex {
		assert(m.storage.Compact(work.compactIndex) == nil, "raft's log refused compaction to %d", work.compactIndex)
	}
}
