package storage

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// copyPass copies, chunk by chunk, whatever the source has that the staged
// copy lacks, as the mover's CatchUp does. It returns the bytes copied.
func copyPass(t *testing.T, source *Log, staged *StagedCopy) int64 {
	t.Helper()
	buffer := make([]byte, 4096)
	var copied int64
	for _, info := range source.Segments() {
		position := staged.StagedSize(info.Base)
		if position == 0 && info.Size == 0 {
			require.NoError(t, staged.WriteChunk(info.Base, 0, nil))
		}
		for position < info.Size {
			n, err := source.ReadChunk(info.Base, position, buffer)
			require.NoError(t, err)
			require.Positive(t, n)
			require.LessOrEqual(t, n, source.cfg.ChunkBytesMax)
			require.NoError(t, staged.WriteChunk(info.Base, position, buffer[:n]))
			position += int64(n)
			copied += int64(n)
		}
	}
	return copied
}

// A live log copied pass by pass while records keep arriving, then frozen,
// drained, verified, installed and reopened holds exactly the source's
// records, HWM and committed offset.
func TestMoveCopyWhileAppending(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		source, _ := openTestLog(t, fs, "src/topics/t/p00000", cfg)
		staged, err := CreateStaged(fs, "dst/.moves/t-0", cfg)
		require.NoError(t, err)
		next := uint64(0)
		for pass := range 6 {
			batch := uint64(7 + pass*13)
			appendTestRecords(t, source, next, next+batch)
			next += batch
			require.NoError(t, source.Sync())
			appendTestRecords(t, source, next, next+3) // unsynced: never copied
			next += 3
			copyPass(t, source, staged)
			require.NoError(t, staged.Sync())
		}
		// Freeze: no more appends; drain the tail and reproduce the state.
		require.NoError(t, source.Sync())
		source.SetCommitted(17)
		copyPass(t, source, staged)
		require.Zero(t, copyPass(t, source, staged), "a second drain finds nothing")
		require.NoError(t, staged.SetState(source.HWM(), source.Committed()))
		require.NoError(t, staged.Sync())
		require.NoError(t, staged.Close())

		recovery, err := VerifyStaged(fs, "dst/.moves/t-0", cfg, source.HWM(), Corruption{})
		require.NoError(t, err)
		require.Equal(t, source.HWM(), recovery.HWM)
		require.Equal(t, source.HWM(), recovery.PersistedHWM, "the staged hwm is the source's exact hwm")
		require.NoError(t, InstallStaged(fs, "dst/.moves/t-0", "dst/topics/t/p00000"))
		_, err = fs.Stat("dst/.moves/t-0")
		require.ErrorIs(t, err, ErrNotExist)

		moved, recovery := openTestLog(t, fs, "dst/topics/t/p00000", cfg)
		require.Equal(t, source.HWM(), moved.HWM())
		require.Equal(t, uint64(17), moved.Committed())
		require.Equal(t, source.Stats().Segments, recovery.Segments)
		requireTestRecords(t, moved, 0, moved.HWM())
		appendTestRecords(t, moved, moved.Next(), moved.Next()+5)
		require.NoError(t, moved.Sync())
		requireTestRecords(t, moved, 0, moved.HWM())
		require.NoError(t, moved.Close())
		require.NoError(t, source.Close())
	})
}

// A staged copy synced before a crash still verifies afterwards.
func TestMoveStagedCopySurvivesCrash(t *testing.T) {
	fs := newLogMemFS(21)
	cfg := smallLogConfig()
	source, _ := openTestLog(t, fs, "src", cfg)
	appendTestRecords(t, source, 0, 90)
	require.NoError(t, source.Sync())
	staged, err := CreateStaged(fs, "moves/p", cfg)
	require.NoError(t, err)
	copyPass(t, source, staged)
	require.NoError(t, staged.SetState(source.HWM(), 0))
	require.NoError(t, staged.Sync())
	fs.Crash()
	recovery, err := VerifyStaged(fs, "moves/p", cfg, 90, Corruption{})
	require.NoError(t, err)
	require.Equal(t, uint64(90), recovery.HWM)
}

// Installing over an existing partition directory replaces it whole.
func TestMoveInstallReplacesExisting(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		writeClosedTestLog(t, fs, "topics/t/p00001", cfg, 100)

		source, _ := openTestLog(t, fs, "src", cfg)
		appendTestRecords(t, source, 0, 5)
		require.NoError(t, source.Sync())
		staged, err := CreateStaged(fs, "moves/t-1", cfg)
		require.NoError(t, err)
		copyPass(t, source, staged)
		require.NoError(t, staged.SetState(5, 5))
		require.NoError(t, staged.Sync())
		require.NoError(t, staged.Close())
		_, err = VerifyStaged(fs, "moves/t-1", cfg, 5, Corruption{})
		require.NoError(t, err)
		require.NoError(t, InstallStaged(fs, "moves/t-1", "topics/t/p00001"))
		names, err := fs.List("topics/t")
		require.NoError(t, err)
		require.Equal(t, []string{"p00001", "p00001.aside"}, names, "the replaced copy stays until the install verifies")
		require.NoError(t, CommitInstall(fs, "topics/t/p00001"))
		names, err = fs.List("topics/t")
		require.NoError(t, err)
		require.Equal(t, []string{"p00001", "p00001.replaced"}, names, "verified: the old copy is marked replaced")
		require.NoError(t, DropReplaced(fs, "topics/t/p00001"))

		names, err = fs.List("topics/t")
		require.NoError(t, err)
		require.Equal(t, []string{"p00001"}, names, "the replaced copy is gone")
		installed, recovery := openTestLog(t, fs, "topics/t/p00001", cfg)
		require.Equal(t, uint64(5), recovery.HWM)
		require.Equal(t, uint64(5), installed.Committed())
		requireTestRecords(t, installed, 0, 5)
		require.NoError(t, installed.Close())
	})
}

// Segments reports only durable bytes below the HWM, seals a segment once
// the next one starts at or below the HWM, and ReadChunk never reads past
// that size.
func TestMoveSegmentsAndReadChunk(t *testing.T) {
	log, _ := openTestLog(t, newLogMemFS(22), "p", smallLogConfig())
	require.Equal(t, []SegmentInfo{{Base: 0}}, log.Segments(), "an empty log still lists its first segment")
	appendTestRecords(t, log, 0, 50)
	require.NoError(t, log.Sync())
	synced := log.Segments()
	appendTestRecords(t, log, 50, 80)
	require.Equal(t, synced, log.Segments(), "unsynced appends change nothing a move sees")
	for i, info := range synced {
		require.Equal(t, i+1 < len(synced), info.Sealed, "segment %d", info.Base)
	}
	last := synced[len(synced)-1]
	require.Equal(t, log.segmentOf(49).base, last.Base)

	buffer := make([]byte, 10_000)
	n, err := log.ReadChunk(last.Base, 0, buffer)
	require.NoError(t, err)
	require.Equal(t, int(min(last.Size, int64(log.cfg.ChunkBytesMax))), n)
	n, err = log.ReadChunk(last.Base, last.Size, buffer)
	require.NoError(t, err)
	require.Zero(t, n, "the end of the readable bytes")
	_, err = log.ReadChunk(last.Base, last.Size+1, buffer)
	require.ErrorIs(t, err, ErrChunkPosition)
	_, err = log.ReadChunk(last.Base+1, 0, buffer)
	require.ErrorIs(t, err, ErrNoSegment)
}

// WriteChunk is append-only per segment and bounded.
func TestMoveWriteChunkChecks(t *testing.T) {
	fs := newLogMemFS(23)
	cfg := smallLogConfig()
	staged, err := CreateStaged(fs, "moves/p", cfg)
	require.NoError(t, err)
	require.ErrorIs(t, staged.WriteChunk(0, 5, []byte("x")), ErrChunkPosition, "a new segment starts at 0")
	require.NoError(t, staged.WriteChunk(0, 0, []byte("abc")))
	require.ErrorIs(t, staged.WriteChunk(0, 2, []byte("x")), ErrChunkPosition)
	require.ErrorIs(t, staged.WriteChunk(0, 4, []byte("x")), ErrChunkPosition)
	require.NoError(t, staged.WriteChunk(0, 3, []byte("d")))
	require.Equal(t, int64(4), staged.StagedSize(0))
	require.ErrorIs(t, staged.WriteChunk(0, 4, make([]byte, cfg.ChunkBytesMax+1)), ErrChunkTooLarge)
	require.ErrorIs(t, staged.SetState(3, 4), ErrStagedState)
	require.NoError(t, staged.Close())
	require.ErrorIs(t, staged.WriteChunk(0, 4, nil), ErrClosed)
}

// CreateStaged starts from an empty directory even if one was left over.
func TestMoveCreateStagedRemovesLeftovers(t *testing.T) {
	fs := newLogMemFS(24)
	require.NoError(t, fs.MkdirAll("moves/p"))
	require.NoError(t, WriteFileAtomic(fs, "moves/p/"+segmentName(0), []byte("old")))
	staged, err := CreateStaged(fs, "moves/p", smallLogConfig())
	require.NoError(t, err)
	names, err := fs.List("moves/p")
	require.NoError(t, err)
	require.Empty(t, names)
	require.NoError(t, staged.Close())
}

// VerifyStaged refuses a copy that recovers below the required HWM, one
// missing data its own hwm promises, and one with a corrupt record.
func TestMoveVerifyStagedRefuses(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		source, _ := openTestLog(t, fs, "src", cfg)
		appendTestRecords(t, source, 0, 60)
		require.NoError(t, source.Sync())
		build := func(dir string, hwm uint64) {
			staged, err := CreateStaged(fs, dir, cfg)
			require.NoError(t, err)
			copyPass(t, source, staged)
			require.NoError(t, staged.SetState(hwm, 0))
			require.NoError(t, staged.Sync())
			require.NoError(t, staged.Close())
		}
		build("behind", 60)
		_, err := VerifyStaged(fs, "behind", cfg, 61, Corruption{})
		require.ErrorIs(t, err, ErrStagedBehind)

		build("short", 60)
		last := source.Segments()[len(source.Segments())-1]
		truncateFile(t, fs, segmentPath("short", last.Base), last.Size-1)
		_, err = VerifyStaged(fs, "short", cfg, 0, Corruption{})
		require.ErrorIs(t, err, ErrStagedBehind, "the copy lost data its hwm covers")

		build("corrupt", 60)
		flipByte(t, fs, segmentPath("corrupt", 0), frameHeaderBytes+1)
		recovery, err := VerifyStaged(fs, "corrupt", cfg, 60, Corruption{})
		require.ErrorIs(t, err, ErrStagedBehind)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, []uint64{0}, recovery.CorruptOffsets)
		_, _, err = OpenVerified(fs, "corrupt", cfg, 60, Corruption{})
		require.ErrorIs(t, err, ErrCorrupt, "OpenVerified refuses what VerifyStaged refuses")
		require.NoError(t, source.Close())
	})
}

// OpenVerified keeps a good copy open, and a Store adopts it as the
// partition's log: the copy is read once.
func TestMoveOpenVerifiedIsAdopted(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		source, _ := openTestLog(t, fs, "src", cfg)
		appendTestRecords(t, source, 0, 40)
		require.NoError(t, source.Sync())
		staged, err := CreateStaged(fs, "staged", cfg)
		require.NoError(t, err)
		copyPass(t, source, staged)
		require.NoError(t, staged.SetState(40, 12))
		require.NoError(t, staged.Sync())
		require.NoError(t, staged.Close())
		require.NoError(t, InstallStaged(fs, "staged", "final"))

		_, _, err = OpenVerified(fs, "final", cfg, 41, Corruption{})
		require.ErrorIs(t, err, ErrStagedBehind)
		log, recovery, err := OpenVerified(fs, "final", cfg, 40, Corruption{})
		require.NoError(t, err)
		require.Equal(t, uint64(40), recovery.HWM)
		store := NewStore(fs, cfg, storeOpenMaxTest, storeKeptBytesTest)
		require.NoError(t, store.Adopt("final", log, 5))
		require.Error(t, store.Adopt("final", log, 5), "one log per directory")
		got, reopened, err := store.Log("final", 6)
		require.NoError(t, err)
		require.Same(t, log, got)
		require.Zero(t, reopened, "no second recovery")
		require.Equal(t, uint64(12), got.Committed())
		requireTestRecords(t, got, 0, 40)
		require.NoError(t, store.CloseAll())
		require.NoError(t, source.Close())
	})
}

// RepairInstall restores the aside copy when a crash hit between the two
// renames, and removes it when the install got through.
func TestMoveRepairInstall(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		final := "topics/t/p00002"
		require.NoError(t, fs.MkdirAll(final+asideSuffix))
		require.NoError(t, WriteFileAtomic(fs, path.Join(final+asideSuffix, "marker"), []byte("old")))
		require.NoError(t, RepairInstall(fs, final))
		data, err := ReadFile(fs, path.Join(final, "marker"))
		require.NoError(t, err)
		require.Equal(t, "old", string(data), "the aside copy is back")

		require.NoError(t, WriteFileAtomic(fs, path.Join(final, "marker"), []byte("new")))
		require.NoError(t, fs.MkdirAll(final+replacedSuffix))
		require.NoError(t, RepairInstall(fs, final))
		_, err = fs.Stat(final + replacedSuffix)
		require.ErrorIs(t, err, ErrNotExist, "a committed install loses its replaced copy")
		data, err = ReadFile(fs, path.Join(final, "marker"))
		require.NoError(t, err)
		require.Equal(t, "new", string(data), "and keeps what it installed")
		require.NoError(t, RepairInstall(fs, final), "nothing to repair")
		_, err = fs.Stat(final)
		require.NoError(t, err)
	})
}

// A crash after an install, before its copy verified (both the new copy
// and the aside one on disk), puts the aside copy back: it may be the
// verified install a late flip was proposed for (move self-review).
func TestMoveCrashBeforeVerificationKeepsTheReplacedCopy(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		sevenRecordsAndAnEmptyStagedCopy(t, fs, cfg)
		require.NoError(t, InstallStaged(fs, "moves/t-3", "topics/t/p00003"))
		require.NoError(t, RepairInstall(fs, "topics/t/p00003")) // the crash, then the start
		log, recovery := openTestLog(t, fs, "topics/t/p00003", cfg)
		require.Equal(t, uint64(7), recovery.HWM, "the copy before the install is back")
		require.NoError(t, log.Close())
	})
}

// An install that fails before the staged copy is in place leaves the
// partition directory as it was (move self-review: an undo after a
// failed rename aside deleted the very copy a late flip needed).
func TestMoveFailedInstallLeavesTheDirectoryAsItWas(t *testing.T) {
	fs := newLogMemFS(7)
	cfg := smallLogConfig()
	sevenRecordsAndAnEmptyStagedCopy(t, fs, cfg)
	requireAsItWas := func(step string) {
		t.Helper()
		names, err := fs.List("topics/t")
		require.NoError(t, err)
		require.Equal(t, []string{"p00003"}, names, step)
		log, recovery := openTestLog(t, fs, "topics/t/p00003", cfg)
		require.Equal(t, uint64(7), recovery.HWM, step)
		require.NoError(t, log.Close())
	}
	fs.FailNext(FaultRename, errors.New("EIO"), 1)
	require.Error(t, InstallStaged(fs, "moves/t-3", "topics/t/p00003"))
	requireAsItWas("the rename aside failed")
	require.Error(t, InstallStaged(fs, "moves/none", "topics/t/p00003"))
	requireAsItWas("the rename of the staged copy failed, after the rename aside")
}

func TestDeletePartition(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		log, _ := openTestLog(t, fs, "topics/t/p00003", smallLogConfig())
		appendTestRecords(t, log, 0, 50)
		require.NoError(t, log.Sync())
		require.NoError(t, log.Close())
		require.NoError(t, DeletePartition(fs, "topics/t/p00003"))
		_, err := fs.Stat("topics/t/p00003")
		require.ErrorIs(t, err, ErrNotExist)
		require.NoError(t, DeletePartition(fs, "topics/t/p00003"), "deleting twice is fine")
	})
}

// A deleted partition stays deleted after a crash.
func TestDeletePartitionDurable(t *testing.T) {
	fs := newLogMemFS(25)
	log, _ := openTestLog(t, fs, "topics/t/p00003", smallLogConfig())
	appendTestRecords(t, log, 0, 5)
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close())
	require.NoError(t, DeletePartition(fs, "topics/t/p00003"))
	fs.Crash()
	_, err := fs.Stat("topics/t/p00003")
	require.ErrorIs(t, err, ErrNotExist)
}

// sevenRecordsAndAnEmptyStagedCopy writes a partition log of 7 records at
// topics/t/p00003 and an empty staged copy at moves/t-3, synced and
// closed: an install of the copy replaces the log, and never verifies.
func sevenRecordsAndAnEmptyStagedCopy(t *testing.T, fs FS, cfg LogConfig) {
	t.Helper()
	writeClosedTestLog(t, fs, "topics/t/p00003", cfg, 7)
	staged, err := CreateStaged(fs, "moves/t-3", cfg)
	require.NoError(t, err)
	require.NoError(t, staged.Sync())
	require.NoError(t, staged.Close())
}

// UndoInstall puts back the copy an install replaced (a copy that fails
// its verification must not cost the one before it), and removes a
// failed install that replaced nothing.
func TestMoveUndoInstall(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		sevenRecordsAndAnEmptyStagedCopy(t, fs, cfg)
		require.NoError(t, InstallStaged(fs, "moves/t-3", "topics/t/p00003"))
		_, _, err := OpenVerified(fs, "topics/t/p00003", cfg, 7, Corruption{})
		require.ErrorIs(t, err, ErrStagedBehind, "the empty copy does not verify")

		require.NoError(t, UndoInstall(fs, "topics/t/p00003"))
		names, err := fs.List("topics/t")
		require.NoError(t, err)
		require.Equal(t, []string{"p00003"}, names)
		restored, recovery := openTestLog(t, fs, "topics/t/p00003", cfg)
		require.Equal(t, uint64(7), recovery.HWM, "the earlier copy is back")
		requireTestRecords(t, restored, 0, 7)
		require.NoError(t, restored.Close())

		fresh, err := CreateStaged(fs, "moves/t-4", cfg)
		require.NoError(t, err)
		require.NoError(t, fresh.Close())
		require.NoError(t, InstallStaged(fs, "moves/t-4", "topics/t/p00004"))
		require.NoError(t, UndoInstall(fs, "topics/t/p00004"))
		_, err = fs.Stat("topics/t/p00004")
		require.ErrorIs(t, err, ErrNotExist, "an install that replaced nothing leaves nothing")
	})
}

// An install over the leftovers of an undo that failed part-way (the
// installed copy renamed unverified, the aside copy not yet back) puts
// the aside copy back first, and sets it aside again: it is never lost.
func TestMoveInstallAfterAFailedUndoKeepsTheAsideCopy(t *testing.T) {
	fs := newLogMemFS(9)
	cfg := smallLogConfig()
	sevenRecordsAndAnEmptyStagedCopy(t, fs, cfg)
	require.NoError(t, fs.Rename("topics/t/p00003", "topics/t/p00003"+asideSuffix)) // as the failed undo left it
	require.NoError(t, InstallStaged(fs, "moves/t-3", "topics/t/p00003"))
	require.NoError(t, UndoInstall(fs, "topics/t/p00003"))
	log, recovery := openTestLog(t, fs, "topics/t/p00003", cfg)
	require.Equal(t, uint64(7), recovery.HWM)
	require.NoError(t, log.Close())
}

// TestDeletePartitionOfALongName: a topic's name may have 255 bytes, the
// longest file name Linux allows; the directory's aside must fit too
// (with the suffix appended, a name of 247 bytes or more could not be
// renamed aside, and the topic's delete never removed its files). Names
// cut short alike get asides of their own.
func TestDeletePartitionOfALongName(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		long := strings.Repeat("b", FileNameBytesMax)
		twin := strings.Repeat("b", FileNameBytesMax-1) + "c"
		for _, name := range []string{long, twin} {
			log, _ := openTestLog(t, fs, "topics/"+name+"/p00000", smallLogConfig())
			appendTestRecords(t, log, 0, 5)
			require.NoError(t, log.Sync())
			require.NoError(t, log.Close())
		}
		require.NotEqual(t, asideName("topics/"+long), asideName("topics/"+twin))
		require.True(t, DeletingLeftover(path.Base(asideName("topics/"+long))))
		require.LessOrEqual(t, len(path.Base(asideName("topics/"+long))), FileNameBytesMax)

		require.NoError(t, DeletePartition(fs, "topics/"+long))
		names, err := fs.List("topics")
		require.NoError(t, err)
		require.Equal(t, []string{twin}, names, "the long name went, its twin stayed")
		require.NoError(t, DeletePartition(fs, "topics/"+twin))
		names, err = fs.List("topics")
		require.NoError(t, err)
		require.Empty(t, names)
	})
}

// A staged copy of many segments holds few files open while it is
// written, though the node syncs it once, after its last chunk: a chunk
// that starts a segment closes the files of the segments before the
// newest stagedFilesOpenMax, synced or not (a copy held one per segment,
// a thousand for a partition of 64 GiB). The Sync reopens them to make
// their bytes durable: the copy verifies whole after a power loss.
func TestAStagedCopyHoldsFewFilesWhateverTheSegments(t *testing.T) {
	memFS := newLogMemFS(5)
	cfg := smallLogConfig()
	source, _ := openTestLog(t, memFS, "src", cfg)
	appendKilobyteRecords(t, source, 0, 300)
	require.NoError(t, source.Sync())
	require.Greater(t, len(source.Segments()), 50)
	counted := &countingFS{FS: memFS}
	staged, err := CreateStaged(counted, "moves/p", cfg)
	require.NoError(t, err)
	copyPass(t, source, staged)
	require.LessOrEqual(t, counted.peak, stagedFilesOpenMax+1, "files open at once while the copy was written")
	require.NoError(t, staged.SetState(source.HWM(), 0))
	require.NoError(t, staged.Sync())
	require.LessOrEqual(t, counted.peak, stagedFilesOpenMax+1, "files open at once while the copy was synced")
	memFS.Crash()
	recovery, err := VerifyStaged(memFS, "moves/p", cfg, 300, Corruption{})
	require.NoError(t, err)
	require.Equal(t, uint64(300), recovery.HWM, "every segment's bytes were made durable through a descriptor of its own")
}
