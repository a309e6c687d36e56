package storage

import (
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

// PersistedBacklog reads a closed log's high watermark and committed
// offset from its files, agreeing with what the log itself reports once
// opened; a directory with nothing persisted, or a consumer.offset that
// does not decode, is no answer.
func TestPersistedBacklogAgreesWithTheLog(t *testing.T) {
	fs := newLogMemFS(21)
	_, _, ok, err := PersistedBacklog(fs, "p")
	require.NoError(t, err)
	require.False(t, ok, "no directory: nothing persisted")

	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	hwm, committed, ok, err := PersistedBacklog(fs, "p")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, [2]uint64{10, 0}, [2]uint64{hwm, committed}, "no consumer.offset yet: nothing committed")

	log.SetCommitted(4)
	require.NoError(t, log.SyncCommitted())
	require.NoError(t, log.Close())
	hwm, committed, ok, err = PersistedBacklog(fs, "p")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, [2]uint64{10, 4}, [2]uint64{hwm, committed})
	log, _ = openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, [2]uint64{log.HWM(), log.Committed()}, [2]uint64{hwm, committed}, "the opened log agrees")
	require.NoError(t, log.Close())

	require.NoError(t, WriteFileAtomic(fs, path.Join("p", committedFileName), []byte("not an offset")))
	_, _, ok, err = PersistedBacklog(fs, "p")
	require.NoError(t, err)
	require.False(t, ok, "a consumer.offset that does not decode is left to recovery")

	require.NoError(t, WriteFileAtomic(fs, path.Join("p", committedFileName), encodeCommitted(99)))
	hwm, committed, ok, err = PersistedBacklog(fs, "p")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, [2]uint64{10, 10}, [2]uint64{hwm, committed}, "the committed offset is at most the high watermark")
}
