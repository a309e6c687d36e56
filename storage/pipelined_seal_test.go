package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestASegmentSealedWhileItsRoundRunsKeepsItsIndex: with pipelined group
// commit the loop appends while a round's fsyncs run. A round that
// captured every frame of the active segment runs its fsync, then, before
// it completes, an append seals that segment (cutting its zero tail).
// No later round syncs the segment (the one in flight covers all its
// frames), so the cut must be made durable at the seal, as it is when no
// round is in flight; otherwise the index written later names a size the
// disk does not hold after a power loss, and every such segment is
// scanned again at the next start.
func TestASegmentSealedWhileItsRoundRunsKeepsItsIndex(t *testing.T) {
	fs, cfg := newLogMemFS(1), indexedLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	next := uint64(0)
	sealedInFlight := 0
	for len(log.segments) < 6 {
		segments := len(log.segments)
		appendTestRecords(t, log, next, next+1)
		next++
		round := log.PrepareSync(true, false)
		require.NoError(t, round.Run()) // on the syncer goroutine
		// Meanwhile the loop appends; this one may seal the active segment.
		appendTestRecords(t, log, next, next+1)
		next++
		if len(log.segments) > segments {
			sealedInFlight++
		}
		require.NoError(t, log.CompleteSync(round, nil))
		require.NoError(t, log.Sync())
	}
	require.Positive(t, sealedInFlight)
	sealed := len(log.segments) - 1
	appendTestRecords(t, log, next, next+1)
	require.NoError(t, log.Sync()) // syncs the directory the indexes were written in
	fs.Crash()

	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, sealed, recovery.SegmentsFromIndex, "sealed segments scanned again after a power loss")
	require.Zero(t, recovery.SegmentIndexesWritten)
	require.NoError(t, log.Close())
}
