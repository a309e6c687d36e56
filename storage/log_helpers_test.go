package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers shared by the partition log tests.

// forEachLogFS runs body once on the production FS in a temporary
// directory and once on MemFS, so both implementations meet one contract.
func forEachLogFS(t *testing.T, body func(t *testing.T, fs FS)) {
	t.Run("os", func(t *testing.T) {
		fs, err := NewOSFS(t.TempDir())
		require.NoError(t, err)
		body(t, fs)
	})
	t.Run("mem", func(t *testing.T) {
		body(t, NewMemFS(rand.New(rand.NewPCG(7, 11))))
	})
}

// newLogMemFS returns a MemFS whose crashes never tear (tests that want
// tears set the probability themselves).
func newLogMemFS(seed uint64) *MemFS {
	fs := NewMemFS(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	fs.SetTornWriteProbability(0)
	return fs
}

// smallLogConfig has small limits so tests roll segments and fill chunks
// with few records.
func smallLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:              segmentBytesMin,
		RecordBytesMax:            1024,
		FrameBytesMax:             1024 + envelopeOverheadBytes + frameHeaderBytes,
		ChunkBytesMax:             700,
		CorruptOffsetsReportedMax: 8,
		WriteBufferBytesMax:       300,
	}
}

// testRecord is the record tests append at offset i: every third has no
// key, every fifth an empty payload, sizes vary.
func testRecord(i uint64) Record {
	r := Record{TimeMs: 1_000 + int64(i), Payload: bytes.Repeat([]byte{byte(i)}, int(i*37%200))}
	if i%3 != 0 {
		r.Key = []byte(fmt.Sprintf("key-%d", i))
	}
	if i%5 == 0 {
		r.Payload = nil
	}
	return r
}

// openTestLog opens dir and fails the test on error.
func openTestLog(t *testing.T, fs FS, dir string, cfg LogConfig) (*Log, Recovery) {
	t.Helper()
	log, recovery, err := OpenLog(fs, dir, cfg)
	require.NoError(t, err)
	return log, recovery
}

// appendTestRecords appends testRecord(i) for i in [from, to), checking
// each offset.
func appendTestRecords(t *testing.T, log *Log, from, to uint64) {
	t.Helper()
	for i := from; i < to; i++ {
		offset, err := log.Append(testRecord(i))
		require.NoError(t, err)
		require.Equal(t, i, offset)
	}
}

// requireSameRecord compares records by content (nil and empty slices are
// the same).
func requireSameRecord(t require.TestingT, want, got Record, msgAndArgs ...any) {
	require.Equal(t, want.TimeMs, got.TimeMs, msgAndArgs...)
	require.True(t, bytes.Equal(want.Key, got.Key), "key %q, want %q %v", got.Key, want.Key, msgAndArgs)
	require.True(t, bytes.Equal(want.Payload, got.Payload), "payload differs %v", msgAndArgs)
	require.Equal(t, want.Origin, got.Origin, msgAndArgs...)
}

// requireTestRecords reads [from, to) and checks each against testRecord.
func requireTestRecords(t *testing.T, log *Log, from, to uint64) {
	t.Helper()
	for i := from; i < to; i++ {
		got, err := log.Read(i)
		require.NoError(t, err, "offset %d", i)
		requireSameRecord(t, testRecord(i), got, "offset %d", i)
	}
}

// syncedTestLog opens a log "p" of cfg on a fresh MemFS and appends and
// syncs records 0..count-1.
func syncedTestLog(t *testing.T, cfg LogConfig, count uint64) (*MemFS, *Log) {
	t.Helper()
	fs := newLogMemFS(1)
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, count)
	require.NoError(t, log.Sync())
	return fs, log
}

// writeClosedTestLog writes count records to a log in dir of fs, syncs and
// closes it.
func writeClosedTestLog(t *testing.T, fs FS, dir string, cfg LogConfig, count uint64) {
	t.Helper()
	log, _ := openTestLog(t, fs, dir, cfg)
	appendTestRecords(t, log, 0, count)
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close())
}

// flipByte inverts the byte at position of a file, durably.
func flipByte(t *testing.T, fs FS, name string, position int64) {
	t.Helper()
	file, err := fs.Open(name)
	require.NoError(t, err)
	one := make([]byte, 1)
	_, err = file.ReadAt(one, position)
	require.NoError(t, err)
	one[0] ^= 0xff
	_, err = file.WriteAt(one, position)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
}

// truncateFile cuts a file to size, durably.
func truncateFile(t *testing.T, fs FS, name string, size int64) {
	t.Helper()
	file, err := fs.Open(name)
	require.NoError(t, err)
	require.NoError(t, file.Truncate(size))
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
}

// framePosition returns the byte position of offset's frame in its
// segment file, and that file's path, from the log's index.
func framePosition(t *testing.T, log *Log, offset uint64) (string, int64) {
	t.Helper()
	s := residentSegment(t, log, log.segmentIndexOf(offset))
	position, _, ok := s.frameBounds(offset, log.cfg.FrameBytesMax)
	require.True(t, ok)
	return segmentPath(log.dir, s.base), position
}

// residentSegment returns the segment at index i of log with its
// positions in memory (a sealed one is paged in).
func residentSegment(t *testing.T, log *Log, i int) *segment {
	t.Helper()
	if i < len(log.segments)-1 {
		require.NoError(t, log.pageIn(i))
	}
	return log.segments[i]
}

// syncFramesOnly makes the appended frames and segment names durable
// without persisting or raising the HWM: a sync round whose hwm slot is
// dropped, run and then abandoned as if the process died before it
// completed.
func syncFramesOnly(t *testing.T, log *Log) {
	t.Helper()
	round := log.PrepareSync(true, false)
	require.NotNil(t, round)
	round.hwmSlot = nil
	require.NoError(t, round.Run())
	log.syncing = nil
}
