package storage

import (
	"bytes"
	"fmt"
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
