package node

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/storage"
)

// Property: a node stopped by a full disk starts again on it: the disk
// has no room for a new incarnation file, so the start writes the counter
// over the old one, and it still goes up (receipt handles of the earlier
// start stay stale). A start refused the new file failed before, until
// space was freed.
func TestANodeStartsAgainOnAFullDisk(t *testing.T) {
	h := newHarness(t)
	h.restart()
	before := h.node.incarnation
	require.NoError(t, h.node.Close())
	h.fs.FailNextMatching(storage.FaultCreate, storage.ErrNoSpace, 1, func(name string) bool {
		return strings.HasPrefix(name, incarnationFile)
	})
	h.node = nil
	h.start()
	require.Equal(t, before+1, h.node.incarnation, "the counter went up")
	require.NoError(t, h.node.Abandon())
	h.fs.Crash()
	again, err := nextIncarnation(h.fs)
	require.NoError(t, err)
	require.Equal(t, before+2, again, "and is durable: the next start after a crash reads it")
}

// Property: an atomic replace of the incarnation whose directory sync
// found no room, after its rename, is made durable by the overwrite:
// after a crash the next start does not get this start's number again
// (review).
func TestAnIncarnationRenamedButNotSyncedIsMadeDurable(t *testing.T) {
	h := newHarness(t)
	h.restart()
	before := h.node.incarnation
	require.NoError(t, h.node.Close())
	h.fs.FailNextMatching(storage.FaultSyncDir, storage.ErrNoSpace, 1, func(string) bool { return true })
	h.node = nil
	h.start()
	require.Equal(t, before+1, h.node.incarnation)
	require.NoError(t, h.node.Abandon())
	h.fs.Crash()
	again, err := nextIncarnation(h.fs)
	require.NoError(t, err)
	require.Equal(t, before+2, again, "this start's number is not handed out again")
}

// Property: the first start on a full disk still fails (there is no file
// to write over), and says why.
func TestAFirstStartOnAFullDiskFails(t *testing.T) {
	fs := storage.NewMemFS(rand.New(rand.NewPCG(1, 1)))
	fs.FailNextMatching(storage.FaultCreate, storage.ErrNoSpace, 1, func(name string) bool {
		return strings.HasPrefix(name, incarnationFile)
	})
	err := storeIncarnation(fs, 1)
	require.ErrorIs(t, err, storage.ErrNoSpace)
	require.ErrorContains(t, err, "write incarnation")
}
