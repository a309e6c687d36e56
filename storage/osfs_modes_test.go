package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// What the OS file system creates is the node's user's alone: the
// partition logs hold every topic's records, which no grant guards, and
// another account on the host read them all with modes 0o755 and 0o644.
func TestTheOSFileSystemCreatesForItsOwnerAlone(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	fs, err := NewOSFS(root)
	require.NoError(t, err)
	require.NoError(t, fs.MkdirAll("topics/orders/p00000"))
	file, err := fs.Create("topics/orders/p00000/00000000000000000000.log")
	require.NoError(t, err)
	require.NoError(t, file.Close())
	require.NoError(t, WriteFileAtomic(fs, "topics/orders/p00000/consumer.offset", encodeCommitted(1)))
	for _, name := range []string{"", "topics", "topics/orders", "topics/orders/p00000"} {
		info, err := os.Stat(filepath.Join(root, name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "directory %q", name)
	}
	for _, name := range []string{"00000000000000000000.log", "consumer.offset"} {
		info, err := os.Stat(filepath.Join(root, "topics/orders/p00000", name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "file %q", name)
	}
}
