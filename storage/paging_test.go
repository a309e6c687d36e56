package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// residentSealed counts the sealed segments of log holding their
// positions in memory.
func residentSealed(log *Log) int {
	count := 0
	for _, s := range log.segments[:len(log.segments)-1] {
		if !s.paged {
			count++
		}
	}
	return count
}

// TestSealedSegmentsArePagedOut: once their index files hold them, the
// sealed segments of an open log keep their positions in memory only for
// the residentSealedSegmentsMin read last; every record still reads back,
// a read pages its segment in, and the index memory of the log no longer
// grows with its sealed segments.
func TestSealedSegmentsArePagedOut(t *testing.T) {
	cfg := indexedLogConfig()
	_, log := syncedTestLog(t, cfg, 400)
	sealed := len(log.segments) - 1
	require.Greater(t, sealed, residentSealedSegmentsMin+2)
	require.Equal(t, residentSealedSegmentsMin, residentSealed(log))
	paged := log.indexBytes()
	sealedPositions := func(log *Log) (count int) {
		for _, s := range log.segments[:len(log.segments)-1] {
			count += len(s.positions)
		}
		return count
	}
	require.Equal(t, sealedPositions(log), int(log.segments[sealed].base-log.segments[sealed-residentSealedSegmentsMin].base),
		"the newest sealed segments' positions only")

	requireTestRecords(t, log, 0, 400)
	requireTestRecords(t, log, 0, log.segments[2].base)
	require.Equal(t, residentSealedSegmentsMin, residentSealed(log))
	require.False(t, log.segments[0].paged || log.segments[1].paged, "read last, though the oldest")
	require.LessOrEqual(t, log.indexBytes(), paged, "no more positions resident than before")

	unpaged := newLogMemFS(1)
	plain := cfg
	plain.SegmentIndexFiles = false
	other, _ := openTestLog(t, unpaged, "p", plain)
	appendTestRecords(t, other, 0, 400)
	require.NoError(t, other.Sync())
	require.Equal(t, int(other.segments[len(other.segments)-1].base), sealedPositions(other), "without index files every position stays in memory")
	require.NoError(t, other.Close())
	require.NoError(t, log.Close())
}

// TestResidentPositionsFollowTheirByteBound: the sealed segments read
// most recently stay resident as long as their positions fit
// ResidentPositionsBytesMax, so readers taking turns over that many
// segments page none in.
func TestResidentPositionsFollowTheirByteBound(t *testing.T) {
	cfg := indexedLogConfig()
	_, log := syncedTestLog(t, cfg, 600)
	require.Greater(t, len(log.segments)-1, 6)
	perSegment := 4 * int(log.segments[1].base-log.segments[0].base)
	log.cfg.ResidentPositionsBytesMax = 4*perSegment + perSegment/2
	readers := []uint64{log.segments[0].base, log.segments[1].base, log.segments[2].base, log.segments[3].base}
	for _, offset := range readers {
		requireTestRecords(t, log, offset, offset+1)
	}
	require.Equal(t, 4, residentSealed(log), "four segments' positions fit")
	pagedIn := func() (count int) {
		for range 5 {
			for _, offset := range readers {
				wasPaged := log.segmentOf(offset).paged
				requireTestRecords(t, log, offset, offset+1)
				if wasPaged {
					count++
				}
			}
		}
		return count
	}
	require.Zero(t, pagedIn(), "four readers over four resident segments")
	readers = append(readers, log.segments[4].base)
	require.Positive(t, pagedIn(), "a fifth takes turns past the bound")
	require.NoError(t, log.Close())
}

// TestARecoveryPagesOutWhatItLoaded: the segments a recovery takes from
// their index files, or scans and indexes, are paged out but the newest;
// the verification a move asks for pages each in and out again.
func TestARecoveryPagesOutWhatItLoaded(t *testing.T) {
	fs, cfg := newLogMemFS(1), indexedLogConfig()
	writeClosedTestLog(t, fs, "p", cfg, 400)
	want, _ := scannedView(t, fs, "p")
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, len(log.segments)-1, recovery.SegmentsFromIndex)
	require.Equal(t, residentSealedSegmentsMin, residentSealed(log))
	require.True(t, log.segments[len(log.segments)-2].indexFile && !log.segments[len(log.segments)-2].paged, "the newest stay")
	require.NoError(t, log.VerifySegments(len(log.segments)))
	require.False(t, log.Unverified())
	require.Equal(t, residentSealedSegmentsMin, residentSealed(log))
	require.Equal(t, want, viewOf(t, log))
	requireTestRecords(t, log, 0, 400)
	require.NoError(t, log.Close())
}

// TestAPagedSegmentWhoseIndexNoLongerHoldsIsScanned: a paged segment
// whose index file was damaged on its medium or removed is scanned at its
// next read, as VerifySegments would scan it; its records read back, its
// index file is written again, and damage in the segment itself found by
// that scan becomes corrupt offsets.
func TestAPagedSegmentWhoseIndexNoLongerHoldsIsScanned(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, fs *MemFS, log *Log, s *segment){
		"index checksum": func(t *testing.T, fs *MemFS, log *Log, s *segment) {
			flipByte(t, fs, segmentIndexPath("p", s.base), segmentIndexHeaderSize+1)
		},
		"index removed": func(t *testing.T, fs *MemFS, log *Log, s *segment) {
			require.NoError(t, fs.Remove(segmentIndexPath("p", s.base)))
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := indexedLogConfig()
			fs, log := syncedTestLog(t, cfg, 400)
			s := log.segments[0]
			require.True(t, s.paged)
			damage(t, fs, log, s)
			requireTestRecords(t, log, 0, log.segments[1].base)
			require.False(t, s.paged)
			require.Contains(t, indexFiles(t, fs, "p"), s.base, "written again")
			require.Zero(t, log.Corruption().Count)
			require.NoError(t, log.Close())
		})
	}
	t.Run("and the segment damaged too", func(t *testing.T) {
		cfg := indexedLogConfig()
		fs, log := syncedTestLog(t, cfg, 400)
		s := log.segments[0]
		name, position := framePosition(t, log, s.base+1) // pages it in
		requireTestRecords(t, log, 200, 400)              // and out again
		require.True(t, s.paged)
		flipByte(t, fs, name, position+frameHeaderBytes+2)
		require.NoError(t, fs.Remove(segmentIndexPath("p", s.base)))
		_, err := log.Read(s.base + 1)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, Corruption{Count: 1, Offsets: []uint64{s.base + 1}}, log.Corruption())
		requireTestRecords(t, log, s.base+2, 400)
		require.NoError(t, log.Close())
	})
}
