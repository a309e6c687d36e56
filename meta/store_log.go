package meta

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// deterministicProto encodes protobuf messages the same way every run.
var deterministicProto = proto.MarshalOptions{Deterministic: true}

// logKey is the bbolt key of the log entry at index.
func logKey(index uint64) []byte { return binary.BigEndian.AppendUint64(nil, index) }

// putProto stores a protobuf message under key.
func putProto(bucket *bolt.Bucket, key []byte, message proto.Message) error {
	data, err := deterministicProto.Marshal(message)
	assert(err == nil, "a raft record %T does not encode: %v", message, err)
	return bucket.Put(key, data)
}

// appendEntries writes entries (consecutive), first dropping every stored
// entry at or after the first one: raft overwrites a conflicting suffix.
func appendEntries(tx *bolt.Tx, entries []*raftpb.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	bucket := tx.Bucket(bucketLog)
	if err := deleteKeys(bucket, keysFrom(bucket, entries[0].GetIndex())); err != nil {
		return err
	}
	for i, entry := range entries {
		assert(entry.GetIndex() == entries[0].GetIndex()+uint64(i), "entries to append are not consecutive: %d at position %d after %d",
			entry.GetIndex(), i, entries[0].GetIndex())
		if err := putProto(bucket, logKey(entry.GetIndex()), entry); err != nil {
			return err
		}
	}
	return nil
}

// keysFrom lists the log keys at or after index.
func keysFrom(bucket *bolt.Bucket, index uint64) [][]byte {
	var keys [][]byte
	cursor := bucket.Cursor()
	for key, _ := cursor.Seek(logKey(index)); key != nil; key, _ = cursor.Next() {
		keys = append(keys, append([]byte(nil), key...))
	}
	return keys
}

// keysThrough lists the log keys at or before index.
func keysThrough(bucket *bolt.Bucket, index uint64) [][]byte {
	var keys [][]byte
	cursor := bucket.Cursor()
	for key, _ := cursor.First(); key != nil && binary.BigEndian.Uint64(key) <= index; key, _ = cursor.Next() {
		keys = append(keys, append([]byte(nil), key...))
	}
	return keys
}

// deleteKeys deletes the listed keys (listed first: deleting under a
// moving cursor skips keys).
func deleteKeys(bucket *bolt.Bucket, keys [][]byte) error {
	for _, key := range keys {
		if err := bucket.Delete(key); err != nil {
			return err
		}
	}
	return nil
}

// compactLog drops the stored entries at or before index.
func compactLog(tx *bolt.Tx, index uint64) error {
	bucket := tx.Bucket(bucketLog)
	return deleteKeys(bucket, keysThrough(bucket, index))
}

// dropLog drops every stored entry (a received snapshot replaces the log).
func dropLog(tx *bolt.Tx) error {
	bucket := tx.Bucket(bucketLog)
	return deleteKeys(bucket, keysThrough(bucket, ^uint64(0)))
}
