package meta

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
)

// Property: a store of another format is refused, not reinterpreted.
func TestOpenStoreRejectsOtherFormats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := bolt.Open(path, storeFileMode, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		bucket, err := tx.CreateBucket(bucketRaft)
		if err != nil {
			return err
		}
		return bucket.Put(keyFormat, []byte{storeFormatVersion + 1})
	}))
	require.NoError(t, db.Close())
	_, err = OpenStore(path, StoreOptions{})
	require.ErrorIs(t, err, ErrStoreFormat)
}

// downgradeToFormat1 rewrites a closed format 2 store as format 1 wrote
// it: the snapshot in bucket "raft", no bucket "snapshot".
func downgradeToFormat1(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, storeFileMode, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		raftBucket := tx.Bucket(bucketRaft)
		snapshot := tx.Bucket(bucketSnapshot).Get(keySnapshot)
		require.NotNil(t, snapshot, "the store holds a snapshot to move")
		if err := raftBucket.Put(keySnapshot, bytes.Clone(snapshot)); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketSnapshot); err != nil {
			return err
		}
		return raftBucket.Put(keyFormat, []byte{storeFormat1})
	}))
	require.NoError(t, db.Close())
}

// Property: a format 1 store (the snapshot beside the hard state) opens:
// it is migrated in place to format 2 and recovers the same state, applied
// index and log as before.
func TestOpenStoreMigratesFormat1(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 53)
	c := newTestCluster(t, 1, 53, false, func(config *Config) {
		config.SnapshotEntries, config.SnapshotTailEntries = 10, 3
	})
	leader := c.waitLeader()
	for i := range 30 {
		c.requireApplied(c.propose(leader, heartbeat("n1", int64(100+i))), nil)
	}
	require.Positive(t, c.meta(leader).Status().SnapshotIndex, "a snapshot was taken")
	image, applied := c.meta(leader).State().encodeImage(), c.meta(leader).AppliedIndex()
	c.crash(leader)
	path := c.nodes[leader].path
	downgradeToFormat1(t, path)

	c.start(leader)
	require.Equal(t, string(image), string(c.meta(leader).State().encodeImage()))
	require.Equal(t, applied, c.meta(leader).AppliedIndex())
	c.crash(leader)
	db, err := bolt.Open(path, storeFileMode, &bolt.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		require.Equal(t, []byte{storeFormatVersion}, tx.Bucket(bucketRaft).Get(keyFormat))
		require.Nil(t, tx.Bucket(bucketRaft).Get(keySnapshot), "the snapshot left bucket raft")
		require.NotNil(t, tx.Bucket(bucketSnapshot).Get(keySnapshot))
		return nil
	}))
	require.NoError(t, db.Close())

	c.start(leader) // and the migrated store serves on
	leader = c.waitLeader()
	c.requireApplied(c.propose(leader, createTopic("t", "n1")), nil)
}

// Property: a store written with the freelist on disk (production) opens
// without it (StoreOptions.NoFreelistSync, as the simulator does), which
// then commits without one, and that store opens in production again with
// its state whole and serves on: the option may differ between opens.
func TestOpenStoreWithOrWithoutFreelist(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 59)
	c := newTestCluster(t, 1, 59, false, nil)
	leader := c.waitLeader()
	for i := range 10 {
		c.requireApplied(c.propose(leader, heartbeat("n1", int64(100+i))), nil)
	}
	image, applied := c.meta(leader).State().encodeImage(), c.meta(leader).AppliedIndex()
	c.crash(leader)
	path := c.nodes[leader].path

	db, err := bolt.Open(path, storeFileMode, &bolt.Options{FreelistType: bolt.FreelistArrayType, NoFreelistSync: true})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketRaft).Put([]byte("without-freelist"), []byte{1}) }))
	require.NoError(t, db.Close())

	c.start(leader)
	require.Equal(t, string(image), string(c.meta(leader).State().encodeImage()))
	require.Equal(t, applied, c.meta(leader).AppliedIndex())
	leader = c.waitLeader()
	c.requireApplied(c.propose(leader, createTopic("t", "n1")), nil)
}

// Property: a single voter elects itself, and its state, applied index
// and voters survive a restart from its file (with fsync on).
func TestSingleNodeRestart(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 41)
	c := newTestCluster(t, 1, 41, false, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	c.requireApplied(c.propose(leader, createTopic("t", "n1")), nil)
	image, applied := c.meta(leader).State().encodeImage(), c.meta(leader).AppliedIndex()
	c.crash(leader)
	c.start(leader)
	require.Equal(t, string(image), string(c.meta(leader).State().encodeImage()))
	require.Equal(t, applied, c.meta(leader).AppliedIndex())
	require.Equal(t, []uint64{1}, c.meta(leader).State().ConfState().Voters)
	leader = c.waitLeader()
	c.requireApplied(c.propose(leader, DeleteTopic{Name: "t", ExpectedCreation: c.creation(leader, "t")}), nil)
}

// Property: a closed Meta refuses work; a failed Persist finishes the
// instance instead of letting it carry on past a lost write.
func TestClosedAndFailedInstances(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 43)
	c := newTestCluster(t, 3, 43, true, nil)
	leader := c.waitLeader()
	m := c.meta(leader)
	_, err := m.Propose(createTopic("t", "n1"))
	require.NoError(t, err)
	require.True(t, m.HasReady())
	rd := m.Ready()
	require.NoError(t, m.store.db.Close(), "pull the file out from under the instance")
	require.Error(t, m.Persist(rd))
	require.False(t, m.HasReady())
	_, err = m.Propose(DeleteTopic{Name: "t"})
	require.ErrorContains(t, err, "instance finished")
	require.Error(t, m.Step(&raftpb.Message{To: new(m.self.RaftID)}))

	follower := c.meta(otherThan(c.ids, leader)[0])
	require.NoError(t, follower.Close())
	require.NoError(t, follower.Close(), "closing twice is harmless")
	_, err = follower.Propose(DeleteTopic{Name: "t"})
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, follower.Step(&raftpb.Message{}), ErrClosed)
	require.False(t, follower.IsLeader())
}

// Property: Step refuses a message addressed to another node.
func TestStepRefusesMisdirectedMessages(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 47)
	c := newTestCluster(t, 3, 47, true, nil)
	err := c.meta("n1").Step(&raftpb.Message{Type: raftpb.MsgHeartbeat.Enum(), To: new(uint64(2)), From: new(uint64(3))})
	require.ErrorIs(t, err, ErrMisdirected)
}

// Property: the Ready cycle is enforced; skipping a step is a bug and
// panics with what went wrong.
func TestReadyCycleOrderIsEnforced(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 53)
	c := newTestCluster(t, 3, 53, true, nil)
	m := c.meta("n1")
	require.True(t, m.HasReady(), "a bootstrapped node has its first Ready")
	rd := m.Ready()
	require.PanicsWithValue(t, "invariant broken: meta: Advance of Ready 1 in phase 1, Ready 1 outstanding", func() { m.Advance(rd) })
	require.Panics(t, func() { m.Ready() })
	require.NoError(t, m.Persist(rd))
	m.Advance(rd)
	require.Panics(t, func() { _ = m.Persist(rd) }, "a Ready is persisted once")
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig("n1", clusterPeers(3)).Validate())
	bad := DefaultConfig("n9", []Peer{{ID: "n1", RaftID: 1, ClusterAddr: "a"}, {ID: "n1", RaftID: 0, ClusterAddr: ""}})
	bad.HeartbeatTicks, bad.ElectionTicks = 0, 0
	bad.SnapshotEntries, bad.MaxSizePerMsg, bad.MaxInflightMsgs, bad.MaxUncommittedEntriesSize = 0, 0, 0, 10
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"no entry for NodeID", "raft id 0", "repeats", "HeartbeatTicks", "ElectionTicks",
		"SnapshotEntries", "MaxSizePerMsg", "MaxInflightMsgs", "MaxUncommittedEntriesSize"} {
		require.True(t, strings.Contains(err.Error(), want), "missing %q in %v", want, err)
	}
	_, err = New(bad, nil)
	require.Error(t, err, "New validates before touching the store")
}

// Property: an idle cluster (heartbeats only) writes nothing: a Ready
// that only carries messages costs no bbolt transaction.
func TestIdleTicksWriteNothing(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 59)
	c := newTestCluster(t, 3, 59, true, nil)
	c.waitLeader()
	c.tick(2)
	before := c.writeTransactionIDs()
	c.tick(5 * defaultElectionTicks)
	require.Equal(t, before, c.writeTransactionIDs())
}

// writeTransactionIDs returns each running node's last committed bbolt
// transaction id.
func (c *testCluster) writeTransactionIDs() map[string]int {
	ids := map[string]int{}
	for _, id := range c.running() {
		require.NoError(c.t, c.meta(id).store.db.View(func(tx *bolt.Tx) error {
			ids[id] = int(tx.ID())
			return nil
		}))
	}
	return ids
}
