package storage

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOSFSCountsFsyncs(t *testing.T) {
	fs, err := NewOSFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file, err := fs.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	if got := fs.Fsyncs(); got != 2 {
		t.Fatalf("Fsyncs() = %d after one file and one directory sync, want 2", got)
	}
}

// TestOSFSGroupSyncCounts: with group sync on, a group is one syncfs and
// no fsync; with it off, an fsync per file and directory.
func TestOSFSGroupSyncCounts(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		fs, err := NewOSFS(t.TempDir())
		require.NoError(t, err)
		if enabled {
			if err := fs.EnableGroupSync(); err != nil {
				t.Skipf("group sync unavailable here: %v", err)
			}
		}
		require.Equal(t, enabled, fs.GroupSyncEnabled())
		var files []File
		for _, name := range []string{"a", "b", "c"} {
			file, err := fs.Create(name)
			require.NoError(t, err)
			_, err = file.Write([]byte(name))
			require.NoError(t, err)
			files = append(files, file)
		}
		require.NoError(t, fs.SyncGroup(files, []string{"."}))
		if enabled {
			require.Equal(t, uint64(1), fs.GroupSyncs())
			require.Equal(t, uint64(0), fs.Fsyncs(), "files on the root's device need no fsync of their own")
		} else {
			require.Equal(t, uint64(0), fs.GroupSyncs())
			require.Equal(t, uint64(4), fs.Fsyncs(), "three files and one directory")
		}
		for _, file := range files {
			require.NoError(t, file.Close())
		}
		require.NoError(t, fs.Close())
	}
}

func TestKernelAtLeast(t *testing.T) {
	least := [2]int{5, 8}
	for release, want := range map[string]bool{
		"5.8.0": true, "5.10.102-99.473.amzn2.x86_64": true, "6.1.0-13-amd64": true, "6.18.44-fc-v1045": true,
		"5.7.19": false, "4.19.0-25-amd64": false, "5": false, "": false, "x.y": false, "10.0": true,
	} {
		require.Equal(t, want, kernelAtLeast(release, least), release)
	}
}

// Before 5.17 syncfs dropped the errors of the file system's own sync
// step (ext4's journal commit and cache flush): group sync stays off there.
func TestGroupSyncKernelGate(t *testing.T) {
	for _, release := range []string{"5.8.0", "5.10.0-28-amd64", "5.14.0-427.el9.x86_64", "5.15.0-105-generic", "5.16.20"} {
		require.False(t, kernelAtLeast(release, groupSyncKernelMin), release)
	}
	for _, release := range []string{"5.17.0", "6.1.0-13-amd64", "6.18.44-fc-v1045"} {
		require.True(t, kernelAtLeast(release, groupSyncKernelMin), release)
	}
}

// Only ext4 is known to flush the disk's cache on every syncfs.
func TestGroupSyncFileSystems(t *testing.T) {
	require.True(t, groupSyncFileSystem(0xEF53), "ext4")
	for name, magic := range map[string]int64{"xfs": 0x58465342, "btrfs": 0x9123683E, "tmpfs": 0x01021994, "overlayfs": 0x794C7630, "nfs": 0x6969, "fuse": 0x65735546} {
		require.False(t, groupSyncFileSystem(magic), name)
	}
}

// FreeBytes reads the file system's free space: positive on the test's
// own directory, and an error for a root that does not exist.
func TestOSFSFreeBytes(t *testing.T) {
	fs, err := NewOSFS(t.TempDir())
	require.NoError(t, err)
	free, err := fs.FreeBytes()
	require.NoError(t, err)
	require.Positive(t, free)
	missing := &OSFS{Root: filepath.Join(t.TempDir(), "missing")}
	_, err = missing.FreeBytes()
	require.Error(t, err)
}

// A full disk and a disk quota reached both read as ErrNoSpace, and only
// that (OnlyNoSpace): a node lets its fan-out cursor files lag for either.
func TestOSErrorsOfAFullDiskMapToErrNoSpace(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		err := mapOSError(&os.PathError{Op: "write", Path: "p/x.tmp", Err: errno})
		require.ErrorIs(t, err, ErrNoSpace, "%v", errno)
		require.True(t, OnlyNoSpace(err), "%v", errno)
	}
	require.False(t, OnlyNoSpace(mapOSError(&os.PathError{Op: "fsync", Path: "p/y", Err: syscall.EIO})))
}
