package storage

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// Appends while a round is in flight stay invisible when it completes:
// the round makes visible only what was written before it was prepared,
// and the next round covers the rest, across a segment roll.
func TestSyncRoundCoversOnlyWhatWasWrittenBefore(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		round := log.PrepareSync(true, false)
		require.Equal(t, 10, round.Records())
		require.True(t, log.Syncing())
		appendTestRecords(t, log, 10, 120) // rolls segments meanwhile
		require.NoError(t, round.Run())
		require.NoError(t, log.CompleteSync(round, nil))
		require.Equal(t, uint64(10), log.HWM())
		require.True(t, log.Dirty(), "the appends after the round wait for the next")
		_, err := log.Read(10)
		require.ErrorIs(t, err, ErrBeyondHWM)
		require.NoError(t, log.Sync())
		require.Equal(t, uint64(120), log.HWM())
		requireTestRecords(t, log, 0, 120)
		require.NoError(t, log.Close())
	})
}

// A crash while a round is in flight and the log has taken more appends:
// what the round's fsyncs covered is served after recovery; nothing is
// served that is not durable.
func TestSyncRoundCrashInFlight(t *testing.T) {
	for seed := range uint64(8) {
		fs := newLogMemFS(seed)
		fs.SetTornWriteProbability(0.5)
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 30)
		require.NoError(t, log.Sync())
		appendTestRecords(t, log, 30, 60)
		round := log.PrepareSync(true, false)
		appendTestRecords(t, log, 60, 90)
		require.NoError(t, round.Run())
		fs.Crash() // before CompleteSync: the 30 records were never acknowledged
		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.GreaterOrEqual(t, recovery.HWM, uint64(60), "seed %d: the round's fsynced frames survive", seed)
		requireTestRecords(t, log, 0, recovery.HWM)
		fs.Crash() // recovery made what it serves durable
		log, again := openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, recovery.HWM, again.HWM, "seed %d", seed)
		require.NoError(t, log.Close())
	}
}

// Closing a log while its round is in flight keeps the files open for the
// round; completing it closes them, and retention waits for the round.
func TestSyncRoundCloseAndRetentionWait(t *testing.T) {
	fs := newLogMemFS(3)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 120)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 120, 125)
	round := log.PrepareSync(true, true)
	retained, err := log.ApplyRetention(1_000_000, 1)
	require.NoError(t, err)
	require.Zero(t, retained.SegmentsDeleted, "no deletion while a round is in flight")
	require.NoError(t, log.Close())
	require.NoError(t, round.Run(), "the files are still open")
	require.NoError(t, log.CompleteSync(round, nil))
	_, err = log.Read(0)
	require.ErrorIs(t, err, ErrClosed)
	require.Error(t, log.Close())
}

// A failed round fails the log; the round of a closed log never starts.
func TestSyncRoundFailure(t *testing.T) {
	fs := newLogMemFS(4)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 5)
	round := log.PrepareSync(true, false)
	injected := errors.New("injected")
	err := log.CompleteSync(round, injected)
	require.ErrorIs(t, err, ErrLogFailed)
	require.ErrorIs(t, err, injected)
	require.False(t, log.Syncing())
	closed := log.PrepareSync(true, false)
	require.ErrorIs(t, closed.Run(), ErrLogFailed)
	require.ErrorIs(t, log.CompleteSync(closed, closed.Run()), ErrLogFailed)
}

// Simulator seed 100092: appends written while another log's round was in
// flight, then a write that failed the log. Reopened, the log serves the
// frame that reached the disk unacknowledged, and only once it is durable
// (a crash right after the reopen keeps it).
func TestReopenAfterAFailedWriteServesOnlyDurableFrames(t *testing.T) {
	fs := newLogMemFS(5)
	cfg := smallLogConfig()
	cfg.WriteBufferBytesMax = 1 // every append reaches the file at once
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 3, 4) // written, never synced
	fs.FailNext(FaultWrite, ErrNoSpace, 1)
	_, err := log.Append(testRecord(4))
	require.ErrorIs(t, err, ErrLogFailed)
	require.NoError(t, log.Close(), "a failed log closes its files without writing")
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(4), recovery.HWM, "the written frame is found past the persisted hwm")
	requireTestRecords(t, log, 0, 4)
	durable, again, err := OpenLog(fs.DurableClone(), "p", cfg)
	require.NoError(t, err)
	require.Equal(t, recovery.HWM, again.HWM, "what the reopen serves is durable")
	require.NoError(t, durable.Close())
	require.NoError(t, log.Close())
}
