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
	requireDurableIncarnationAfter(t, storage.FaultCreate, func(name string) bool { return strings.HasPrefix(name, incarnationFile) })
}

// requireDurableIncarnationAfter starts a node again with the next op on
// a path match accepts failing for want of room: the start must take the
// next incarnation, durably (a crash after it, and the next start reads
// one more).
func requireDurableIncarnationAfter(t *testing.T, op storage.FaultOp, match func(string) bool) {
	t.Helper()
	h := newHarness(t)
	h.restart()
	before := h.node.incarnation
	require.NoError(t, h.node.Close())
	h.fs.FailNextMatching(op, storage.ErrNoSpace, 1, match)
	h.node = nil
	h.start()
	require.Equal(t, before+1, h.node.incarnation, "the counter went up")
	require.NoError(t, h.node.Abandon())
	h.fs.Crash()
	again, err := nextIncarnation(h.fs)
	require.NoError(t, err)
	require.Equal(t, before+2, again, "and is durable: the next start after a crash does not get this start's number again")
}

// Property: an atomic replace of the incarnation whose directory sync
// found no room, after its rename, is made durable by the overwrite:
// after a crash the next start does not get this start's number again
// (review).
func TestAnIncarnationRenamedButNotSyncedIsMadeDurable(t *testing.T) {
	requireDurableIncarnationAfter(t, storage.FaultSyncDir, func(string) bool { return true })
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
