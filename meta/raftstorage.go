package meta

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// raftStorage is raft's view of the persisted log: a raft.MemoryStorage
// rebuilt from the store at New and kept in step with it by Persist. Its
// InitialState reports the voter configuration as of the applied index
// (from the state machine), not as of the snapshot: raft is restarted with
// Config.Applied set to that index, so it never hands back the
// configuration changes applied before a crash.
type raftStorage struct {
	*raft.MemoryStorage
	// confState is the configuration at the applied index when the node
	// started. Read once, by raft's constructor.
	confState *raftpb.ConfState
}

// InitialState implements raft.Storage.
func (s raftStorage) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	hardState, _, err := s.MemoryStorage.InitialState()
	return hardState, proto.CloneOf(s.confState), err
}

// buildMemoryStorage rebuilds raft's in-memory log from what the store
// holds: the snapshot, the hard state and the entries after the snapshot
// (the kept tail before it is skipped).
func buildMemoryStorage(p persisted) (*raft.MemoryStorage, error) {
	storage := raft.NewMemoryStorage()
	if p.snapshot != nil {
		if err := storage.ApplySnapshot(p.snapshot); err != nil {
			return nil, fmt.Errorf("%w: stored snapshot: %v", ErrStoreFormat, err)
		}
	}
	if p.hardState != nil {
		if err := storage.SetHardState(p.hardState); err != nil {
			return nil, err
		}
	}
	snapshotIndex := p.snapshot.GetMetadata().GetIndex()
	entries := slices.DeleteFunc(slices.Clone(p.entries), func(e *raftpb.Entry) bool { return e.GetIndex() <= snapshotIndex })
	if len(entries) > 0 && entries[0].GetIndex() != snapshotIndex+1 {
		return nil, fmt.Errorf("%w: log starts at %d after a snapshot at %d", ErrStoreFormat, entries[0].GetIndex(), snapshotIndex)
	}
	return storage, storage.Append(entries)
}

// checkPersisted checks the relations between the parts of a store: a
// damaged or hand-made file is refused here, where raft would panic on it.
func checkPersisted(p persisted) error {
	snapshotIndex, commit := p.snapshot.GetMetadata().GetIndex(), p.hardState.GetCommit()
	if p.applied.index < snapshotIndex || p.applied.index > commit {
		return fmt.Errorf("%w: applied index %d outside [snapshot %d, commit %d]", ErrStoreFormat, p.applied.index, snapshotIndex, commit)
	}
	lastIndex := snapshotIndex
	for _, entry := range p.entries {
		if entry.GetIndex() <= snapshotIndex {
			continue
		}
		if entry.GetIndex() != lastIndex+1 {
			return fmt.Errorf("%w: the log skips from %d to %d", ErrStoreFormat, lastIndex, entry.GetIndex())
		}
		lastIndex = entry.GetIndex()
	}
	if commit > lastIndex {
		return fmt.Errorf("%w: commit index %d past the last entry %d", ErrStoreFormat, commit, lastIndex)
	}
	return nil
}

// toRaftConfState converts a ConfState for raft.
func toRaftConfState(c ConfState) *raftpb.ConfState {
	return &raftpb.ConfState{Voters: slices.Clone(c.Voters), Learners: slices.Clone(c.Learners)}
}

// fromRaftConfState converts raft's configuration; meta never enters a
// joint configuration.
func fromRaftConfState(c *raftpb.ConfState) ConfState {
	assert(len(c.GetVotersOutgoing()) == 0 && len(c.GetLearnersNext()) == 0,
		"joint configuration %v: meta changes one voter at a time", c)
	return ConfState{Voters: slices.Clone(c.GetVoters()), Learners: slices.Clone(c.GetLearners())}
}

// raftLogger discards raft's debug, info, warning and error lines (the
// core does no I/O; the node's own metrics and the simulator's checks
// report trouble) and turns Fatal and Panic into panics.
type raftLogger struct{}

func (raftLogger) Debug(...any)            {}
func (raftLogger) Debugf(string, ...any)   {}
func (raftLogger) Info(...any)             {}
func (raftLogger) Infof(string, ...any)    {}
func (raftLogger) Warning(...any)          {}
func (raftLogger) Warningf(string, ...any) {}
func (raftLogger) Error(...any)            {}
func (raftLogger) Errorf(string, ...any)   {}
func (raftLogger) Fatal(v ...any)          { panic("meta: raft: " + fmt.Sprint(v...)) }
func (raftLogger) Fatalf(format string, v ...any) {
	panic("meta: raft: " + fmt.Sprintf(format, v...))
}
func (raftLogger) Panic(v ...any) { panic("meta: raft: " + fmt.Sprint(v...)) }
func (raftLogger) Panicf(format string, v ...any) {
	panic("meta: raft: " + fmt.Sprintf(format, v...))
}
