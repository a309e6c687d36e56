package meta

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
)

// maybeSnapshot writes a snapshot of the state machine at the applied
// index once SnapshotEntries entries were applied since the last one, and
// drops the log up to SnapshotTailEntries before it.
func (m *Meta) maybeSnapshot(tx *bolt.Tx, work *afterCommit) error {
	if m.applied.index < m.snapshotIndex+m.config.SnapshotEntries {
		return nil
	}
	snapshot := &raftpb.Snapshot{Data: m.state.encodeImage(), Metadata: &raftpb.SnapshotMetadata{
		Index: new(m.applied.index), Term: new(m.applied.term), ConfState: toRaftConfState(m.state.confState)}}
	if err := putProto(tx.Bucket(bucketRaft), keySnapshot, snapshot); err != nil {
		return err
	}
	work.snapshot = snapshot
	if m.applied.index > m.config.SnapshotTailEntries {
		work.compactIndex = m.applied.index - m.config.SnapshotTailEntries
		if err := compactLog(tx, work.compactIndex); err != nil {
			return err
		}
	}
	m.snapshotIndex = m.applied.index
	return nil
}

// installSnapshot replaces the log and the state machine with a snapshot
// received from the leader.
func (m *Meta) installSnapshot(tx *bolt.Tx, snapshot *raftpb.Snapshot) error {
	state, err := decodeImage(snapshot.GetData())
	if err != nil {
		return err
	}
	metadata := snapshot.GetMetadata()
	if !slices.Equal(state.confState.Voters, slices.Sorted(slices.Values(metadata.GetConfState().GetVoters()))) {
		return fmt.Errorf("%w: snapshot %d: voters %v in the data, %v in the metadata", ErrMalformedSnapshot,
			metadata.GetIndex(), state.confState.Voters, metadata.GetConfState().GetVoters())
	}
	if err := putProto(tx.Bucket(bucketRaft), keySnapshot, snapshot); err != nil {
		return err
	}
	if err := dropLog(tx); err != nil {
		return err
	}
	m.state.replaceWith(state)
	m.applied = appliedPosition{index: metadata.GetIndex(), term: metadata.GetTerm()}
	m.snapshotIndex, m.confChangeTerm = metadata.GetIndex(), 0
	return m.state.writeAll(tx)
}
