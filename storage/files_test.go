package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSegmentNames(t *testing.T) {
	require.Equal(t, "00000000000000000000.log", segmentName(0))
	require.Equal(t, "18446744073709551615.log", segmentName(1<<64-1))
	for _, base := range []uint64{0, 1, 1234567890, 1<<64 - 1} {
		parsed, ok := parseSegmentName(segmentName(base))
		require.True(t, ok)
		require.Equal(t, base, parsed)
	}
	for _, name := range []string{"hwm", "consumer.offset", "0000000000000000000a.log", "00000000000000000000.tmp",
		"0000000000000000000.log", "99999999999999999999.log", "000000000000000000000.log"} {
		_, ok := parseSegmentName(name)
		require.False(t, ok, name)
	}
}

func TestWriteFileAtomicAndReadFile(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		require.NoError(t, fs.MkdirAll("meta"))
		require.NoError(t, WriteFileAtomic(fs, "meta/state", []byte("first")))
		require.NoError(t, WriteFileAtomic(fs, "meta/state", []byte("second, longer")))
		data, err := ReadFile(fs, "meta/state")
		require.NoError(t, err)
		require.Equal(t, "second, longer", string(data))
		names, err := fs.List("meta")
		require.NoError(t, err)
		require.Equal(t, []string{"state"}, names, "no temporary file left")
		_, err = ReadFile(fs, "meta/missing")
		require.ErrorIs(t, err, ErrNotExist)
	})
}

// After a crash an atomically replaced file holds the old or the new
// content, never a mix; once WriteFileAtomic returned, the new one.
func TestWriteFileAtomicCrash(t *testing.T) {
	fs := newLogMemFS(1)
	fs.SetTornWriteProbability(1)
	require.NoError(t, WriteFileAtomic(fs, "state", []byte("old")))
	fs.FailNext(FaultRename, errInjectedSync, 1)
	require.Error(t, WriteFileAtomic(fs, "state", []byte("new")))
	fs.Crash()
	data, err := ReadFile(fs, "state")
	require.NoError(t, err)
	require.Equal(t, "old", string(data))
	require.NoError(t, WriteFileAtomic(fs, "state", []byte("new")))
	fs.Crash()
	data, err = ReadFile(fs, "state")
	require.NoError(t, err)
	require.Equal(t, "new", string(data))
}

// ReadFile refuses files above its bound instead of loading them.
func TestReadFileBounded(t *testing.T) {
	fs := newLogMemFS(2)
	file, err := fs.Create("big")
	require.NoError(t, err)
	require.NoError(t, file.Truncate(readFileBytesMax+1))
	require.NoError(t, file.Close())
	_, err = ReadFile(fs, "big")
	require.ErrorIs(t, err, ErrFileTooLarge)
}

// The hwm slot encoding: each slot validates only at its own index, and
// any damaged byte invalidates it.
func TestHWMSlotEncoding(t *testing.T) {
	slot := encodeHWMSlot(nil, 1, 12345)
	require.Len(t, slot, hwmSlotBytes)
	value, ok := decodeHWMSlot(slot, 1)
	require.True(t, ok)
	require.Equal(t, uint64(12345), value)
	_, ok = decodeHWMSlot(slot, 0)
	require.False(t, ok, "a slot copied to the other index does not validate")
	for i := range slot {
		damaged := append([]byte(nil), slot...)
		damaged[i] ^= 0x10
		_, ok := decodeHWMSlot(damaged, 1)
		require.False(t, ok, "byte %d", i)
	}
	state := hwmState{valid: [2]bool{true, true}, values: [2]uint64{7, 9}}
	highest, ok := state.highest()
	require.True(t, ok)
	require.Equal(t, uint64(9), highest)
	require.Equal(t, 0, state.olderSlot())
	state.valid[0] = false
	require.Equal(t, 0, state.olderSlot(), "an invalid slot is overwritten first")
}

// The committed offset file round-trips and rejects damage.
func TestCommittedFileEncoding(t *testing.T) {
	data := encodeCommitted(987654321)
	offset, ok := decodeCommitted(data)
	require.True(t, ok)
	require.Equal(t, uint64(987654321), offset)
	for i := range data {
		damaged := append([]byte(nil), data...)
		damaged[i] ^= 1
		_, ok := decodeCommitted(damaged)
		require.False(t, ok, "byte %d", i)
	}
	_, ok = decodeCommitted(data[:8])
	require.False(t, ok)
}

// Files replaced together share their directory's sync; a crash after a
// failed rename leaves each file whole, old or new, and once
// WriteFilesAtomic returned every file holds its new content.
func TestWriteFilesAtomicCrash(t *testing.T) {
	fs := newLogMemFS(3)
	fs.SetTornWriteProbability(1)
	require.NoError(t, fs.MkdirAll("p"))
	require.NoError(t, fs.SyncDir("."))
	require.NoError(t, WriteFilesAtomic(fs, []NamedData{{"p/a", []byte("a-old")}, {"p/b", []byte("b-old")}}))
	fs.FailNext(FaultRename, errInjectedSync, 1)
	require.Error(t, WriteFilesAtomic(fs, []NamedData{{"p/a", []byte("a-new")}, {"p/b", []byte("b-new")}}))
	fs.Crash()
	for name, old := range map[string]string{"p/a": "a-old", "p/b": "b-old"} {
		data, err := ReadFile(fs, name)
		require.NoError(t, err)
		require.Equal(t, old, string(data), "the first rename failed: %s keeps its old content", name)
	}
	before := fs.Stats()
	require.NoError(t, WriteFilesAtomic(fs, []NamedData{{"p/a", []byte("a-new")}, {"p/b", []byte("b-new")}}))
	after := fs.Stats()
	require.Equal(t, int64(2), after.Syncs-before.Syncs, "one sync per file")
	require.Equal(t, int64(2), after.Renames-before.Renames)
	require.Equal(t, int64(1), after.DirSyncs-before.DirSyncs, "one sync of the shared directory")
	fs.Crash()
	for name, fresh := range map[string]string{"p/a": "a-new", "p/b": "b-new"} {
		data, err := ReadFile(fs, name)
		require.NoError(t, err)
		require.Equal(t, fresh, string(data))
	}
}

// TestADirectoryMadeAgainAfterAFailedSyncSurvivesACrash: ensureDir
// creates a directory and its missing ancestors, and the sync of one
// ancestor's entry fails; the caller tries again, which finds every
// directory there. The retry must still make the whole chain durable: it
// once synced only the directory's own parent, so a crash then took the
// ancestor, and everything later written and synced below it, away.
func TestADirectoryMadeAgainAfterAFailedSyncSurvivesACrash(t *testing.T) {
	for failed := 1; failed <= 3; failed++ {
		fs := newTestMemFS(uint64(failed))
		fs.FailNext(FaultSyncDir, ErrIO, failed) // the first syncs of the chain
		for range failed {
			require.ErrorIs(t, ensureDir(fs, "topics/t/p00000"), ErrIO)
		}
		require.NoError(t, ensureDir(fs, "topics/t/p00000"), "the retry")
		fs.Crash()
		_, err := fs.Stat("topics/t/p00000")
		require.NoError(t, err, "after %d failed syncs: the directory is durable once ensureDir returned nil", failed)
	}
}

// TestADeletionThatStopsPartwayLeavesNothingUnderTheName: the removal of
// a partition directory fails after its rename aside (an I/O error in the
// middle, as os.RemoveAll stops there and leaves part of the files); the
// name is gone at once, durably, and what is left aside goes with the
// next removal of the name.
func TestADeletionThatStopsPartwayLeavesNothingUnderTheName(t *testing.T) {
	fs := newTestMemFS(7)
	writeClosedTestLog(t, fs, "topics/t/p00000", smallLogConfig(), 3)
	fs.FailNextMatching(FaultRemove, ErrIO, 1, func(name string) bool { return name == "topics/t/p00000"+deletingSuffix })
	require.ErrorIs(t, DeletePartition(fs, "topics/t/p00000"), ErrIO)
	fs.Crash()
	_, err := fs.Stat("topics/t/p00000")
	require.ErrorIs(t, err, ErrNotExist, "the name went first, durably")
	names, err := fs.List("topics/t")
	require.NoError(t, err)
	require.Equal(t, []string{"p00000" + deletingSuffix}, names)
	require.True(t, DeletingLeftover(names[0]))
	require.False(t, DeletingLeftover("p00000"))

	require.NoError(t, DeletePartition(fs, "topics/t/p00000"), "a later removal of the name, with nothing under it")
	names, err = fs.List("topics/t")
	require.NoError(t, err)
	require.Empty(t, names, "the leftover went with it")
}
