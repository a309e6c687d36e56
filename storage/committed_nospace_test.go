package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The first write of a committed offset file creates it, which needs a
// block: on a disk with no room for one, the round does not fail (a
// failed round stops the node: its first ack of a partition never acked
// before did, on a disk filled by other programs), its records are
// durable and visible, the offset stays dirty and the files keep what
// they held, and a later round writes it once the disk has room.
func TestAFirstCommittedOffsetWriteOnAFullDiskWaitsForRoom(t *testing.T) {
	fs := newLogMemFS(31)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 6)
	require.NoError(t, log.Sync())
	log.SetCommitted(4)
	appendTestRecords(t, log, 6, 8)
	fs.FailNext(FaultCreate, ErrNoSpace, 1_000) // no file can be created

	round := log.PrepareSync(true, true)
	require.True(t, round.Committed(), "the round is to write the offset")
	require.NoError(t, round.Run(), "the round does not fail for its committed offset")
	require.True(t, OnlyNoSpace(round.CommittedRefused()), "refused: %v", round.CommittedRefused())
	require.False(t, round.Committed(), "the round did not persist the offset")
	require.NoError(t, log.CompleteSync(round, nil))
	require.Equal(t, uint64(8), log.HWM(), "the round's records are durable and visible")
	require.True(t, log.CommittedDirty(), "the offset waits for room")

	err := log.SyncCommitted()
	require.True(t, OnlyNoSpace(err), "a retry on the full disk is refused alike: %v", err)
	appendTestRecords(t, log, 8, 9)
	require.NoError(t, log.Sync(), "the log stays usable")
	_, recovery := openTestLog(t, fs.DurableClone(), "p", cfg)
	require.Equal(t, uint64(0), recovery.Committed, "a crash now delivers the acknowledged records again")
	require.False(t, recovery.CommittedReset)
	require.Equal(t, uint64(9), recovery.HWM)

	fs.FailNext(FaultCreate, nil, 0) // room again
	require.NoError(t, log.SyncCommitted())
	require.False(t, log.CommittedDirty())
	_, recovery = openTestLog(t, fs.DurableClone(), "p", cfg)
	require.Equal(t, uint64(4), recovery.Committed, "written once the disk has room")
}

// The same holds for rounds run together (group sync): the committed
// offset files to create are refused together, and every other write
// of the rounds (the data, the hwm slots, the committed offsets written
// in place) is durable all the same.
func TestFirstCommittedOffsetWritesRunTogetherOnAFullDiskWaitForRoom(t *testing.T) {
	fs := newLogMemFS(32)
	cfg := lazyLogConfig(0) // the hwm slot is due every round
	dirs := []string{"t/0", "t/1", "t/2"}
	logs := make([]*Log, len(dirs))
	for i, dir := range dirs {
		logs[i], _ = openTestLog(t, fs, dir, cfg)
		appendTestRecords(t, logs[i], 0, 6)
		require.NoError(t, logs[i].Sync())
	}
	for _, offset := range []uint64{1, 2} { // t/0 has both files: its next write goes in place
		logs[0].SetCommitted(offset)
		require.NoError(t, logs[0].SyncCommitted())
	}
	for _, log := range logs {
		log.SetCommitted(3)
	}
	rounds := prepareRounds(t, logs, 6, 8)
	fs.FailNext(FaultCreate, ErrNoSpace, 1_000)
	require.NoError(t, RunTogether(fs, rounds), "the rounds do not fail for their committed offsets")
	fs.FailNext(FaultCreate, nil, 0)
	require.NoError(t, rounds[0].CommittedRefused(), "written in place: no block needed")
	for i, log := range logs {
		require.NoError(t, log.CompleteSync(rounds[i], nil))
		require.Equal(t, uint64(8), log.HWM(), dirs[i])
	}
	for i := 1; i < len(logs); i++ {
		require.True(t, OnlyNoSpace(rounds[i].CommittedRefused()), "%s: %v", dirs[i], rounds[i].CommittedRefused())
		require.True(t, logs[i].CommittedDirty(), dirs[i])
	}
	require.False(t, logs[0].CommittedDirty())

	durable := fs.DurableClone()
	for i, dir := range dirs {
		_, recovery := openTestLog(t, durable, dir, cfg)
		require.Equal(t, uint64(8), recovery.PersistedHWM, "%s: the hwm slot is durable", dir)
		want := uint64(0)
		if i == 0 {
			want = 3
		}
		require.Equal(t, want, recovery.Committed, dir)
	}
}

// A committed offset clamped down at recovery is written to both files
// afresh: a full disk there still fails the round, since until it is
// written a crash would take the higher offset of the old file and skip
// the records appended since (TestACommittedOffsetClampedDownStaysDown).
func TestAFreshCommittedOffsetWriteOnAFullDiskFailsTheRound(t *testing.T) {
	fs := newLogMemFS(33)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	require.NoError(t, log.Sync())
	log.SetCommitted(8)
	require.NoError(t, log.SyncCommitted())
	name, position := framePosition(t, log, 5)
	truncateFile(t, fs, name, position)
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.True(t, recovery.CommittedReset)
	fs.FailNext(FaultCreate, ErrNoSpace, 1_000)
	err := log.SyncCommitted()
	require.ErrorIs(t, err, ErrLogFailed)
	require.ErrorIs(t, err, ErrNoSpace)
}
