package storage

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireZeroTail checks that the file of segment base in dir is longer
// than logicalBytes by tailBytes and that those bytes are all zero.
func requireZeroTail(t *testing.T, fs FS, dir string, base uint64, logicalBytes, tailBytes int64) {
	t.Helper()
	name := segmentPath(dir, base)
	info, err := fs.Stat(name)
	require.NoError(t, err)
	require.Equal(t, logicalBytes+tailBytes, info.Size, "segment %d file size", base)
	if tailBytes == 0 {
		return
	}
	file, err := fs.Open(name)
	require.NoError(t, err)
	tail := make([]byte, tailBytes)
	require.NoError(t, readFull(file, tail, logicalBytes))
	require.NoError(t, file.Close())
	require.Equal(t, -1, bytes.IndexFunc(tail, func(r rune) bool { return r != 0 }), "the tail holds only zeros")
}

// requireExactSealedSegments checks that every sealed segment's file ends
// at its last frame.
func requireExactSealedSegments(t *testing.T, fs FS, log *Log) {
	t.Helper()
	for _, s := range log.segments[:len(log.segments)-1] {
		requireZeroTail(t, fs, log.dir, s.base, s.sizeBytes, 0)
	}
}

// A synced active segment keeps zeros written ahead of its frames, in
// steps that grow with the segment up to zeroTailStepMaxBytes and never
// past SegmentBytes; frames land over them, at the logical end.
func TestZeroTailGrowsInBoundedSteps(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := DefaultLogConfig()
		log, _ := openTestLog(t, fs, "p", cfg)
		payload := bytes.Repeat([]byte("z"), 20<<10)
		var steps []int64
		for i := range 400 {
			_, err := log.Append(Record{TimeMs: int64(i), Payload: payload})
			require.NoError(t, err)
			before := log.active().fileBytes
			require.NoError(t, log.Sync())
			active := log.active()
			if grown := active.fileBytes - max(before, active.writtenBytes); grown > 0 {
				steps = append(steps, grown)
			}
			require.LessOrEqual(t, active.fileBytes, max(active.writtenBytes, cfg.SegmentBytes))
			require.GreaterOrEqual(t, active.fileBytes, active.writtenBytes)
		}
		requireZeroTail(t, fs, "p", log.active().base, log.active().writtenBytes, log.active().fileBytes-log.active().writtenBytes)
		require.Greater(t, len(steps), 3, "steps %v", steps)
		require.LessOrEqual(t, steps[0], int64(zeroTailStepMinBytes), "the first step is small: %v", steps)
		for _, step := range steps {
			require.LessOrEqual(t, step, int64(zeroTailStepMaxBytes), "steps %v", steps)
		}
		require.GreaterOrEqual(t, steps[len(steps)-2], int64(zeroTailStepMaxBytes/2), "later steps are large: %v", steps)
		requireExactSealedSegments(t, fs, log)
		require.NoError(t, log.Close())
		log, recovery := openTestLog(t, fs, "p", cfg)
		require.Zero(t, recovery.TruncatedBytes)
		require.Zero(t, recovery.CorruptCount)
		require.Equal(t, uint64(400), recovery.HWM)
		require.NoError(t, log.Close())
	})
}

// diskUsedBytes sums the blocks allocated to the files under root.
func diskUsedBytes(t *testing.T, root string) int64 {
	t.Helper()
	var used int64
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		var stat syscall.Stat_t
		if err := syscall.Stat(path, &stat); err != nil {
			return err
		}
		used += stat.Blocks * 512
		return nil
	})
	require.NoError(t, err)
	return used
}

// Many partitions that each hold one small record use little disk: the
// first round writes a small step of zeros, not megabytes.
func TestNearlyEmptyPartitionsUseLittleDisk(t *testing.T) {
	root := t.TempDir()
	osfs, err := NewOSFS(root)
	require.NoError(t, err)
	const partitions = 40
	payload := bytes.Repeat([]byte("x"), 3_500)
	for index := range partitions {
		log, _, err := OpenLog(osfs, fmt.Sprintf("t/p%05d", index), DefaultLogConfig())
		require.NoError(t, err)
		_, err = log.Append(Record{TimeMs: 1, Payload: payload})
		require.NoError(t, err)
		require.NoError(t, log.Sync())
		require.NoError(t, log.Close())
	}
	used := diskUsedBytes(t, root)
	t.Logf("%d partitions with one %d-byte record use %d bytes of disk", partitions, len(payload), used)
	require.LessOrEqual(t, used, int64(partitions*(zeroTailStepMinBytes+64<<10)))
}

// A crash after a synced round leaves the durable zero tail: recovery
// takes it as the clean end of the log (nothing truncated or corrupt),
// keeps it, and the next frames overwrite it.
func TestZeroTailSyncedSurvivesCrash(t *testing.T) {
	fs := newLogMemFS(21)
	fs.SetTornWriteProbability(1)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 8)
	require.NoError(t, log.Sync())
	active := log.active()
	tail := active.fileBytes - active.writtenBytes
	require.Positive(t, tail)
	fs.Crash()

	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, Recovery{Segments: 1, Records: 8, HWM: 8, PersistedHWM: 8, ZeroTailBytes: tail}, recovery)
	requireZeroTail(t, fs, "p", 0, log.active().writtenBytes, tail)
	appendTestRecords(t, log, 8, 12)
	require.NoError(t, log.Sync())
	requireTestRecords(t, log, 0, 12)
	fs.Crash()
	log, recovery = openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, uint64(12), recovery.HWM)
	require.Zero(t, recovery.TruncatedBytes)
	requireTestRecords(t, log, 0, 12)
}

// A crash that loses or tears the unsynced frames written over a durable
// zero tail: whole frames that made it are recovered, a torn frame is cut
// as a torn tail, and zeros alone are a clean end. Nothing acknowledged
// is lost and nothing is reported corrupt.
func TestZeroTailUnsyncedOverwriteTorn(t *testing.T) {
	for _, keepEighths := range []int64{0, 1, 3, 5, 8} {
		t.Run(fmt.Sprint(keepEighths), func(t *testing.T) {
			fs := newLogMemFS(22)
			cfg := smallLogConfig()
			cfg.WriteBufferBytesMax = 1 << 20 // one write for the unsynced frames
			log, _ := openTestLog(t, fs, "p", cfg)
			appendTestRecords(t, log, 0, 5)
			require.NoError(t, log.Sync())
			appendTestRecords(t, log, 5, 9)
			require.NoError(t, log.flushPending())
			written := log.active().writtenBytes - log.active().syncedBytes
			require.Less(t, log.active().writtenBytes, log.active().fileBytes, "the frames went into the zero tail")
			fs.CrashWith(func(_ string, writeBytes int64) int64 {
				require.Equal(t, written, writeBytes, "the torn write is the overwrite of the zeros")
				return writeBytes * keepEighths / 8
			})

			log, recovery := openTestLog(t, fs, "p", cfg)
			require.GreaterOrEqual(t, recovery.HWM, uint64(5))
			require.LessOrEqual(t, recovery.HWM, uint64(9))
			require.Zero(t, recovery.CorruptCount)
			require.Zero(t, recovery.LostAcknowledged)
			switch keepEighths {
			case 0:
				require.Equal(t, uint64(5), recovery.HWM)
				require.Zero(t, recovery.TruncatedBytes, "zeros alone are the clean end")
				require.Positive(t, recovery.ZeroTailBytes)
			case 8:
				require.Equal(t, uint64(9), recovery.HWM)
				require.Zero(t, recovery.TruncatedBytes)
			default:
				require.Positive(t, recovery.TruncatedBytes, "a torn frame followed by zeros is a torn tail")
				require.Zero(t, recovery.ZeroTailBytes)
			}
			requireTestRecords(t, log, 0, recovery.HWM)
			appendTestRecords(t, log, recovery.HWM, recovery.HWM+6)
			require.NoError(t, log.Sync())
			requireTestRecords(t, log, 0, recovery.HWM+6)
		})
	}
}

// A crash before the round that wrote a zero tail synced it: whatever
// prefix of the frames and zeros survived, recovery ends the log at the
// last whole frame without reporting corruption.
func TestZeroTailUnsyncedZerosTorn(t *testing.T) {
	for _, keepEighths := range []int64{0, 2, 7, 8} {
		t.Run(fmt.Sprint(keepEighths), func(t *testing.T) {
			fs := newLogMemFS(23)
			log, _ := openTestLog(t, fs, "p", smallLogConfig())
			appendTestRecords(t, log, 0, 6)
			round := log.PrepareSync(true, false) // frames and zeros written, not synced
			require.NotNil(t, round)
			require.Greater(t, log.active().fileBytes, log.active().writtenBytes)
			fs.CrashWith(func(_ string, writeBytes int64) int64 { return writeBytes * keepEighths / 8 })

			log, recovery := openTestLog(t, fs, "p", smallLogConfig())
			require.LessOrEqual(t, recovery.HWM, uint64(6))
			require.Zero(t, recovery.CorruptCount)
			if keepEighths == 8 {
				require.Equal(t, uint64(6), recovery.HWM)
				require.Zero(t, recovery.TruncatedBytes)
				require.Positive(t, recovery.ZeroTailBytes)
			}
			requireTestRecords(t, log, 0, recovery.HWM)
			appendTestRecords(t, log, recovery.HWM, recovery.HWM+3)
			require.NoError(t, log.Sync())
			requireTestRecords(t, log, 0, recovery.HWM+3)
		})
	}
}

// A frame written over the zero tail whose header is partly zero (a torn
// or damaged write) is a torn tail, not the clean end: cut and reported.
func TestZeroTailPartlyZeroHeaderIsTorn(t *testing.T) {
	parts := map[string][2]int{"after magic": {4, frameHeaderBytes}, "magic only": {0, 4}, "crc": {16, 20}}
	for name, zeroed := range parts {
		t.Run(name, func(t *testing.T) {
			fs := newLogMemFS(24)
			log, _ := openTestLog(t, fs, "p", smallLogConfig())
			appendTestRecords(t, log, 0, 4)
			require.NoError(t, log.Sync())
			end := log.active().writtenBytes
			frame := encodeRecordFrame(nil, 4, testRecord(4))
			clear(frame[zeroed[0]:zeroed[1]])
			file, err := fs.Open(segmentPath("p", 0))
			require.NoError(t, err)
			_, err = file.WriteAt(frame, end)
			require.NoError(t, err)
			require.NoError(t, file.Sync())
			require.NoError(t, file.Close())
			fs.Crash()

			log, recovery := openTestLog(t, fs, "p", smallLogConfig())
			require.Equal(t, uint64(4), recovery.HWM)
			require.Positive(t, recovery.TruncatedBytes)
			require.Zero(t, recovery.ZeroTailBytes)
			require.Zero(t, recovery.CorruptCount)
			requireZeroTail(t, fs, "p", 0, end, 0)
			requireTestRecords(t, log, 0, 4)
		})
	}
}

// Sealing cuts the zero tail, so sealed segment files are exact; a crash
// that loses the unsynced cut brings the zeros back, and recovery cuts
// them again, quietly, keeping every segment after it.
func TestZeroTailCutAtSealAndAfterCrash(t *testing.T) {
	fs := newLogMemFS(25)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	next := uint64(0)
	for log.Stats().Segments == 1 {
		appendTestRecords(t, log, next, next+1)
		next++
		if log.Stats().Segments == 1 {
			require.NoError(t, log.Sync()) // the first segment's frames and zeros durable
		}
	}
	require.Greater(t, log.segments[0].fileBytes, int64(0))
	requireExactSealedSegments(t, fs, log)
	require.NoError(t, log.Sync()) // the new segment only: the first one's cut stays unsynced
	appendTestRecords(t, log, next, next+40)
	next += 40
	require.NoError(t, log.Sync())
	require.Greater(t, log.Stats().Segments, 2)
	requireExactSealedSegments(t, fs, log)
	fs.Crash()

	info, err := fs.Stat(segmentPath("p", 0))
	require.NoError(t, err)
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Greater(t, info.Size, log.segments[0].sizeBytes, "the crash brought the first segment's zeros back")
	require.Zero(t, recovery.TruncatedBytes)
	require.Zero(t, recovery.CorruptCount)
	require.Equal(t, next, recovery.HWM)
	requireExactSealedSegments(t, fs, log)
	requireTestRecords(t, log, 0, next)
	fs.Crash()
	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Equal(t, next, recovery.HWM)
	requireExactSealedSegments(t, fs, log)
}

// A move copies the active segment's frames and never its zero tail: the
// listed sizes and the chunks stop at the last frame below the HWM, and
// the copy verifies and reopens with every record.
func TestZeroTailNotCopiedByMove(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		source, _ := openTestLog(t, fs, "src", cfg)
		appendTestRecords(t, source, 0, 30)
		require.NoError(t, source.Sync())
		active := source.active()
		require.Greater(t, active.fileBytes, active.writtenBytes)
		infos := source.Segments()
		require.Equal(t, active.writtenBytes, infos[len(infos)-1].Size)
		buffer := make([]byte, 4096)
		n, err := source.ReadChunk(active.base, active.writtenBytes, buffer)
		require.NoError(t, err)
		require.Zero(t, n, "nothing to read past the last frame")

		staged, err := CreateStaged(fs, "dst.staged", cfg)
		require.NoError(t, err)
		copied := copyPass(t, source, staged)
		var logical int64
		for _, s := range source.segments {
			logical += s.sizeBytes
		}
		require.Equal(t, logical, copied)
		require.NoError(t, staged.SetState(source.HWM(), source.Committed()))
		require.NoError(t, staged.Sync())
		require.NoError(t, staged.Close())
		recovery, err := VerifyStaged(fs, "dst.staged", cfg, 30, Corruption{})
		require.NoError(t, err)
		require.Equal(t, uint64(30), recovery.HWM)
		require.Zero(t, recovery.TruncatedBytes)
		require.Zero(t, recovery.ZeroTailBytes)
		require.NoError(t, source.Close())
	})
}
