package storage

import (
	"bytes"
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

// Appended records stay invisible until Sync, then read back exactly.
func TestLogAppendSyncRead(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, recovery := openTestLog(t, fs, "topics/t/p00000", smallLogConfig())
		require.Equal(t, Recovery{Segments: 1}, recovery)
		appendTestRecords(t, log, 0, 10)
		require.True(t, log.Dirty())
		require.Equal(t, uint64(0), log.HWM())
		require.Equal(t, uint64(10), log.Next())
		_, err := log.Read(0)
		require.ErrorIs(t, err, ErrBeyondHWM)
		require.NoError(t, log.Sync())
		require.False(t, log.Dirty())
		require.Equal(t, uint64(10), log.HWM())
		requireTestRecords(t, log, 0, 10)
		_, err = log.Read(10)
		require.ErrorIs(t, err, ErrBeyondHWM)
		require.NoError(t, log.Close())
	})
}

// A log rolls to a new segment named by its base offset when the next
// frame would pass SegmentBytes, and reads span segments.
func TestLogRollsSegments(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		log, _ := openTestLog(t, fs, "p", cfg)
		appendTestRecords(t, log, 0, 200)
		require.NoError(t, log.Sync())
		stats := log.Stats()
		require.Greater(t, stats.Segments, 3)
		names, err := fs.List("p")
		require.NoError(t, err)
		segmentCount := 0
		for _, name := range names {
			if base, ok := parseSegmentName(name); ok {
				segmentCount++
				info, err := fs.Stat(path.Join("p", name))
				require.NoError(t, err)
				require.LessOrEqual(t, info.Size, cfg.SegmentBytes, "segment %d", base)
			}
		}
		require.Equal(t, stats.Segments, segmentCount)
		require.Contains(t, names, "00000000000000000000.log")
		requireTestRecords(t, log, 0, 200)
		require.NoError(t, log.Close())
	})
}

// A record larger than SegmentBytes still fits: it gets a segment of its
// own.
func TestLogRecordLargerThanSegment(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		cfg.RecordBytesMax = 3 * segmentBytesMin
		cfg.FrameBytesMax = cfg.RecordBytesMax + envelopeOverheadBytes + frameHeaderBytes
		log, _ := openTestLog(t, fs, "p", cfg)
		big := Record{TimeMs: 1, Payload: bytes.Repeat([]byte("x"), 2*segmentBytesMin)}
		for range 3 {
			_, err := log.Append(big)
			require.NoError(t, err)
		}
		require.NoError(t, log.Sync())
		require.Equal(t, 3, log.Stats().Segments)
		for i := range uint64(3) {
			got, err := log.Read(i)
			require.NoError(t, err)
			requireSameRecord(t, big, got)
		}
		require.NoError(t, log.Close())
	})
}

func TestLogRejectsRecordTooLarge(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(1), "p", smallLogConfig())
	_, err := log.Append(Record{Key: []byte("k"), Payload: make([]byte, 1024)})
	require.ErrorIs(t, err, ErrRecordTooLarge)
	offset, err := log.Append(Record{Key: []byte("k"), Payload: make([]byte, 1023)})
	require.NoError(t, err, "exactly RecordBytesMax fits")
	require.Equal(t, uint64(0), offset)
	require.Equal(t, uint64(1), log.Next())
}

// Reopening a cleanly synced log recovers every record and the same bounds.
func TestLogReopenRecoversEverything(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 150)
		require.NoError(t, log.Sync())
		log.SetCommitted(40)
		require.NoError(t, log.SyncCommitted())
		segments := log.Stats().Segments
		zeroTail := log.active().fileBytes - log.active().writtenBytes
		require.Positive(t, zeroTail, "the active segment keeps zeros ahead of its frames")
		require.NoError(t, log.Close()) // and a clean close keeps at most zeroTailKeptBytes of them

		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, Recovery{Segments: segments, Records: 150, HWM: 150, PersistedHWM: 150, Committed: 40,
			ZeroTailBytes: min(zeroTail, zeroTailKeptBytes)}, recovery)
		require.Equal(t, uint64(150), log.Next())
		require.Equal(t, uint64(40), log.Committed())
		requireTestRecords(t, log, 0, 150)
		appendTestRecords(t, log, 150, 160)
		require.NoError(t, log.Sync())
		requireTestRecords(t, log, 140, 160)
		require.NoError(t, log.Close())
	})
}

// Read verifies the CRC on every call: a byte flipped after recovery is
// ErrCorrupt, never returned data, and neighbours still read.
func TestLogReadVerifiesEveryTime(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 20)
		require.NoError(t, log.Sync())
		name, position := framePosition(t, log, 7)
		flipByte(t, fs, name, position+frameHeaderBytes+3)
		_, err := log.Read(7)
		require.ErrorIs(t, err, ErrCorrupt)
		requireTestRecords(t, log, 0, 7)
		requireTestRecords(t, log, 8, 20)
		require.NoError(t, log.Close())
	})
}

func TestLogCommittedOffset(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		require.NoError(t, log.Sync())
		require.False(t, log.CommittedDirty())
		log.SetCommitted(4)
		require.True(t, log.CommittedDirty())
		require.NoError(t, log.SyncCommitted())
		require.False(t, log.CommittedDirty())
		log.SetCommitted(10)
		require.Panics(t, func() { log.SetCommitted(9) }, "committed offset moving back")
		require.Panics(t, func() { log.SetCommitted(11) }, "committed offset past the hwm")
		require.NoError(t, log.Close())

		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.Equal(t, uint64(4), recovery.Committed, "only the synced value survives")
		require.Equal(t, uint64(4), log.Committed())
		require.NoError(t, log.Close())
	})
}

func TestLogStats(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(1), "p", smallLogConfig())
	require.Equal(t, LogStats{Segments: 1}, log.Stats())
	appendTestRecords(t, log, 0, 100)
	require.NoError(t, log.Sync())
	appendTestRecords(t, log, 100, 101)
	stats := log.Stats()
	require.Equal(t, uint64(0), stats.Oldest)
	require.Equal(t, uint64(100), stats.HWM)
	require.Equal(t, uint64(101), stats.Next)
	var size int64
	for i := range uint64(101) {
		size += int64(frameHeaderBytes + recordOverheadBytes + recordBytes(testRecord(i)))
	}
	require.Equal(t, size, stats.SizeBytes)
	first := log.segments[0]
	require.Equal(t, testRecord(first.indexedEnd()-1).TimeMs, stats.OldestSegmentTimeMs)
}

// After Close every call returns ErrClosed.
func TestLogClosed(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(1), "p", smallLogConfig())
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close())
	_, err := log.Append(testRecord(3))
	require.ErrorIs(t, err, ErrClosed)
	_, err = log.Read(0)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, log.Sync(), ErrClosed)
	require.ErrorIs(t, log.SyncCommitted(), ErrClosed)
	_, err = log.ApplyRetention(0, 1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = log.ReadChunk(0, 0, make([]byte, 10))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, log.Close(), ErrClosed)
}

// Append buffers frames and writes them once the buffer passes
// WriteBufferBytesMax; Sync writes the rest.
func TestLogWriteBuffer(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	_, err := log.Append(Record{Payload: make([]byte, 10)})
	require.NoError(t, err)
	info, err := fs.Stat("p/00000000000000000000.log")
	require.NoError(t, err)
	require.Zero(t, info.Size, "a small frame stays buffered")
	_, err = log.Append(Record{Payload: make([]byte, cfg.WriteBufferBytesMax)})
	require.NoError(t, err)
	info, err = fs.Stat("p/00000000000000000000.log")
	require.NoError(t, err)
	require.Equal(t, log.active().sizeBytes, info.Size, "a full buffer is written")
	require.Empty(t, log.pending)
}

// OpenLog creates the directory and its parents durably.
func TestOpenLogCreatesDirectoryDurably(t *testing.T) {
	fs := newLogMemFS(1)
	log, _ := openTestLog(t, fs, "data/topics/t/p00001", smallLogConfig())
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	fs.Crash()
	log, recovery := openTestLog(t, fs, "data/topics/t/p00001", smallLogConfig())
	require.Equal(t, uint64(3), recovery.HWM)
	requireTestRecords(t, log, 0, 3)
}

// A path that exists as a file is refused.
func TestOpenLogOnAFile(t *testing.T) {
	fs := newLogMemFS(1)
	require.NoError(t, WriteFileAtomic(fs, "p", []byte("x")))
	_, _, err := OpenLog(fs, "p", smallLogConfig())
	require.ErrorIs(t, err, ErrExist)
}
