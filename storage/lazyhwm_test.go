package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// lazyLogConfig writes the hwm file only when lagBytes of frames were
// appended since its last write (no time bound within these tests).
func lazyLogConfig(lagBytes int64) LogConfig {
	cfg := smallLogConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.HWMLagBytesMax = lagBytes
	cfg.HWMLagMsMax = hwmLagMsLimit
	return cfg
}

// A round that appended less than the lag bound costs one fsync: the data.
func TestLazyHWMOneFsyncPerRound(t *testing.T) {
	fs := newLogMemFS(1)
	log, _ := openTestLog(t, fs, "p", lazyLogConfig(1<<20))
	before := fs.Stats()
	for round := range uint64(10) {
		appendTestRecords(t, log, round*3, round*3+3)
		require.NoError(t, log.Sync())
	}
	after := fs.Stats()
	require.Equal(t, int64(10), after.Syncs-before.Syncs, "one data fsync per round, no hwm fsync")
	require.Equal(t, uint64(30), log.HWM())
	require.Less(t, log.hwmFile.value, log.HWM(), "the hwm file lags")

	eager := newLogMemFS(2)
	log, _ = openTestLog(t, eager, "p", lazyLogConfig(0))
	before = eager.Stats()
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	require.Equal(t, int64(2), eager.Stats().Syncs-before.Syncs, "a zero bound writes the hwm file every round")
}

// The hwm file is written once the bytes since its last write reach the
// bound, when a segment is sealed, and at Close.
func TestLazyHWMWrittenByBytesSealAndClose(t *testing.T) {
	fs := newLogMemFS(3)
	cfg := lazyLogConfig(2 << 10)
	log, _ := openTestLog(t, fs, "p", cfg)
	var next uint64
	for log.hwmFile.value == 0 {
		appendTestRecords(t, log, next, next+1)
		next++
		require.NoError(t, log.Sync())
		require.LessOrEqual(t, log.hwmLag.bytes, cfg.HWMLagBytesMax)
	}
	require.Equal(t, next, log.hwmFile.value, "written by the round that reached the bound")

	segments := len(log.segments)
	for len(log.segments) == segments {
		appendTestRecords(t, log, next, next+1)
		next++
	}
	require.NoError(t, log.Sync())
	require.Equal(t, next, log.hwmFile.value, "the round after a seal writes it")

	appendTestRecords(t, log, next, next+1)
	next++
	require.NoError(t, log.Sync())
	require.Less(t, log.hwmFile.value, next)
	require.NoError(t, log.Close())
	_, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, next, recovery.PersistedHWM, "Close writes the lagging hwm")
}

// The time bound: the newest record's time HWMLagMsMax past the first
// since the last write makes the round write the hwm file.
func TestLazyHWMWrittenByRecordTime(t *testing.T) {
	fs := newLogMemFS(4)
	cfg := lazyLogConfig(1 << 20)
	cfg.HWMLagMsMax = 100
	log, _ := openTestLog(t, fs, "p", cfg)
	for _, timeMs := range []int64{1_000, 1_050, 1_099} {
		_, err := log.Append(Record{TimeMs: timeMs, Payload: []byte("x")})
		require.NoError(t, err)
		require.NoError(t, log.Sync())
		require.Zero(t, log.hwmFile.value)
	}
	_, err := log.Append(Record{TimeMs: 1_100, Payload: []byte("x")})
	require.NoError(t, err)
	require.NoError(t, log.Sync())
	require.Equal(t, uint64(4), log.hwmFile.value)
}

// After a machine crash every acknowledged record is back, though the hwm
// file lagged: recovery keeps the contiguous run of valid frames past it
// and persists the new HWM before serving.
func TestLazyHWMCrashKeepsAcknowledged(t *testing.T) {
	fs := newLogMemFS(5)
	fs.SetTornWriteProbability(1)
	cfg := lazyLogConfig(1 << 20)
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 40)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 40, 45) // never acknowledged: torn by the crash
	fs.Crash()
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Zero(t, recovery.PersistedHWM)
	require.GreaterOrEqual(t, recovery.HWM, uint64(40))
	requireTestRecords(t, log, 0, 40)
	_, again := openTestLog(t, fs.DurableClone(), "p", cfg)
	require.Equal(t, recovery.HWM, again.PersistedHWM, "the new HWM was persisted before serving")
}

// After a process crash (the page cache survives), recovery finds frames
// that were written but never synced; it serves them only once they are
// durable.
func TestLazyHWMProcessCrashSyncsBeforeServing(t *testing.T) {
	fs := newLogMemFS(6)
	cfg := lazyLogConfig(1 << 20)
	cfg.WriteBufferBytesMax = 1 // every append reaches the file at once
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 10, 15)
	_, recovery := openTestLog(t, fs, "p", cfg) // the old process is gone without a Close
	require.Equal(t, uint64(15), recovery.HWM)
	_, durable := openTestLog(t, fs.DurableClone(), "p", cfg)
	require.Equal(t, uint64(15), durable.HWM, "what is served survives a machine crash now")
}

// The corruption window: media damage to an acknowledged record above the
// lazily persisted HWM truncates the log there; below it, the record is
// skipped and the ones after it kept.
func TestLazyHWMCorruptionWindow(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lagBytes    int64
		wantHWM     uint64
		wantCorrupt uint64
	}{
		{"above the persisted HWM: truncated there", 1 << 20, 20, 0},
		{"below the persisted HWM: skipped", 0, 30, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newLogMemFS(7)
			cfg := lazyLogConfig(tc.lagBytes)
			log, _ := openTestLog(t, fs, "p", cfg)
			appendTestRecords(t, log, 0, 30)
			require.NoError(t, log.Sync())
			name, position := framePosition(t, log, 20)
			flipByte(t, fs, name, position+frameHeaderBytes)
			fs.Crash()
			_, recovery := openTestLog(t, fs, "p", cfg)
			require.Equal(t, tc.wantHWM, recovery.HWM)
			require.Equal(t, tc.wantCorrupt, recovery.CorruptCount)
		})
	}
}

// PersistHWMNextRound makes the next round that carries frames write the
// hwm file, however little it lags, and only that round; a close after it
// has nothing to write.
func TestPersistHWMNextRoundWritesItOnce(t *testing.T) {
	fs := newLogMemFS(4)
	log, _ := openTestLog(t, fs, "p", lazyLogConfig(1<<20))
	appendTestRecords(t, log, 0, 2)
	require.NoError(t, log.Sync())
	require.Zero(t, log.hwmFile.value, "lazy: the hwm file lags")

	log.PersistHWMNextRound()
	appendTestRecords(t, log, 2, 3)
	before := fs.Stats()
	require.NoError(t, log.Sync())
	require.Equal(t, int64(2), fs.Stats().Syncs-before.Syncs, "the data, then the hwm file")
	require.Equal(t, uint64(3), log.hwmFile.value)

	appendTestRecords(t, log, 3, 4)
	require.NoError(t, log.Sync())
	require.Equal(t, uint64(3), log.hwmFile.value, "the next round is lazy again")
	log.PersistHWMNextRound()
	appendTestRecords(t, log, 4, 5)
	require.NoError(t, log.Sync())
	before = fs.Stats()
	require.NoError(t, log.Close())
	require.Equal(t, before.Syncs, fs.Stats().Syncs, "nothing lags at the close: no fsync")
}

// A recovery that finds records past the hwm file raises it in place,
// into the file's older slot, as a sync round does: on a disk with no
// room for a new file (a restart on a full disk after a crash, when the
// lazily written hwm file lags) the log still opens, and the raised hwm
// is durable. An atomic replace needed a new block there, and the
// partition stayed unavailable until space was freed (full-disk audit).
func TestRecoveryRaisesTheHWMInPlaceOnAFullDisk(t *testing.T) {
	fs := newLogMemFS(7)
	cfg := lazyLogConfig(1 << 20)
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close()) // the hwm file says 3
	log, _ = openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 3, 20)
	require.NoError(t, log.Sync()) // acknowledged; the hwm file lags at 3
	fs.Crash()
	fs.FailNext(FaultCreate, ErrNoSpace, 1_000) // no file can be created
	log, recovery := openTestLog(t, fs, "p", cfg)
	fs.FailNext(FaultCreate, nil, 0)
	require.Equal(t, uint64(3), recovery.PersistedHWM)
	require.Equal(t, uint64(20), recovery.HWM)
	requireTestRecords(t, log, 0, 20)
	_, again := openTestLog(t, fs.DurableClone(), "p", cfg)
	require.Equal(t, uint64(20), again.PersistedHWM, "the raised HWM is durable")
}
