package meta

import (
	"math"

	"go.etcd.io/raft/v3/raftpb"
)

// TopicCountPending reports whether this replica's log holds, past the
// applied index, an entry that may create the topic name or change its
// partition count (a CreateTopic of that name, an AlterTopic of it that
// sets Partitions): the applied state may yet learn the topic, or more
// of its partitions. A leader's log holds every committed entry, so on
// the leader false means its applied state has every committed change of
// the topic's existence and count: an answer from it is final. Entries
// raft holds unpersisted are not looked at: a driver persists a Ready
// before it sends its messages, so no other replica holds (and no
// quorum committed) an entry this replica has not persisted.
//
// It decodes the entries past the applied index: callers ask only for
// requests that the applied state would refuse.
func (m *Meta) TopicCountPending(name string) bool {
	if m.usable() != nil {
		return false
	}
	last, err := m.storage.LastIndex()
	assert(err == nil, "raft's log has no last index: %v", err)
	if last <= m.applied.index {
		return false
	}
	entries, err := m.storage.Entries(m.applied.index+1, last+1, math.MaxUint64)
	assert(err == nil, "raft's log lacks entries %d to %d past the applied index: %v", m.applied.index+1, last, err)
	for _, entry := range entries {
		if changesTopicCount(entry, name) {
			return true
		}
	}
	return false
}

// changesTopicCount reports whether an entry may create topic name or
// change its partition count. Only a create or an alter is decoded (the
// type byte leads the entry: heartbeats are most of a busy log); one this
// binary cannot decode is counted as a change: applied, it would stop
// the replica anyway.
func changesTopicCount(entry *raftpb.Entry, name string) bool {
	data := entry.GetData()
	if entry.GetType() != raftpb.EntryNormal || len(data) == 0 {
		return false
	}
	if kind := CommandType(data[0]); kind != TypeCreateTopic && kind != TypeAlterTopic {
		return false
	}
	_, cmd, err := DecodeCommand(data)
	if err != nil {
		return true
	}
	switch c := cmd.(type) {
	case CreateTopic:
		return c.Name == name
	case AlterTopic:
		return c.Name == name && c.Partitions != nil
	}
	return false
}
