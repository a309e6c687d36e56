package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// storeFormatVersion is recorded in a new store and checked on open.
// Format 1 kept the snapshot in bucket "raft" with the hard state, so every
// transaction that wrote the hard state rewrote the snapshot's page too;
// format 2 keeps it in a bucket of its own. OpenStore migrates a format 1
// store in place (migrateFormat1).
const (
	storeFormatVersion = 2
	storeFormat1       = 1
)

// storeFileMode is the permission of a new bbolt file.
const storeFileMode = 0o600

// The raft buckets and their keys: bucketRaft holds keyFormat,
// keyHardState and keyApplied; bucketSnapshot holds keySnapshot.
var (
	bucketRaft     = []byte("raft")
	bucketSnapshot = []byte("snapshot")
	bucketLog      = []byte("log")
	keyFormat      = []byte("format")
	keyHardState   = []byte("hard_state")
	keySnapshot    = []byte("snapshot")
	keyApplied     = []byte("applied")
)

// StoreOptions configures the bbolt file.
type StoreOptions struct {
	// NoSync skips fsync on commit (the simulator, which decides itself
	// what survives a crash). Production leaves it false.
	NoSync bool
	// InitialMmapBytes is the least size of bbolt's map of the file (0:
	// bbolt's own, the file's size rounded up to a power of two from
	// 32 KiB). A file that outgrows its map is mapped again at twice the
	// size, which unmaps the old map; the simulator, which opens and grows
	// stores all the time, maps ahead (its NoSync files grow only by their
	// writes). Production leaves it 0: with NoSync false, bbolt grows a
	// small file to its map's size, so a large map would be a large file.
	InitialMmapBytes int
	// NoFreelistSync skips writing bbolt's freelist at each commit: a
	// transaction writes one page fewer (a quarter of a five-node
	// simulation's metastore writes), and bbolt rebuilds the list at open
	// by walking every page of the file (in a goroutine Open waits for;
	// the list comes out in page order). The simulator sets it. Production
	// leaves it false: the walk makes every open read the whole file (tens
	// of milliseconds on a large one), and a damaged page then panics the
	// walk inside bbolt instead of failing the open with an error.
	NoFreelistSync bool
	// LockTimeout bounds the wait for the file's lock, held by another
	// process (a node running on the same data directory): past it the
	// open fails with ErrStoreLocked. 0 waits for good (the simulator,
	// whose stores no other process opens); the host sets it.
	LockTimeout time.Duration
}

// ErrStoreLocked: another process holds the store's file (OpenStore with
// a LockTimeout).
var ErrStoreLocked = errors.New("meta: the store's file is locked by another process")

// Store is the one bbolt file of a node's metastore: the raft log
// (bucket "log", keyed by big-endian index), the hard state and the
// applied position (bucket "raft", small enough for bbolt to keep inline),
// the latest snapshot (bucket "snapshot"), and the state machine (buckets
// "topics", "members", "users", "cluster"). Every write is one
// transaction made by Meta.Persist; a Store is opened once and handed to
// New, which owns it from then on.
type Store struct {
	// db is the open bbolt database; nil once closed.
	db *bolt.DB
}

// OpenStore opens or creates the bbolt file at path. It keeps bbolt's
// array freelist (the hashmap freelist would lay pages out in Go map
// order) and never uses db.Batch (it arms a timer). A file written with
// or without StoreOptions.NoFreelistSync opens either way.
func OpenStore(path string, opts StoreOptions) (*Store, error) {
	db, err := bolt.Open(path, storeFileMode, &bolt.Options{NoSync: opts.NoSync, NoGrowSync: opts.NoSync,
		FreelistType: bolt.FreelistArrayType, NoFreelistSync: opts.NoFreelistSync, InitialMmapSize: opts.InitialMmapBytes,
		Timeout: opts.LockTimeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (waited %s)", ErrStoreLocked, path, opts.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("meta: open store %s: %w", path, err)
	}
	if err := db.Update(initializeStore); err != nil {
		return nil, errors.Join(fmt.Errorf("meta: initialize store %s: %w", path, err), db.Close())
	}
	return &Store{db: db}, nil
}

// initializeStore creates the buckets of a new store, and checks the
// format of an existing one, migrating format 1.
func initializeStore(tx *bolt.Tx) error {
	raftBucket := tx.Bucket(bucketRaft)
	if raftBucket != nil {
		format := raftBucket.Get(keyFormat)
		switch {
		case len(format) == 1 && format[0] == storeFormatVersion:
			return nil
		case len(format) == 1 && format[0] == storeFormat1:
			return migrateFormat1(tx, raftBucket)
		}
		return fmt.Errorf("%w: format %v, want %d (or %d, migrated)", ErrStoreFormat, format, storeFormatVersion, storeFormat1)
	}
	for _, name := range append([][]byte{bucketRaft, bucketSnapshot, bucketLog}, stateBuckets...) {
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketRaft).Put(keyFormat, []byte{storeFormatVersion})
}

// migrateFormat1 moves a format 1 store's snapshot out of bucket "raft"
// into bucket "snapshot" and records format 2, in the transaction that
// opens the store: a crash leaves either format whole.
func migrateFormat1(tx *bolt.Tx, raftBucket *bolt.Bucket) error {
	snapshotBucket, err := tx.CreateBucket(bucketSnapshot)
	if err != nil {
		return err
	}
	if data := raftBucket.Get(keySnapshot); data != nil {
		if err := snapshotBucket.Put(keySnapshot, bytes.Clone(data)); err != nil {
			return err
		}
		if err := raftBucket.Delete(keySnapshot); err != nil {
			return err
		}
	}
	return raftBucket.Put(keyFormat, []byte{storeFormatVersion})
}

// Close closes the file. Closing twice is harmless.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// View runs read in a read-only transaction of the store: it sees what
// the last committed transaction left in the file, as a process opening
// the file afresh would. The simulator's metastore oracle reads a live
// replica's state machine this way; a second open of the file would wait
// on the lock the replica holds, and opening a copy maps and unmaps the
// whole file at every reading. read must not keep the transaction or its
// byte slices past its return, nor call the store's Meta.
func (s *Store) View(read func(*bolt.Tx) error) error {
	if s.db == nil {
		return ErrClosed
	}
	return s.db.View(read)
}

// appliedPosition is the last applied entry.
type appliedPosition struct {
	index uint64
	term  uint64
}

// persisted is everything a store holds, read at New.
type persisted struct {
	// hardState and snapshot are nil when none was written.
	hardState *raftpb.HardState
	snapshot  *raftpb.Snapshot
	// entries are the log, in index order (may start before the snapshot
	// index: the kept tail).
	entries []*raftpb.Entry
	applied appliedPosition
	image   stateImage
}

// fresh reports whether nothing was ever persisted.
func (p persisted) fresh() bool {
	return p.hardState == nil && p.snapshot == nil && len(p.entries) == 0
}

// load reads the whole store.
func (s *Store) load() (persisted, error) {
	if s.db == nil {
		return persisted{}, ErrClosed
	}
	var p persisted
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if p.hardState, p.snapshot, p.applied, err = loadRaftState(tx.Bucket(bucketRaft), tx.Bucket(bucketSnapshot)); err != nil {
			return err
		}
		if p.entries, err = loadEntries(tx.Bucket(bucketLog)); err != nil {
			return err
		}
		p.image, err = loadImage(tx)
		return err
	})
	return p, err
}

// loadRaftState reads the hard state and the applied position from the
// raft bucket, and the snapshot from its own.
func loadRaftState(bucket, snapshotBucket *bolt.Bucket) (*raftpb.HardState, *raftpb.Snapshot, appliedPosition, error) {
	var hardState *raftpb.HardState
	var snapshot *raftpb.Snapshot
	var err error
	if data := bucket.Get(keyHardState); data != nil {
		hardState = &raftpb.HardState{}
		err = unmarshalStored(data, hardState)
	}
	if data := snapshotBucket.Get(keySnapshot); data != nil && err == nil {
		snapshot = &raftpb.Snapshot{}
		err = unmarshalStored(data, snapshot)
	}
	applied, appliedErr := decodeApplied(bucket.Get(keyApplied))
	return hardState, snapshot, applied, errors.Join(err, appliedErr)
}

// loadEntries reads the log in index order.
func loadEntries(bucket *bolt.Bucket) ([]*raftpb.Entry, error) {
	var entries []*raftpb.Entry
	err := bucket.ForEach(func(key, value []byte) error {
		entry := &raftpb.Entry{}
		if err := unmarshalStored(value, entry); err != nil {
			return err
		}
		if len(key) != 8 || binary.BigEndian.Uint64(key) != entry.GetIndex() {
			return fmt.Errorf("%w: log key %x holds entry %d", ErrStoreFormat, key, entry.GetIndex())
		}
		entries = append(entries, entry)
		return nil
	})
	return entries, err
}

// unmarshalStored decodes a protobuf record of the store.
func unmarshalStored(data []byte, message proto.Message) error {
	if err := proto.Unmarshal(data, message); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrStoreFormat, message, err)
	}
	return nil
}

// decodeApplied decodes the applied position (absent: zero).
func decodeApplied(data []byte) (appliedPosition, error) {
	switch len(data) {
	case 0:
		return appliedPosition{}, nil
	case 16:
		return appliedPosition{index: binary.BigEndian.Uint64(data), term: binary.BigEndian.Uint64(data[8:])}, nil
	}
	return appliedPosition{}, fmt.Errorf("%w: applied position of %d bytes", ErrStoreFormat, len(data))
}

// encodeApplied encodes the applied position.
func encodeApplied(position appliedPosition) []byte {
	data := binary.BigEndian.AppendUint64(nil, position.index)
	return binary.BigEndian.AppendUint64(data, position.term)
}
