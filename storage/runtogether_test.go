package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// prepareRounds appends records to each log and prepares its round, with
// the committed offset of the last log moved so that round writes it too.
func prepareRounds(t *testing.T, logs []*Log, from, to uint64) []*SyncRound {
	t.Helper()
	rounds := make([]*SyncRound, len(logs))
	for i, log := range logs {
		appendTestRecords(t, log, from, to)
		rounds[i] = log.PrepareSync(true, true)
		require.NotNil(t, rounds[i])
	}
	return rounds
}

// Rounds run together make every log's records durable, with their hwm
// slots and committed offsets, as a Run of each would.
func TestRunTogetherMakesEveryRoundDurable(t *testing.T) {
	fs := newLogMemFS(21)
	cfg := lazyLogConfig(0) // the hwm slot is due every round
	dirs := []string{"t/0", "t/1", "t/2"}
	logs := make([]*Log, len(dirs))
	for i, dir := range dirs {
		logs[i], _ = openTestLog(t, fs, dir, cfg)
	}
	rounds := prepareRounds(t, logs, 0, 4)
	before := fs.Stats()
	require.NoError(t, RunTogether(fs, append(rounds, nil)), "a nil round is skipped")
	require.Equal(t, int64(2), fs.Stats().GroupSyncs-before.GroupSyncs, "one for the data, one for the three hwm slots")
	for i, log := range logs {
		require.NoError(t, log.CompleteSync(rounds[i], nil))
		require.Equal(t, uint64(4), log.HWM())
		log.SetCommitted(2)
	}
	rounds = make([]*SyncRound, len(logs))
	for i, log := range logs {
		rounds[i] = log.PrepareSync(false, true)
	}
	before = fs.Stats()
	require.NoError(t, RunTogether(fs, rounds), "rounds of committed offsets alone")
	require.Equal(t, int64(2), fs.Stats().GroupSyncs-before.GroupSyncs, "one for the temporary files, one for their directories")
	for i, log := range logs {
		require.NoError(t, log.CompleteSync(rounds[i], nil))
	}

	fs.Crash() // no Close: only what the rounds made durable is left
	for _, dir := range dirs {
		log, recovery := openTestLog(t, fs, dir, cfg)
		require.Equal(t, uint64(4), log.HWM(), dir)
		require.Equal(t, uint64(4), recovery.PersistedHWM, "%s: the hwm slot was written", dir)
		require.Equal(t, uint64(2), log.Committed(), dir)
		for offset := range uint64(4) {
			record, err := log.Read(offset)
			require.NoError(t, err)
			requireSameRecord(t, testRecord(offset), record)
		}
		require.NoError(t, log.Close())
	}
}

// A group whose data could not all be made durable writes no round's hwm
// slot nor committed offset: the order of a round holds across the group.
func TestRunTogetherFailureWritesNothingAfter(t *testing.T) {
	fs := newLogMemFS(22)
	cfg := lazyLogConfig(0)
	logs := make([]*Log, 3)
	for i := range logs {
		logs[i], _ = openTestLog(t, fs, "p/"+string(rune('a'+i)), cfg)
	}
	for _, log := range logs {
		appendTestRecords(t, log, 0, 2)
		require.NoError(t, log.Sync())
		log.SetCommitted(1)
	}
	rounds := prepareRounds(t, logs, 2, 4)
	writes := fs.Stats().Writes
	require.ErrorIs(t, RunTogether(failingGroup{fs}, rounds), ErrIO)
	require.Equal(t, writes, fs.Stats().Writes, "no hwm slot or committed file was written")
}

// failingGroup syncs the group on its MemFS, then reports a failure (as a
// syncfs does for a write-back error of any file of the file system).
type failingGroup struct{ fs *MemFS }

func (g failingGroup) SyncGroup(files []File, dirs []string) error {
	if err := g.fs.SyncGroup(files, dirs); err != nil {
		return err
	}
	return ErrIO
}

// Files replaced together hold their new content after a crash once the
// call returned, and their old content when the group's sync failed.
func TestWriteFilesAtomicTogether(t *testing.T) {
	fs := newLogMemFS(23)
	names := []string{"a/f", "b/f"}
	for _, name := range names {
		require.NoError(t, fs.MkdirAll(parentDir(name)))
		require.NoError(t, WriteFileAtomic(fs, name, []byte("old")))
	}
	require.NoError(t, fs.SyncDir("."))
	fresh := []NamedData{{Name: names[0], Data: []byte("new a")}, {Name: names[1], Data: []byte("new b")}}
	require.ErrorIs(t, WriteFilesAtomicTogether(fs, failingGroup{fs}, fresh, nil), ErrIO)
	fs.Crash()
	for _, name := range names {
		require.Equal(t, "old", conformReadFile(t, fs, name), "no rename before the temporaries are durable")
	}
	before := fs.Stats()
	require.NoError(t, WriteFilesAtomicTogether(fs, fs, fresh, nil))
	require.Equal(t, int64(2), fs.Stats().GroupSyncs-before.GroupSyncs)
	fs.Crash()
	require.Equal(t, "new a", conformReadFile(t, fs, names[0]))
	require.Equal(t, "new b", conformReadFile(t, fs, names[1]))
}
