package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Damage below the persisted HWM in the last segment, with no frame
// recovery can take after it (frame 0's length and frame 2's payload
// damaged, frame 1 intact between them), is reported corrupt and kept,
// never cut as a torn tail: the HWM stays at the persisted one, appends
// take new offsets after the damaged bytes, and a later recovery finds
// them there.
func TestDamageInTheLastSegmentBelowThePersistedHWMIsNeverTruncated(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 3)
	require.NoError(t, log.Sync())
	name, first := framePosition(t, log, 0)
	_, last := framePosition(t, log, 2)
	require.NoError(t, log.Close())
	persisted, ok, err := PersistedHWM(fs, "p")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(3), persisted)
	flipByte(t, fs, name, first+frameLengthStart)
	flipByte(t, fs, name, last+frameHeaderBytes+2)

	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Zero(t, recovery.LostAcknowledged)
	require.Equal(t, uint64(3), recovery.HWM, "the HWM never goes below the persisted one")
	require.Equal(t, uint64(3), recovery.CorruptCount)
	require.Zero(t, recovery.TruncatedBytes)
	for offset := range uint64(3) {
		_, err := log.Read(offset)
		require.ErrorIs(t, err, ErrCorrupt, "offset %d", offset)
	}
	offset, err := log.Append(testRecord(3))
	require.NoError(t, err)
	require.Equal(t, uint64(3), offset, "no acknowledged offset is reused")
	appendTestRecords(t, log, 4, 6)
	require.NoError(t, log.Sync())
	requireTestRecords(t, log, 3, 6)
	require.NoError(t, log.Close())

	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Zero(t, recovery.LostAcknowledged)
	require.Equal(t, uint64(6), recovery.HWM)
	requireTestRecords(t, log, 3, 6)
	fs.Crash()
	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Zero(t, recovery.LostAcknowledged)
	requireTestRecords(t, log, 3, 6)
}
