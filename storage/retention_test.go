package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// appendTimed appends n records with TimeMs = timeMs and syncs.
func appendTimed(t *testing.T, log *Log, n int, timeMs int64) {
	t.Helper()
	for range n {
		_, err := log.Append(Record{TimeMs: timeMs, Payload: make([]byte, 100)})
		require.NoError(t, err)
	}
	require.NoError(t, log.Sync())
}

// Retention deletes sealed segments whose newest record is older than the
// cutoff, oldest first, never the active one; Oldest moves up and reads
// below it are ErrAgedOut.
func TestRetentionDeletesOldSealedSegments(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTimed(t, log, 80, 1_000)
		appendTimed(t, log, 80, 5_000)
		before := log.Stats()
		require.Greater(t, before.Segments, 4)

		result, err := log.ApplyRetention(3_000, 1_000) // cutoff 2000
		require.NoError(t, err)
		require.Positive(t, result.SegmentsDeleted)
		require.Equal(t, log.Oldest(), result.RecordsDeleted)
		require.Equal(t, before.Segments-result.SegmentsDeleted, log.Stats().Segments)
		require.Equal(t, before.SizeBytes-result.BytesDeleted, log.Stats().SizeBytes)
		require.LessOrEqual(t, log.Oldest(), uint64(80), "a segment holding a newer record is kept")
		require.Equal(t, int64(5_000), log.Stats().OldestSegmentTimeMs,
			"the kept oldest segment holds a record of the second batch")
		_, err = log.Read(log.Oldest() - 1)
		require.ErrorIs(t, err, ErrAgedOut)
		_, err = log.Read(log.Oldest())
		require.NoError(t, err)
		names, err := fs.List("p")
		require.NoError(t, err)
		require.NotContains(t, names, segmentName(0))

		result, err = log.ApplyRetention(1_000_000, 1_000)
		require.NoError(t, err)
		require.Equal(t, 1, log.Stats().Segments, "the active segment is never deleted")
		require.Equal(t, uint64(160), log.HWM())
		require.NoError(t, log.Close())

		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, 1, recovery.Segments)
		require.Zero(t, recovery.CorruptCount)
		require.Equal(t, uint64(160), recovery.HWM)
		require.NoError(t, log.Close())
	})
}

// Retention moves a lagging committed offset up to Oldest and reports the
// unacknowledged records it dropped.
func TestRetentionAdvancesCommitted(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(1), "p", smallLogConfig())
	appendTimed(t, log, 100, 1_000)
	appendTimed(t, log, 1, 9_000)
	log.SetCommitted(3)
	keptBase := log.segmentOf(100).base
	require.Greater(t, keptBase, uint64(3))
	result, err := log.ApplyRetention(9_000, 1_000)
	require.NoError(t, err)
	require.Equal(t, keptBase, log.Oldest())
	require.Equal(t, keptBase-3, result.UnackedDropped)
	require.Equal(t, keptBase, log.Committed())
	require.True(t, log.CommittedDirty())
}

// A sealed segment that still holds records above the HWM (rolled but not
// yet synced) is kept, however old its records are.
func TestRetentionKeepsUnsyncedSegments(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(1), "p", smallLogConfig())
	for range 100 {
		_, err := log.Append(Record{TimeMs: 1, Payload: make([]byte, 100)})
		require.NoError(t, err)
	}
	require.Greater(t, log.Stats().Segments, 1)
	result, err := log.ApplyRetention(1_000_000, 1)
	require.NoError(t, err)
	require.Zero(t, result.SegmentsDeleted)
	require.NoError(t, log.Sync())
	result, err = log.ApplyRetention(1_000_000, 1)
	require.NoError(t, err)
	require.Positive(t, result.SegmentsDeleted)
}

// Retention 0 keeps everything; a negative retention is a caller bug.
func TestRetentionZeroKeepsForever(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(1), "p", smallLogConfig())
	appendTimed(t, log, 100, 1)
	result, err := log.ApplyRetention(1_000_000, 0)
	require.NoError(t, err)
	require.Zero(t, result)
	require.Panics(t, func() { _, _ = log.ApplyRetention(0, -1) })
}

// A failed removal fails the log.
func TestRetentionFailureFailsLog(t *testing.T) {
	fs := newLogMemFS(2)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTimed(t, log, 100, 1)
	fs.FailNext(FaultSyncDir, errInjectedSync, 1)
	_, err := log.ApplyRetention(1_000, 1)
	require.ErrorIs(t, err, ErrLogFailed)
	require.ErrorIs(t, log.Sync(), ErrLogFailed)
}
