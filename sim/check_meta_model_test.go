package sim

import (
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"narad/meta"
)

// TestATouchedComparisonReadsWhatTheEntriesTouched: between two full
// comparisons, the records an entry touched are read alone from the
// replica's store and compared with the model, so a divergence there
// shows at once, even if it heals before the next full comparison; a
// replica that agrees passes; records nothing touched are not read.
func TestATouchedComparisonReadsWhatTheEntriesTouched(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "replica.db"), 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	put := func(bucket []byte, key string, value any) {
		require.NoError(t, db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			data, err := json.Marshal(value)
			if err != nil {
				return err
			}
			return b.Put([]byte(key), data)
		}))
	}
	applied := binary.BigEndian.AppendUint64(nil, 9)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(replicaRaftBucket)
		if err != nil {
			return err
		}
		return b.Put(replicaAppliedKey, applied)
	}))
	put(replicaMembersBucket, "n1", meta.Member{ID: "n1", Alive: true, LastHeartbeatMs: 1})
	put(replicaMembersBucket, "n2", meta.Member{ID: "n2", Alive: false, LastHeartbeatMs: 1}) // differs, untouched
	put(replicaTopicsBucket, "t", meta.TopicRecord{Name: "t", Partitions: 1, Assignments: []meta.Assignment{{Owner: "n2"}}})

	m := movedModel(t)
	read := func(abouts ...string) replicaReport {
		report := replicaReport{topics: map[string]meta.TopicRecord{}, members: map[string]meta.Member{}}
		require.NoError(t, db.View(func(tx *bolt.Tx) error { return report.readItems(tx, abouts) }))
		return report
	}
	report := read("topic t", "member n1")
	require.Equal(t, uint64(9), report.applied)
	require.NotContains(t, report.members, "n2", "only what the entries touched is read")
	require.Contains(t, aboutDifference(m, report, "topic t"), "partition 0", "the replica's owner differs from the model's")
	require.Empty(t, aboutDifference(m, report, "member n1"))

	put(replicaTopicsBucket, "t", meta.TopicRecord{Name: "t", Partitions: 1, Assignments: []meta.Assignment{{Owner: "n1"}}})
	require.Empty(t, aboutDifference(m, read("topic t"), "topic t"), "an agreeing replica")
	require.Empty(t, aboutDifference(m, read("topic gone"), "topic gone"), "a topic neither has")
	require.Equal(t, "the model has it, the replica does not", aboutDifference(movedModel(t), read("member n3"), "member n1"))
}
