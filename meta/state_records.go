package meta

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// imageFormatVersion is the first byte of snapshot data.
const imageFormatVersion = 1

// The buckets of the state machine, one record per key; clusterKey is the
// one key of bucketCluster.
var (
	bucketTopics  = []byte("topics")
	bucketMembers = []byte("members")
	bucketUsers   = []byte("users")
	bucketCluster = []byte("cluster")
	clusterKey    = "cluster"
	stateBuckets  = [][]byte{bucketTopics, bucketMembers, bucketUsers, bucketCluster}
)

// recordKey names one record of the state machine in the store.
type recordKey struct {
	bucket string
	key    string
}

func compareRecordKeys(a, b recordKey) int {
	return cmp.Or(cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.key, b.key))
}

// clusterRecord is the voter configuration, the peers' addresses, the
// removed raft and node ids and the users version: small, written as one
// record.
type clusterRecord struct {
	ConfState      ConfState `json:"conf_state"`
	Peers          []Peer    `json:"peers"`
	RemovedRaftIDs []uint64  `json:"removed_raft_ids,omitempty"`
	// RemovedNodeIDs are the node ids of the voters removed by entries
	// with ConfChange.RecordNodeID.
	RemovedNodeIDs []string `json:"removed_node_ids,omitempty"`
	UsersVersion   uint64   `json:"users_version"`
	// SchemaSequence is the id of the last schema version applied.
	SchemaSequence uint64 `json:"schema_sequence,omitempty"`
	// TopicSequence counts the topic creations applied.
	TopicSequence uint64 `json:"topic_sequence,omitempty"`
	// FanoutSequence counts the fan-out attaches applied.
	FanoutSequence uint64 `json:"fanout_sequence,omitempty"`
}

// stateImage is the whole state machine as sorted slices: the snapshot
// data, and what loading the buckets produces.
type stateImage struct {
	Topics  []TopicRecord `json:"topics"`
	Members []Member      `json:"members"`
	Users   []User        `json:"users"`
	Cluster clusterRecord `json:"cluster"`
}

func (s *State) markTopic(name string) {
	s.dirty[recordKey{string(bucketTopics), name}] = true
	s.topicsVersion++
}
func (s *State) markMember(id string) { s.dirty[recordKey{string(bucketMembers), id}] = true }
func (s *State) markCluster()         { s.dirty[recordKey{string(bucketCluster), clusterKey}] = true }
func (s *State) markUser(name string) {
	s.dirty[recordKey{string(bucketUsers), name}] = true
	s.usersVersion++
	s.markCluster()
}

// clusterRecord returns the cluster record of the state.
func (s *State) clusterRecord() clusterRecord {
	return clusterRecord{ConfState: s.confState.clone(), Peers: s.Peers(),
		RemovedRaftIDs: slices.Sorted(maps.Keys(s.removedRaftIDs)), RemovedNodeIDs: slices.Sorted(maps.Keys(s.removedNodeIDs)), UsersVersion: s.usersVersion,
		SchemaSequence: s.schemaSequence, TopicSequence: s.topicSequence, FanoutSequence: s.fanoutSequence}
}

// recordValue returns the encoded record at key, or false if there is
// none (it was deleted).
func (s *State) recordValue(key recordKey) ([]byte, bool) {
	switch key.bucket {
	case string(bucketTopics):
		return encodePresent(s.topics[key.key])
	case string(bucketMembers):
		return encodeMember(s.members[key.key])
	case string(bucketUsers):
		return encodePresent(s.users[key.key])
	}
	assert(key == recordKey{string(bucketCluster), clusterKey}, "unknown state record %v", key)
	record := s.clusterRecord()
	return encodePresent(&record)
}

// encodePresent encodes a record; nil is an absent record.
func encodePresent[T any](record *T) ([]byte, bool) {
	if record == nil {
		return nil, false
	}
	data, err := json.Marshal(record)
	assert(err == nil, "a state record of type %T does not encode: %v", record, err)
	return data, true
}

// flushDirty writes the records changed since the last flush, in key
// order, and forgets them.
func (s *State) flushDirty(tx *bolt.Tx) error {
	keys := slices.SortedFunc(maps.Keys(s.dirty), compareRecordKeys)
	for _, key := range keys {
		if err := s.writeRecord(tx, key); err != nil {
			return err
		}
	}
	clear(s.dirty)
	return nil
}

// writeRecord puts or deletes one record.
func (s *State) writeRecord(tx *bolt.Tx, key recordKey) error {
	bucket := tx.Bucket([]byte(key.bucket))
	assert(bucket != nil, "bucket %q is missing from an open store", key.bucket)
	if value, present := s.recordValue(key); present {
		return bucket.Put([]byte(key.key), value)
	}
	return bucket.Delete([]byte(key.key))
}

// writeAll replaces the state buckets with the whole state (installing a
// snapshot).
func (s *State) writeAll(tx *bolt.Tx) error {
	for _, name := range stateBuckets {
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("drop bucket %s: %w", name, err)
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	clear(s.dirty)
	s.markAll()
	return s.flushDirty(tx)
}

// markAll marks every record of the state dirty.
func (s *State) markAll() {
	for _, name := range s.TopicNames() {
		s.markTopic(name)
	}
	for _, id := range slices.Sorted(maps.Keys(s.members)) {
		s.markMember(id)
	}
	for _, name := range slices.Sorted(maps.Keys(s.users)) {
		s.dirty[recordKey{string(bucketUsers), name}] = true
	}
	s.markCluster()
}

// image returns the state as sorted slices.
func (s *State) image() stateImage {
	return stateImage{Topics: s.Topics(), Members: s.Members(), Users: s.Users(), Cluster: s.clusterRecord()}
}

// encodeImage encodes the whole state: the data of a snapshot. Equal
// states encode to equal bytes.
func (s *State) encodeImage() []byte {
	data, err := json.Marshal(s.image())
	assert(err == nil, "the state image does not encode: %v", err)
	return append([]byte{imageFormatVersion}, data...)
}

// decodeImage decodes snapshot data into a new state.
func decodeImage(data []byte) (*State, error) {
	if len(data) < 1 || data[0] != imageFormatVersion {
		return nil, fmt.Errorf("%w: format byte missing or unknown", ErrMalformedSnapshot)
	}
	var image stateImage
	if err := decodeStrict(data[1:], &image); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedSnapshot, err)
	}
	return stateFromImage(image)
}

// loadImage reads the state buckets of the store.
func loadImage(tx *bolt.Tx) (stateImage, error) {
	var image stateImage
	err := forEachRecord(tx, bucketTopics, func(r TopicRecord) { image.Topics = append(image.Topics, r) })
	if err == nil {
		err = forEachRecord(tx, bucketMembers, func(m Member) { image.Members = append(image.Members, m) })
	}
	if err == nil {
		err = forEachRecord(tx, bucketUsers, func(u User) { image.Users = append(image.Users, u) })
	}
	if err == nil {
		err = forEachRecord(tx, bucketCluster, func(c clusterRecord) { image.Cluster = c })
	}
	return image, err
}

// forEachRecord decodes every record of a bucket, in key order.
func forEachRecord[T any](tx *bolt.Tx, name []byte, visit func(T)) error {
	return tx.Bucket(name).ForEach(func(key, value []byte) error {
		var record T
		if err := decodeStrict(value, &record); err != nil {
			return fmt.Errorf("%w: record %s/%s: %v", ErrStoreFormat, name, key, err)
		}
		visit(record)
		return nil
	})
}
