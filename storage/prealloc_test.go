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

// diskUsedBytes sums the blocks allocated to the files under root
// (preallocated space included, which a file's size does not show).
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

// nearlyEmptyPartitionBytesMax bounds the disk one partition holding one
// small record may use: its first segment's reservation, the record, and
// a block each for its small files.
const nearlyEmptyPartitionBytesMax = preallocateStepMinBytes + 64<<10

// Many partitions that each hold one small record use little disk: the
// first write reserves a small step, not megabytes.
func TestNearlyEmptyPartitionsReserveLittleDisk(t *testing.T) {
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
	require.LessOrEqual(t, used, int64(partitions*nearlyEmptyPartitionBytesMax))
}

// A segment written past its reservation reserves again, each step as
// large as what it holds (bounded), so a busy segment still preallocates
// in large steps.
func TestPreallocationGrowsWithTheSegment(t *testing.T) {
	osfs, err := NewOSFS(t.TempDir())
	require.NoError(t, err)
	log, _, err := OpenLog(osfs, "t/p00000", DefaultLogConfig())
	require.NoError(t, err)
	payload := bytes.Repeat([]byte("y"), 100<<10)
	var steps []int64
	for range 100 {
		_, err = log.Append(Record{TimeMs: 1, Payload: payload})
		require.NoError(t, err)
		require.NoError(t, log.Sync())
		reserved := log.active().preallocatedBytes
		if reserved == 0 {
			t.Skip("this file system cannot preallocate")
		}
		require.GreaterOrEqual(t, reserved, log.active().writtenBytes)
		if len(steps) == 0 || steps[len(steps)-1] != reserved {
			steps = append(steps, reserved)
		}
	}
	for i := 1; i < len(steps); i++ {
		grown := steps[i] - steps[i-1]
		require.LessOrEqual(t, grown, int64(2*preallocateStepMaxBytes), "steps %v", steps)
	}
	require.Less(t, steps[0], int64(preallocateStepMaxBytes), "the first reservation is small: %v", steps)
	require.GreaterOrEqual(t, steps[len(steps)-1]-steps[len(steps)-2], int64(preallocateStepMaxBytes/2), "later ones are large: %v", steps)
	require.NoError(t, log.Close())
}
