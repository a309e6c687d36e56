package storage

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAFailedCommitKeepsTheReplacedCopyForTheUndo: on a running node, a
// CommitInstall whose rename of the aside copy succeeded but whose
// directory sync failed is followed by the caller's UndoInstall
// (node/move_dest.go, moveJob.run). The undo must put back the copy the
// install replaced; it removed it as replaced, with the installed one, and
// the partition directory was gone (storage review).
func TestAFailedCommitKeepsTheReplacedCopyForTheUndo(t *testing.T) {
	fs := newLogMemFS(31)
	cfg := smallLogConfig()
	final := "topics/t/p00003"
	// The copy already at finalDir (for instance an earlier verified
	// install of the same move whose flip is still on its way).
	writeClosedTestLog(t, fs, final, cfg, 7)

	// A new staged copy, synced and closed, as moveJob.run does.
	source, _ := openTestLog(t, fs, "src", cfg)
	appendTestRecords(t, source, 0, 9)
	require.NoError(t, source.Sync())
	stageCopy(t, fs, "moves/t-3", cfg, source)

	require.NoError(t, InstallStaged(fs, "moves/t-3", final))
	log, _, err := OpenVerified(fs, final, cfg, 9, Corruption{})
	require.NoError(t, err)

	// The directory sync of CommitInstall fails (EIO); its rename succeeded.
	fs.FailNext(FaultSyncDir, fmt.Errorf("injected: %w", ErrIO), 1)
	commitErr := CommitInstall(fs, final)
	require.ErrorIs(t, commitErr, ErrIO)
	// moveJob.run's reaction, verbatim: close the log, undo the install.
	require.NoError(t, log.Close())
	require.NoError(t, UndoInstall(fs, final))

	names, err := fs.List("topics/t")
	require.NoError(t, err)
	require.Contains(t, names, "p00003",
		"after a failed commit and its undo, the partition directory must hold the copy it had before; found %v", names)
	restored, _, err := OpenLog(fs, final, cfg)
	require.NoError(t, err)
	require.Equal(t, uint64(7), restored.HWM(), "the copy the install replaced")
	require.NoError(t, restored.Close())
}

// TestAStagedSegmentPastAnyLogsSizeIsRefused: no segment of a log holds
// more than the largest segment plus one frame, so a chunk that would
// grow a staged segment past that is refused (the move fails) instead of
// being written, to panic in the verification, whose index cannot hold
// positions past 4 GiB (storage review).
func TestAStagedSegmentPastAnyLogsSizeIsRefused(t *testing.T) {
	fs := newLogMemFS(33)
	staged, err := CreateStaged(fs, "moves/t-1", smallLogConfig())
	require.NoError(t, err)
	require.NoError(t, staged.WriteChunk(0, 0, []byte("frames")))
	staged.segments[0].sizeBytes = stagedSegmentBytesMax - 4 // as if that much had been copied
	err = staged.WriteChunk(0, stagedSegmentBytesMax-4, []byte("more than four"))
	require.ErrorIs(t, err, ErrChunkTooLarge)
	require.NoError(t, staged.WriteChunk(0, stagedSegmentBytesMax-4, []byte("four")), "up to the bound is taken")
}
