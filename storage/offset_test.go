package storage

import (
	"path"
	"testing"

	"github.com/stretchr/testify/require"
)

// The committed offset alternates between its two files, each overwritten
// in place once it exists: a damaged file (a torn in-place write) leaves
// the other's value, the previous one, with no reset; consumer.offset
// alone, what an earlier release reads, holds one of the last two values.
func TestCommittedOffsetAlternatesBetweenTwoFiles(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "p", smallLogConfig())
		appendTestRecords(t, log, 0, 10)
		require.NoError(t, log.Sync())
		for _, offset := range []uint64{3, 5, 7, 9} {
			log.SetCommitted(offset)
			require.NoError(t, log.SyncCommitted())
		}
		require.NoError(t, log.Close())
		state, err := readCommittedState(fs, "p")
		require.NoError(t, err)
		require.Equal(t, [committedFiles]committedFile{{value: 7, exists: true, valid: true}, {value: 9, exists: true, valid: true}}, state.files,
			"each round writes the file holding the lower value")
		_, err = fs.Stat(path.Join("p", committedFileName+temporarySuffix))
		require.ErrorIs(t, err, ErrNotExist)

		flipByte(t, fs, path.Join("p", committedFileNames[1]), 3) // as a torn write of the 9 would
		log, recovery := openTestLog(t, fs, "p", smallLogConfig())
		require.False(t, recovery.CommittedReset, "the other file holds a whole value")
		require.Equal(t, uint64(7), log.Committed())
		log.SetCommitted(8)
		require.NoError(t, log.SyncCommitted())
		require.NoError(t, log.Close())
		state, err = readCommittedState(fs, "p")
		require.NoError(t, err)
		require.Equal(t, [committedFiles]committedFile{{value: 7, exists: true, valid: true}, {value: 8, exists: true, valid: true}}, state.files,
			"the damaged file is the one written next, replaced whole")
	})
}

// A staged copy's state leaves consumer.offset alone holding its value:
// a consumer.offset.b left in the directory would otherwise win with a
// higher value of another life of it.
func TestFreshCommittedFilesLeaveOneValue(t *testing.T) {
	fs := newLogMemFS(3)
	require.NoError(t, fs.MkdirAll("p"))
	require.NoError(t, WriteFileAtomic(fs, path.Join("p", committedFileNames[1]), encodeCommitted(50)))
	require.NoError(t, writeFreshCommittedFiles(fs, "p", 4))
	state, err := readCommittedState(fs, "p")
	require.NoError(t, err)
	require.Equal(t, committedState{files: [committedFiles]committedFile{{value: 4, exists: true, valid: true}}}, state)
	require.Equal(t, uint64(4), state.highest())
}

// A committed offset clamped down at recovery (its log lost records: disk
// damage) is persisted so that it stays down once new records take the
// lost offsets: written in place beside a file holding the old, higher
// value, it would lose to it at the next recovery, and the new records
// between the two would never be delivered.
func TestACommittedOffsetClampedDownStaysDown(t *testing.T) {
	fs := newLogMemFS(14)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	for _, offset := range []uint64{8, 10} {
		log.SetCommitted(offset)
		require.NoError(t, log.SyncCommitted())
	}
	name, position := framePosition(t, log, 5)
	truncateFile(t, fs, name, position)
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.True(t, recovery.CommittedReset)
	require.Equal(t, uint64(5), log.Committed())
	require.NoError(t, log.SyncCommitted())
	appendTestRecords(t, log, 5, 10)
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close())

	log, recovery = openTestLog(t, fs, "p", smallLogConfig())
	require.False(t, recovery.CommittedReset)
	require.Equal(t, uint64(5), log.Committed(), "the new records 5 to 9 are still to deliver")
}

// A log closed and reopened warm goes on writing its committed offset in
// place in the file the last round did not write (helper review: the
// reopened log started at consumer.offset by atomic replace, the rename
// and directory sync in-place writes spare).
func TestAWarmReopenKeepsWhichCommittedFileIsNext(t *testing.T) {
	fs := newLogMemFS(15)
	store := NewStore(fs, smallLogConfig(), 2, 1<<20)
	log, _, err := store.Log("p", 1)
	require.NoError(t, err)
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	for _, offset := range []uint64{3, 5, 7} {
		log.SetCommitted(offset)
		require.NoError(t, log.SyncCommitted())
	}
	files, next := log.committedFiles, log.committedNext
	require.NoError(t, store.Evict("p"))
	reopened, _, err := store.Log("p", 2)
	require.NoError(t, err)
	require.NotSame(t, log, reopened)
	require.Equal(t, files, reopened.committedFiles)
	require.Equal(t, next, reopened.committedNext)
	require.Equal(t, 1, next, "7 went to consumer.offset, 5 stays in consumer.offset.b")
}
