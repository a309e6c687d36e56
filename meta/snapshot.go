package meta

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/chaos"
)

// maybeSnapshot writes a snapshot of the state machine at the applied
// index once SnapshotEntries entries were applied since the last one, and
// drops the log up to SnapshotTailEntries before it.
//
// It also takes one as soon as a voter was added after a snapshot: once
// the log is compacted, the new voter can only start from a snapshot,
// and raft refuses one whose configuration does not list it. Without
// this it would wait for the next periodic snapshot (SnapshotEntries
// entries later, many minutes of heartbeats). Before the first snapshot
// the log is whole and the new voter replays it from the start.
//
// It never takes one at or below the latest snapshot's index: raft's log
// refuses a snapshot that is not newer than the one it has, and nothing
// was applied since (a snapshot just installed from the leader is the
// case; installSnapshot settles the voter flag for it).
func (m *Meta) maybeSnapshot(tx *bolt.Tx, work *afterCommit) error {
	assert(m.snapshotIndex <= m.applied.index, "snapshot at %d is past the applied index %d", m.snapshotIndex, m.applied.index)
	if m.applied.index == m.snapshotIndex {
		return nil
	}
	periodic := m.applied.index >= m.snapshotIndex+m.config.SnapshotEntries
	forVoter := m.voterAdded && m.snapshotIndex > 0
	if !periodic && !forVoter {
		return nil
	}
	m.voterAdded = false
	snapshot := &raftpb.Snapshot{Data: m.state.encodeImage(), Metadata: &raftpb.SnapshotMetadata{
		Index: new(m.applied.index), Term: new(m.applied.term), ConfState: toRaftConfState(m.state.confState)}}
	if err := putProto(tx.Bucket(bucketSnapshot), keySnapshot, snapshot); err != nil {
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
// received from the leader. The snapshot's configuration lists every
// voter added up to its index, so a voter added earlier no longer calls
// for a snapshot of this replica's own (voterAdded is cleared; an
// addition applied after the snapshot in the same Ready sets it again).
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
	if err := putProto(tx.Bucket(bucketSnapshot), keySnapshot, snapshot); err != nil {
		return err
	}
	if err := dropLog(tx); err != nil {
		return err
	}
	m.state.replaceWith(state)
	m.applied = appliedPosition{index: metadata.GetIndex(), term: metadata.GetTerm()}
	m.snapshotIndex, m.confChangeTerm, m.voterAdded = metadata.GetIndex(), 0, false
	m.snapshotsInstalled++
	return m.state.writeAll(tx)
}

// SnapshotMessageBytesMax bounds the encoding of a snapshot message
// (MsgSnap) this replica sends. The node-to-node transport carries a raft
// message of about 100 MiB at most (wire.RaftMessageBytesMax; a test of
// package wire checks that this bound fits in it), and one larger ended
// the sending process. The state's parts are bounded (users, schemas),
// but the topics' placement grows with the topics and partitions the
// configuration allows.
const SnapshotMessageBytesMax = 96 << 20

// noteSnapshotsSent records the tick at which each MsgSnap among a Ready's
// messages was handed out. It reports whether they are lost on the way
// (loseSnapshots), to be sent again once counted lost: when fault site
// SiteMetaSnapshotLost fired for one of them, or when one is over
// SnapshotMessageBytesMax (counted in snapshotsTooLarge): its follower
// then lags, and the leader lives and says so (Status).
func (m *Meta) noteSnapshotsSent(messages []*raftpb.Message) (lose bool) {
	for _, msg := range messages {
		if msg.GetType() != raftpb.MsgSnap {
			continue
		}
		m.snapshotsSent[msg.GetTo()] = m.ticks
		if size := proto.Size(msg); size > m.snapshotBytesMax {
			m.snapshotsTooLarge, m.snapshotTooLargeBytes = m.snapshotsTooLarge+1, size
			lose = true
		}
		lose = lose || chaos.Buggify(chaos.SiteMetaSnapshotLost)
	}
	return lose
}

// loseSnapshots returns messages without its MsgSnaps, in a new slice.
func loseSnapshots(messages []*raftpb.Message) []*raftpb.Message {
	kept := make([]*raftpb.Message, 0, len(messages))
	for _, msg := range messages {
		if msg.GetType() != raftpb.MsgSnap {
			kept = append(kept, msg)
		}
	}
	return kept
}

// expireSnapshots reports as lost every snapshot not acknowledged within
// SnapshotAckTicks. Raft sends a follower nothing while a snapshot to it
// is pending, and learns of its arrival only from the follower's answer:
// without this, one lost MsgSnap would cut the follower off until the
// leader changes. Once the follower's answer to a snapshot has arrived,
// raft has left its snapshot state for it and ignores the report; a
// snapshot answered later than SnapshotAckTicks is at worst sent again.
func (m *Meta) expireSnapshots() {
	if len(m.snapshotsSent) == 0 {
		return
	}
	if !m.IsLeader() {
		clear(m.snapshotsSent)
		return
	}
	var expired []uint64
	for raftID, sentAt := range m.snapshotsSent { //determinism:ok collected then sorted
		if m.ticks-sentAt >= uint64(m.config.SnapshotAckTicks) {
			expired = append(expired, raftID)
		}
	}
	slices.Sort(expired)
	for _, raftID := range expired {
		delete(m.snapshotsSent, raftID)
		m.raw.ReportSnapshot(raftID, raft.SnapshotFailure)
	}
}
