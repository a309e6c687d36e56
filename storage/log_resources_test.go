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

	reopened, _ := openTestLog(t, fs, "p", cfg) // recovery opens every segment, then keeps the bound
	require.LessOrEqual(t, openDescriptors(t)-before, bound, "after recovery")
	record, err := reopened.Read(7)
	require.NoError(t, err)
	require.Equal(t, int64(7), record.TimeMs)
	require.NoError(t, reopened.Close())
}

func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestAClosedLogKeepsNoZeroTail: the zero tail written ahead of the
// active segment's frames is cut when the log closes: closed logs kept up
// to a step of zeros each (1 MiB), whatever the cap of open logs, and
// their stats did not show it (storage review).
func TestAClosedLogKeepsNoZeroTail(t *testing.T) {
	root := t.TempDir()
	fs, err := NewOSFS(root)
	require.NoError(t, err)
	cfg := DefaultLogConfig()
	var logical, onDisk int64
	for p := range 4 {
		dir := fmt.Sprintf("p%d", p)
		log, _ := openTestLog(t, fs, dir, cfg)
		for range 3 {
			_, err := log.Append(Record{TimeMs: 1, Payload: bytes.Repeat([]byte{1}, 400<<10)})
			require.NoError(t, err)
		}
		require.NoError(t, log.Sync())
		logical += log.Stats().SizeBytes
		require.NoError(t, log.Close())
		info, err := os.Stat(filepath.Join(root, dir, segmentName(0)))
		require.NoError(t, err)
		onDisk += info.Size()
	}
	require.Equal(t, logical, onDisk, "closed logs keep %d bytes of zero tail", onDisk-logical)
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
