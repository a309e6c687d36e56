package storage

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultLogConfigIsValid(t *testing.T) {
	require.NoError(t, DefaultLogConfig().Validate())
	require.NoError(t, smallLogConfig().Validate())
}

// Validate reports every problem at once, each wrapping ErrInvalidConfig.
func TestLogConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := LogConfig{SegmentBytes: 100, RecordBytesMax: 0, FrameBytesMax: 10, ChunkBytesMax: 0,
		CorruptOffsetsReportedMax: -1, WriteBufferBytesMax: 0, HWMLagBytesMax: -1, HWMLagMsMax: hwmLagMsLimit + 1}
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	for _, field := range []string{"SegmentBytes", "RecordBytesMax", "FrameBytesMax", "ChunkBytesMax",
		"CorruptOffsetsReportedMax", "WriteBufferBytesMax", "HWMLagBytesMax", "HWMLagMsMax"} {
		require.Contains(t, err.Error(), field)
	}
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	require.Len(t, joined.Unwrap(), 8)
}

// The frame limit must leave room for the largest record plus overheads.
func TestLogConfigFrameMustFitRecord(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.FrameBytesMax = cfg.RecordBytesMax + envelopeOverheadBytes + frameHeaderBytes - 1
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.True(t, strings.Contains(err.Error(), "FrameBytesMax"))
}

// The relations between the package's limits, checked once.
func TestLimitRelations(t *testing.T) {
	// A segment may overshoot SegmentBytes by one frame; positions are uint32.
	require.Less(t, int64(segmentBytesLimit)+int64(frameBytesLimit), int64(positionCorrupt))
	require.Less(t, int64(frameBytesLimit), int64(math.MaxUint32))
	require.GreaterOrEqual(t, frameBytesLimit, recordBytesLimit+recordOverheadBytes+frameHeaderBytes)
	require.Equal(t, frameHeaderBytes+recordOverheadBytes, frameBytesMin)
	require.Less(t, DefaultLogConfig().ChunkBytesMax, int(DefaultLogConfig().SegmentBytes))
}

// OpenLog refuses an invalid config before touching the disk.
func TestOpenLogRejectsInvalidConfig(t *testing.T) {
	fs := newLogMemFS(1)
	_, _, err := OpenLog(fs, "p", LogConfig{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = fs.Stat("p")
	require.ErrorIs(t, err, ErrNotExist)
}
