package meta

import (
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
)

// A store whose log is missing entries the hard state says are committed
// (a damaged or partly restored file) must be refused by New with
// ErrStoreFormat, as checkPersisted refuses an applied index past the
// commit; it must not panic inside raft.
func TestAStoreCommitPastItsLogIsRefused(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 41)
	c := newTestCluster(t, 1, 41, false, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	c.crash(leader)
	node := c.nodes[leader]
	store, err := OpenStore(node.path, StoreOptions{})
	require.NoError(t, err)
	require.NoError(t, store.db.Update(func(tx *bolt.Tx) error {
		bucket := tx.Bucket(bucketRaft)
		hardState := &raftpb.HardState{}
		require.NoError(t, unmarshalStored(bucket.Get(keyHardState), hardState))
		hardState.Commit = new(hardState.GetCommit() + 5) // commit past the last stored entry
		return putProto(bucket, keyHardState, hardState)
	}))
	require.NotPanics(t, func() {
		m, err := New(node.config, store)
		require.ErrorIs(t, err, ErrStoreFormat)
		require.Nil(t, m)
	})
	_ = store.Close()
}
