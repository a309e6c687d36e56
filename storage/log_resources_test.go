package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestARollWhoseCreateFailsRefusesOnlyTheAppend: a roll whose Create
// fails (descriptors or inodes ran out) refuses the append that needed
// it (ErrSegmentNotCreated) and leaves the log usable: acknowledged
// records stay readable, and the next append rolls. It failed the whole
// log, which the node then recovered from disk (storage review).
func TestARollWhoseCreateFailsRefusesOnlyTheAppend(t *testing.T) {
	fs := newLogMemFS(41)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	big := Record{TimeMs: 1, Payload: bytes.Repeat([]byte{1}, 1000)}
	for log.active().sizeBytes+int64(frameHeaderBytes+envelopeBytes(big)) <= cfg.SegmentBytes {
		_, err := log.Append(big)
		require.NoError(t, err)
	}
	require.NoError(t, log.Sync())
	hwm := log.HWM()

	fs.FailNext(FaultCreate, fmt.Errorf("too many open files: %w", syscall.EMFILE), 1)
	_, err := log.Append(big) // needs a roll
	require.ErrorIs(t, err, ErrSegmentNotCreated)
	_, err = log.Read(0)
	require.NoError(t, err, "acknowledged records stay readable")
	require.Equal(t, hwm, log.HWM())

	offset, err := log.Append(big)
	require.NoError(t, err, "the next append rolls")
	require.Equal(t, hwm, offset, "at the offset the refused one would have had")
	require.NoError(t, log.Sync())
	record, err := log.Read(offset)
	require.NoError(t, err)
	require.Equal(t, big.Payload, record.Payload)
}

// TestAnIdleLogDoesNotKeepALargeWriteBuffer: a round that buffered more
// than WriteBufferBytesMax (a large record on a full buffer) leaves no
// buffer of that size behind once flushed: an open log that goes back to
// small records keeps none of it (storage review: about 2 MiB per open
// log, which no cap named).
func TestAnIdleLogDoesNotKeepALargeWriteBuffer(t *testing.T) {
	fs := newLogMemFS(43)
	cfg := DefaultLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	_, err := log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{7}, cfg.WriteBufferBytesMax-100)})
	require.NoError(t, err)
	_, err = log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{7}, cfg.RecordBytesMax)})
	require.NoError(t, err)
	require.NoError(t, log.Sync())
	for i := range 10 {
		_, err := log.Append(Record{TimeMs: int64(i), Payload: []byte("x")})
		require.NoError(t, err)
		require.NoError(t, log.Sync())
	}
	require.LessOrEqual(t, cap(log.pending), cfg.WriteBufferBytesMax, "an idle log keeps a %d-byte write buffer", cap(log.pending))
}

// TestALogHoldsBoundedDescriptorsHoweverManySegments: an open log keeps
// the files of at most sealedFilesOpenMax sealed segments open (the least
// recently read close, and reopen for a read), so its descriptors do not
// grow with its retained segments: one log of 4 KiB segments held one
// per segment, 268, and the open-logs cap bounded none of it (storage
// review). Records of every segment stay readable.
func TestALogHoldsBoundedDescriptorsHoweverManySegments(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	fs, err := NewOSFS(t.TempDir())
	require.NoError(t, err)
	cfg := smallLogConfig()
	before := openDescriptors(t)
	log, _ := openTestLog(t, fs, "p", cfg)
	payload := bytes.Repeat([]byte{1}, 1000)
	const records = 600 // three to a 4 KiB segment: 200 segments
	for i := range records {
		_, err := log.Append(Record{TimeMs: int64(i), Payload: payload})
		require.NoError(t, err)
		if i%10 == 9 {
			require.NoError(t, log.Sync())
		}
	}
	require.NoError(t, log.Sync())
	require.Greater(t, len(log.segments), 100)
	bound := sealedFilesOpenMax + 2 // and the active segment and the hwm file
	require.LessOrEqual(t, openDescriptors(t)-before, bound, "after the appends")
	for _, offset := range []uint64{0, 300, 3, 599, 150, 1} {
		record, err := log.Read(offset)
		require.NoError(t, err, "offset %d", offset)
		require.Equal(t, int64(offset), record.TimeMs)
	}
	require.LessOrEqual(t, openDescriptors(t)-before, bound, "after reads across the segments")
	require.NoError(t, log.Close())

	reopened, _ := openTestLog(t, fs, "p", cfg)
	require.LessOrEqual(t, openDescriptors(t)-before, bound, "after recovery")
	record, err := reopened.Read(7)
	require.NoError(t, err)
	require.Equal(t, int64(7), record.TimeMs)
	require.NoError(t, reopened.Close())
}

// TestRecoveryHoldsFewFilesWhateverTheSegments: recovery of a log of 200
// segments never holds more files open at once than an open log may: it
// closes each sealed segment the hwm file covers once it is scanned. It
// held all of them until the end, so a node with long logs could run out
// of descriptors at start, where the cap of open logs never looks.
func TestRecoveryHoldsFewFilesWhateverTheSegments(t *testing.T) {
	memFS := newLogMemFS(47)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, memFS, "p", cfg)
	for from := 0; from < 600; from += 10 {
		appendKilobyteRecords(t, log, from, 10)
		require.NoError(t, log.Sync())
	}
	appendKilobyteRecords(t, log, 600, 1) // written, never synced: recovery settles it
	require.NoError(t, log.Close())

	counted := &countingFS{FS: memFS}
	reopened, recovery := openTestLog(t, counted, "p", cfg)
	require.Greater(t, recovery.Segments, 150)
	require.LessOrEqual(t, counted.peak, LogFilesOpenMax, "files open at once during recovery")
	for _, offset := range []uint64{0, 599, 300, 600} {
		record, err := reopened.Read(offset)
		require.NoError(t, err, "offset %d", offset)
		require.Equal(t, int64(offset), record.TimeMs)
	}
	require.LessOrEqual(t, counted.open, LogFilesOpenMax, "after reads across the segments")
	require.NoError(t, reopened.Close())
	require.Zero(t, counted.open, "a closed log holds no file")
}

// appendKilobyteRecords appends count records of 1,000-byte payloads
// whose TimeMs is from, from+1, ...: with smallLogConfig, a few records
// to a segment.
func appendKilobyteRecords(t *testing.T, log *Log, from, count int) {
	t.Helper()
	payload := bytes.Repeat([]byte{1}, 1000)
	for i := from; i < from+count; i++ {
		_, err := log.Append(Record{TimeMs: int64(i), Payload: payload})
		require.NoError(t, err)
	}
}

// countingFS counts the files open through it and their peak.
type countingFS struct {
	FS
	open, peak int
}

func (c *countingFS) Create(name string) (File, error) { return c.counted(c.FS.Create(name)) }
func (c *countingFS) Open(name string) (File, error)   { return c.counted(c.FS.Open(name)) }

func (c *countingFS) counted(file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	c.open++
	c.peak = max(c.peak, c.open)
	return &countedFile{File: file, fs: c}, nil
}

// countedFile is a file of countingFS; its Close counts once.
type countedFile struct {
	File
	fs     *countingFS
	closed bool
}

func (f *countedFile) Close() error {
	if !f.closed {
		f.closed = true
		f.fs.open--
	}
	return f.File.Close()
}

func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestAClosedLogKeepsAtMostAStepOfZeroTail: the zero tail written ahead
// of the active segment's frames is trimmed to zeroTailKeptBytes when the
// log closes: closed logs kept up to a step of zeros each (1 MiB),
// whatever the cap of open logs (storage review), and cutting it all made
// every reopen write and journal a new one.
func TestAClosedLogKeepsAtMostAStepOfZeroTail(t *testing.T) {
	root := t.TempDir()
	fs, err := NewOSFS(root)
	require.NoError(t, err)
	cfg := DefaultLogConfig()
	for p := range 4 {
		dir := fmt.Sprintf("p%d", p)
		log, _ := openTestLog(t, fs, dir, cfg)
		appendLargeRecords(t, log, p+1)
		require.NoError(t, log.Sync())
		logical := log.Stats().SizeBytes
		tail := log.active().fileBytes - log.active().writtenBytes
		require.Positive(t, tail, "an open log keeps zeros ahead of its frames")
		require.Equal(t, tail, log.Stats().ZeroTailBytes)
		require.NoError(t, log.Close())
		info, err := os.Stat(filepath.Join(root, dir, segmentName(0)))
		require.NoError(t, err)
		require.Equal(t, logical+min(tail, zeroTailKeptBytes), info.Size(), "log %d: %d bytes of zero tail kept of %d", p, info.Size()-logical, tail)
		require.Equal(t, info.Size()-logical, log.Stats().ZeroTailBytes, "a closed log's stats say what its close left")
	}
}

// TestAReopenedLogWritesNoZerosAtItsFirstRounds: a log reopened after a
// clean close writes its first rounds over the zeros its close kept, and
// tops its tail up by small steps, however large its active segment: the
// steps grow with the bytes written since it opened.
func TestAReopenedLogWritesNoZerosAtItsFirstRounds(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := DefaultLogConfig()
		log, _ := openTestLog(t, fs, "p", cfg)
		appendLargeRecords(t, log, 3)
		require.NoError(t, log.Sync())
		require.Greater(t, log.active().fileBytes-log.active().writtenBytes, int64(zeroTailKeptBytes), "a busy log's steps grew")
		require.NoError(t, log.Close())

		log, recovery := openTestLog(t, fs, "p", cfg)
		require.Equal(t, int64(zeroTailKeptBytes), recovery.ZeroTailBytes)
		fileBytes := log.active().fileBytes
		for i := range 10 {
			_, err := log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{2}, 1000)})
			require.NoError(t, err)
			require.NoError(t, log.Sync(), "round %d", i)
		}
		require.Equal(t, fileBytes, log.active().fileBytes, "the first rounds write over the kept zeros")
		for range 30 {
			_, err := log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{3}, 1000)})
			require.NoError(t, err)
			require.NoError(t, log.Sync())
		}
		grown := log.active().fileBytes - fileBytes
		require.Positive(t, grown, "the tail is topped up")
		require.LessOrEqual(t, grown, int64(zeroTailStepMinBytes)+40*1100, "by a small step, not by the segment's size")
		require.Equal(t, uint64(43), log.HWM())
		for offset := range uint64(43) {
			_, err := log.Read(offset)
			require.NoError(t, err, "offset %d", offset)
		}
		require.NoError(t, log.Close())
	})
}

// TestADiskTooFullForTheZeroTailStillTakesTheFrames: the zero tail is an
// optimisation (later fsyncs commit no size change); a disk with room for
// a round's frames but not for the zeros ahead of them takes the frames,
// where the log failed (storage review).
func TestADiskTooFullForTheZeroTailStillTakesTheFrames(t *testing.T) {
	fs := newLogMemFS(47)
	cfg := DefaultLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	_, err := log.Append(Record{TimeMs: 1, Payload: []byte("first")})
	require.NoError(t, err)
	require.NoError(t, log.Sync())         // the hwm file, the segment and its first zeros
	fs.SetCapacity(fs.usedBytes + 200<<10) // room for the frames below, not for the next step of zeros
	for i := range 180 {
		_, err := log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{1}, 1000)})
		require.NoError(t, err)
		require.NoError(t, log.Sync(), "round %d", i)
	}
	record, err := log.Read(180)
	require.NoError(t, err)
	require.Len(t, record.Payload, 1000)
}

// TestALogClosedWithARoundInFlightKeepsAtMostAStepOfZeroTail: Close
// leaves a log whose round is in flight to that round's completion, which
// trims the zero tail as Close does (a review's finding: it kept all of it).
func TestALogClosedWithARoundInFlightKeepsAtMostAStepOfZeroTail(t *testing.T) {
	fs := newLogMemFS(3)
	log, _ := openTestLog(t, fs, "p", DefaultLogConfig())
	appendLargeRecords(t, log, 3)
	round := log.PrepareSync(true, false)
	require.NoError(t, log.Close()) // in flight: the files stay open
	require.NoError(t, log.CompleteSync(round, round.Run()))
	info, err := fs.Stat("p/" + segmentName(0))
	require.NoError(t, err)
	require.Equal(t, log.active().writtenBytes+zeroTailKeptBytes, info.Size, "the completed round trimmed the tail")
}

// appendLargeRecords appends count records of 400 KiB each: a few make
// the zero tail's steps grow past their first.
func appendLargeRecords(t *testing.T, log *Log, count int) {
	t.Helper()
	for range count {
		_, err := log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{1}, 400<<10)})
		require.NoError(t, err)
	}
}
