package host

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/storage"
)

// TestDiskFullHint: a node stopped by a full disk, and a start that fails
// on one, said only "no space left on device"; the error now says to free
// space and start again, for the storage layer's errors and for the
// metastore's (whose file writes report the system's error).
func TestDiskFullHint(t *testing.T) {
	full := &fs.PathError{Op: "write", Path: "/data/incarnation.tmp", Err: syscall.ENOSPC}
	for name, err := range map[string]error{
		"storage":   fmt.Errorf("write incarnation: %w", errors.Join(storage.ErrNoSpace, full)),
		"metastore": errors.Join(errors.New("meta: instance finished after a failed write"), full),
	} {
		hinted := diskFullHint(err, "/data")
		require.ErrorIs(t, hinted, syscall.ENOSPC, name)
		require.Contains(t, hinted.Error(), err.Error(), name)
		require.Contains(t, hinted.Error(), "the file system of the data directory /data is full: free space on it, then start the node again", name)
	}
	other := &fs.PathError{Op: "write", Path: "/data/incarnation.tmp", Err: syscall.EIO}
	require.Same(t, other, diskFullHint(other, "/data"), "an error other than a full disk is returned as it is")
}

// TestStorageFailureSaysAFullDisk: the answers of a node stopped by a
// storage failure say a full disk as such (disk-full audit: a topic
// created on a full disk answered only "node storage failed; retry"),
// and name no file either way.
func TestStorageFailureSaysAFullDisk(t *testing.T) {
	full := errors.Join(storage.ErrNoSpace, &fs.PathError{Op: "write", Path: "/data/consumer.offset.tmp", Err: syscall.ENOSPC})
	require.Equal(t, "node storage failed: no space left on the node's disk", storageFailure(full))
	metastore := errors.Join(errors.New("meta: instance finished"), &fs.PathError{Op: "write", Path: "/data/meta.db", Err: syscall.ENOSPC})
	require.Equal(t, "node storage failed: no space left on the node's disk", storageFailure(metastore))
	broken := &fs.PathError{Op: "write", Path: "/data/consumer.offset.tmp", Err: syscall.EIO}
	require.Equal(t, "node storage failed", storageFailure(broken))
}
