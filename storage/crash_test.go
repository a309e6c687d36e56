package storage

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Crash and corruption tests of the partition log, on MemFS (and, where
// the damage is made through the FS API, on both file systems).

var errInjectedSync = fmt.Errorf("injected sync failure: %w", ErrIO)

// nameFaultFS fails File.Sync of files whose name ends with suffix, for
// the next remaining calls: a fault aimed at one file of a log (MemFS's
// FailNext hits whichever file syncs next).
type nameFaultFS struct {
	FS
	suffix    string
	remaining int
}

func (f *nameFaultFS) Create(name string) (File, error) { return f.wrapNamed(name)(f.FS.Create(name)) }
func (f *nameFaultFS) Open(name string) (File, error)   { return f.wrapNamed(name)(f.FS.Open(name)) }

func (f *nameFaultFS) wrapNamed(name string) func(File, error) (File, error) {
	return func(file File, err error) (File, error) {
		if err != nil {
			return nil, err
		}
		return &nameFaultFile{File: file, fs: f, name: name}, nil
	}
}

type nameFaultFile struct {
	File
	fs   *nameFaultFS
	name string
}

func (f *nameFaultFile) Sync() error {
	if f.fs.remaining > 0 && strings.HasSuffix(f.name, f.fs.suffix) {
		f.fs.remaining--
		return errInjectedSync
	}
	return f.File.Sync()
}

// A failed segment fsync fails the log: the HWM does not move, every later
// call returns the same error, and after a crash every record acknowledged
// before the failure is still there.
func TestCrashSegmentSyncFailureFailsLog(t *testing.T) {
	fs := newLogMemFS(3)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 20)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 20, 30)
	fs.FailNext(FaultSync, errInjectedSync, 1)
	err := log.Sync()
	require.ErrorIs(t, err, ErrLogFailed)
	require.ErrorIs(t, err, ErrIO)
	require.Equal(t, uint64(20), log.HWM(), "the hwm does not move past an unsynced frame")
	_, appendErr := log.Append(testRecord(30))
	_, readErr := log.Read(0)
	for _, later := range []error{appendErr, readErr, log.Sync(), log.SyncCommitted()} {
		require.Same(t, err, later, "fail-stop: every later call returns the first failure")
	}
	fs.Crash()
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.GreaterOrEqual(t, recovery.HWM, uint64(20))
	require.Zero(t, recovery.CorruptCount)
	requireTestRecords(t, log, 0, recovery.HWM)
}

// A failed hwm fsync fails the log too; the data synced in that round may
// resurface after a crash (never acknowledged, allowed), nothing
// acknowledged is lost.
func TestCrashHWMSyncFailureFailsLog(t *testing.T) {
	memFS := newLogMemFS(4)
	memFS.SetTornWriteProbability(1)
	fs := &nameFaultFS{FS: memFS, suffix: "/" + hwmFileName}
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 40)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 40, 50)
	fs.remaining = 1
	require.ErrorIs(t, log.Sync(), ErrLogFailed)
	require.Equal(t, uint64(40), log.HWM())
	memFS.Crash() // the unsynced slot write may tear: the other slot holds 40
	log, recovery := openTestLog(t, memFS, "p", smallLogConfig())
	require.False(t, recovery.HWMFileCorrupt)
	require.GreaterOrEqual(t, recovery.PersistedHWM, uint64(40))
	require.Equal(t, uint64(50), recovery.HWM, "the round's fsynced frames are recovered")
	requireTestRecords(t, log, 0, 50)
}

// A failed directory sync after a roll fails the log before the hwm could
// cover a segment whose name is not durable.
func TestCrashDirectorySyncFailureOnRoll(t *testing.T) {
	fs := newLogMemFS(5)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 10, 100)
	require.Greater(t, log.Stats().Segments, 1)
	fs.FailNext(FaultSyncDir, errInjectedSync, 1)
	require.ErrorIs(t, log.Sync(), ErrLogFailed)
	require.Equal(t, uint64(10), log.HWM())
	fs.Crash()
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Zero(t, recovery.CorruptCount)
	require.GreaterOrEqual(t, recovery.HWM, uint64(10))
	requireTestRecords(t, log, 0, recovery.HWM)
}

// A crash that tears the unsynced tail: recovery truncates it at the first
// invalid frame (above the persisted HWM), keeps whole frames that made it,
// and reports the bytes cut.
func TestCrashTornTailTruncated(t *testing.T) {
	for _, keepFraction := range []int64{0, 1, 2, 3} {
		t.Run(fmt.Sprint(keepFraction), func(t *testing.T) {
			fs := newLogMemFS(6)
			log, _ := openTestLog(t, fs, "p", smallLogConfig())
			appendTestRecords(t, log, 0, 20)
			require.NoError(t, log.Sync())
			appendTestRecords(t, log, 20, 30)
			require.NoError(t, log.flushPending())
			fs.CrashWith(func(_ string, writeBytes int64) int64 { return writeBytes*keepFraction/4 + 1 })
			log, recovery := openTestLog(t, fs, "p", smallLogConfig())
			require.Equal(t, uint64(20), recovery.PersistedHWM)
			require.GreaterOrEqual(t, recovery.HWM, uint64(20))
			require.Less(t, recovery.HWM, uint64(30))
			require.Positive(t, recovery.TruncatedBytes, "a torn frame was cut")
			require.Zero(t, recovery.CorruptCount)
			require.Equal(t, recovery.HWM, log.Next())
			requireTestRecords(t, log, 0, recovery.HWM)
			appendTestRecords(t, log, recovery.HWM, recovery.HWM+5)
			require.NoError(t, log.Sync())
			requireTestRecords(t, log, 0, recovery.HWM+5)
		})
	}
}

// A torn tail in a sealed segment above the persisted HWM removes the
// later segments too, so the log stays contiguous.
func TestCrashTornTailRemovesLaterSegments(t *testing.T) {
	fs := newLogMemFS(7)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 5)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 5, 120)
	syncFramesOnly(t, log) // data and names durable, hwm still 5
	require.Greater(t, log.Stats().Segments, 2)
	name, position := framePosition(t, log, 10)
	flipByte(t, fs, name, position)
	fs.Crash()
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, uint64(10), recovery.HWM)
	require.Equal(t, 1, recovery.Segments)
	require.Zero(t, recovery.CorruptCount)
	names, err := fs.List("p")
	require.NoError(t, err)
	require.Equal(t, []string{segmentName(0), hwmFileName}, names, "later segments removed")
	requireTestRecords(t, log, 0, 10)
}

// Damage to any part of a frame below the persisted HWM is corruption in
// the middle: reported with its offset, skipped, never served, and its
// neighbours still read. Runs on both file systems.
func TestCrashCorruptMiddleFrameSkipped(t *testing.T) {
	parts := map[string]int64{"magic": 0, "length": 5, "offset": 12, "crc": 17, "envelope": frameHeaderBytes + 2}
	for part, delta := range parts {
		t.Run(part, func(t *testing.T) {
			forEachLogFS(t, func(t *testing.T, fs FS) {
				log, _ := openTestLog(t, fs, "p", smallLogConfig())
				appendTestRecords(t, log, 0, 40)
				require.NoError(t, log.Sync())
				name, position := framePosition(t, log, 11)
				require.NoError(t, log.Close())
				flipByte(t, fs, name, position+delta)

				log, recovery := openTestLog(t, fs, "p", smallLogConfig())
				require.Equal(t, uint64(1), recovery.CorruptCount)
				require.Equal(t, []uint64{11}, recovery.CorruptOffsets)
				require.Equal(t, uint64(40), recovery.HWM)
				require.Equal(t, uint64(39), recovery.Records)
				_, err := log.Read(11)
				require.ErrorIs(t, err, ErrCorrupt)
				requireTestRecords(t, log, 0, 11)
				requireTestRecords(t, log, 12, 40)
				require.NoError(t, log.Close())
			})
		})
	}
}

// Several damaged frames in a row are one run of corrupt offsets; the
// report lists at most CorruptOffsetsReportedMax of them but counts all.
func TestCrashCorruptRunCountedExactly(t *testing.T) {
	fs := newLogMemFS(8)
	cfg := smallLogConfig()
	cfg.CorruptOffsetsReportedMax = 2
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 60)
	require.NoError(t, log.Sync())
	for offset := uint64(20); offset < 24; offset++ {
		name, position := framePosition(t, log, offset)
		flipByte(t, fs, name, position+frameHeaderBytes)
	}
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(4), recovery.CorruptCount)
	require.Equal(t, []uint64{20, 21}, recovery.CorruptOffsets)
	for offset := uint64(20); offset < 24; offset++ {
		_, err := log.Read(offset)
		require.ErrorIs(t, err, ErrCorrupt)
	}
	requireTestRecords(t, log, 0, 20)
	requireTestRecords(t, log, 24, 60)
}

// The last frame of a sealed segment, below the HWM, is corrupt: nothing
// in that segment follows it, so the offsets up to the next segment's base
// are the corrupt run.
func TestCrashCorruptEndOfSealedSegment(t *testing.T) {
	fs := newLogMemFS(9)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 120)
	require.NoError(t, log.Sync())
	second := log.segments[1]
	lastOfFirst := second.base - 1
	name, position := framePosition(t, log, lastOfFirst)
	flipByte(t, fs, name, position+1)
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, []uint64{lastOfFirst}, recovery.CorruptOffsets)
	_, err := log.Read(lastOfFirst)
	require.ErrorIs(t, err, ErrCorrupt)
	requireTestRecords(t, log, 0, lastOfFirst)
	requireTestRecords(t, log, lastOfFirst+1, 120)
	require.Equal(t, uint64(120), log.HWM())
}

// Acknowledged frames the disk lost from the end of the log are reported
// as LostAcknowledged and the HWM drops to the recovered end.
func TestCrashLostAcknowledgedReported(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		require.NoError(t, log.Sync())
		name, position := framePosition(t, log, 8)
		require.NoError(t, log.Close())
		truncateFile(t, fs, name, position+3)

		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, uint64(10), recovery.PersistedHWM)
		require.Equal(t, uint64(2), recovery.LostAcknowledged)
		require.Equal(t, uint64(8), recovery.HWM)
		requireTestRecords(t, log, 0, 8)
		require.NoError(t, log.Close())

		_, recovery = openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, uint64(8), recovery.PersistedHWM, "the lowered hwm was persisted")
		require.Zero(t, recovery.LostAcknowledged)
	})
}

// Valid frames above the persisted HWM are exposed at recovery, and made
// durable first, so they stay visible after another crash.
func TestCrashRecoveryExposesUnacknowledgedFrames(t *testing.T) {
	fs := newLogMemFS(10)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 10, 15)
	require.NoError(t, log.flushPending())
	require.NoError(t, log.Close()) // a process exit: the page cache keeps the bytes

	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, uint64(10), recovery.PersistedHWM)
	require.Equal(t, uint64(15), recovery.HWM)
	requireTestRecords(t, log, 0, 15)
	fs.Crash()
	log, recovery = openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, uint64(15), recovery.HWM, "what recovery exposed survives a power loss")
	requireTestRecords(t, log, 0, 15)
}

// One damaged hwm slot: recovery takes the other. Both damaged: reported,
// and the log recovers from the frames alone.
func TestCrashHWMSlots(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		require.NoError(t, log.Sync())
		appendTestRecords(t, log, 10, 12)
		require.NoError(t, log.Sync())
		lastSlot := 1 - log.hwmFile.nextSlot
		require.NoError(t, log.Close())
		hwmPath := path.Join("p", hwmFileName)

		flipByte(t, fs, hwmPath, int64(lastSlot*hwmSlotBytes+6))
		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, uint64(10), recovery.PersistedHWM, "the other slot holds the previous round")
		require.False(t, recovery.HWMFileCorrupt)
		require.Equal(t, uint64(12), recovery.HWM)
		require.NoError(t, log.Close())

		flipByte(t, fs, hwmPath, 1)
		flipByte(t, fs, hwmPath, hwmSlotBytes+1)
		log, recovery = openTestLog(t, fs, "p", smallLogConfig())
		require.True(t, recovery.HWMFileCorrupt)
		require.Zero(t, recovery.PersistedHWM)
		require.Equal(t, uint64(12), recovery.HWM)
		requireTestRecords(t, log, 0, 12)
		require.NoError(t, log.Close())
	})
}

// A torn write of the hwm slot leaves the other slot valid.
func TestCrashTornHWMSlot(t *testing.T) {
	for kept := int64(1); kept < hwmSlotBytes; kept += 5 {
		memFS := newLogMemFS(11)
		fs := &nameFaultFS{FS: memFS, suffix: "/" + hwmFileName}
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		require.NoError(t, log.Sync())
		appendTestRecords(t, log, 10, 20)
		fs.remaining = 1
		require.ErrorIs(t, log.Sync(), ErrLogFailed)
		memFS.CrashWith(func(name string, writeBytes int64) int64 {
			if strings.HasSuffix(name, hwmFileName) {
				return min(kept, writeBytes)
			}
			return writeBytes
		})
		_, recovery := openTestLog(t, memFS, "p", smallLogConfig())
		require.Equal(t, uint64(10), recovery.PersistedHWM, "kept %d bytes", kept)
		require.False(t, recovery.HWMFileCorrupt)
		require.Equal(t, uint64(20), recovery.HWM)
	}
}

// A damaged consumer.offset file resets the committed offset to Oldest
// (redelivery, never loss) and is reported.
func TestCrashCorruptCommittedFile(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		require.NoError(t, log.Sync())
		log.SetCommitted(6)
		require.NoError(t, log.SyncCommitted())
		require.NoError(t, log.Close())
		flipByte(t, fs, path.Join("p", committedFileName), 7)
		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.True(t, recovery.CommittedReset)
		require.Zero(t, log.Committed())
		require.True(t, log.CommittedDirty(), "the reset value is rewritten on the next SyncCommitted")
		require.NoError(t, log.SyncCommitted())
		require.NoError(t, log.Close())
		_, recovery = openTestLog(t, fs, "p", smallLogConfig())
		require.False(t, recovery.CommittedReset)
	})
}

// A committed offset above a recovered HWM (data lost) is clamped.
func TestCrashCommittedClampedToHWM(t *testing.T) {
	fs := newLogMemFS(12)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	log.SetCommitted(10)
	require.NoError(t, log.SyncCommitted())
	name, position := framePosition(t, log, 5)
	truncateFile(t, fs, name, position)
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, uint64(5), recovery.HWM)
	require.True(t, recovery.CommittedReset)
	require.Equal(t, uint64(5), log.Committed())
}

// Leftover temporary files of an interrupted atomic replace are removed.
func TestCrashLeftoverTemporaryFileRemoved(t *testing.T) {
	fs := newLogMemFS(13)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	require.NoError(t, log.Close())
	file, err := fs.Create(path.Join("p", committedFileName+temporarySuffix))
	require.NoError(t, err)
	require.NoError(t, file.Close())
	_, _ = openTestLog(t, fs, "p", smallLogConfig())
	_, err = fs.Stat(path.Join("p", committedFileName+temporarySuffix))
	require.True(t, errors.Is(err, ErrNotExist))
}

// A crash right after OpenLog of a new directory, or before the first
// sync, recovers an empty log.
func TestCrashBeforeFirstSync(t *testing.T) {
	fs := newLogMemFS(14)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 30)
	fs.Crash()
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Zero(t, recovery.HWM)
	require.Zero(t, recovery.CorruptCount)
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	requireTestRecords(t, log, 0, 3)
}

// An I/O error during recovery is returned (never a panic, never a
// half-open log); once the fault is gone recovery succeeds and loses
// nothing acknowledged.
func TestCrashRecoveryIOErrorsReturned(t *testing.T) {
	failures := 0
	for _, op := range []FaultOp{FaultWrite, FaultSync, FaultRename, FaultCreate, FaultSyncDir} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%s/%d", op, seed), func(t *testing.T) {
				fs := newLogMemFS(seed)
				log, _ := openTestLog(t, fs, "p", smallLogConfig())
				appendTestRecords(t, log, 0, 50)
				require.NoError(t, log.Sync())
				appendTestRecords(t, log, 50, 120)
				syncFramesOnly(t, log) // frames durable above the persisted hwm
				name, position := framePosition(t, log, 100)
				require.NoError(t, log.Close())
				truncateFile(t, fs, name, position+5) // and a torn tail to cut

				fs.SetFailureProbability(op, errInjectedSync, 0.5)
				if log, _, err := OpenLog(fs, "p", smallLogConfig()); err == nil {
					require.NoError(t, log.Close())
				} else {
					failures++
				}
				fs.ClearFaults()
				log, recovery := openTestLog(t, fs, "p", smallLogConfig())
				require.Equal(t, uint64(100), recovery.HWM)
				requireTestRecords(t, log, 0, 100)
			})
		}
	}
	require.Greater(t, failures, 10, "the faults reached recovery")
}

// A segment created by a roll whose sync round never ran has a directory
// entry that is not durable, even though recovery lists it. The first sync
// round after recovery must sync the directory before its hwm covers
// records appended to that segment. (Found by TestLogModel.)
func TestCrashRecoveredSegmentEntryMadeDurable(t *testing.T) {
	fs := newLogMemFS(31)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	for {
		appendTestRecords(t, log, log.Next(), log.Next()+1)
		if log.Stats().Segments > 1 {
			break
		}
		require.NoError(t, log.Sync())
	}
	rolledBase := log.active().base
	require.Equal(t, rolledBase, log.HWM(), "everything before the roll is synced")
	require.NoError(t, log.Close()) // the new segment's name was never synced
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, 2, recovery.Segments, "recovery lists the new segment")
	require.Equal(t, rolledBase, log.Next())
	appendTestRecords(t, log, rolledBase, rolledBase+5)
	require.NoError(t, log.Sync())
	fs.Crash()
	log, recovery = openTestLog(t, fs, "p", smallLogConfig())
	require.Zero(t, recovery.LostAcknowledged)
	require.Equal(t, rolledBase+5, recovery.HWM)
	requireTestRecords(t, log, 0, rolledBase+5)
}
