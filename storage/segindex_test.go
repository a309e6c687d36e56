package storage

import (
	"encoding/binary"
	"hash/crc32"
	"path"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// indexedLogConfig is smallLogConfig with segment index files on.
func indexedLogConfig() LogConfig {
	cfg := smallLogConfig()
	cfg.SegmentIndexFiles = true
	cfg.ResidentPositionsBytesMax = 0 // only residentSealedSegmentsMin stay: paging at every turn
	return cfg
}

// scannedView is what a recovery that reads every segment shows of dir:
// the log opened with index files off (which neither reads nor writes
// them), viewed, and closed again.
func scannedView(t *testing.T, fs FS, dir string) (logView, Recovery) {
	t.Helper()
	cfg := indexedLogConfig()
	cfg.SegmentIndexFiles = false
	log, recovery := openTestLog(t, fs, dir, cfg)
	view := viewOf(t, log)
	require.NoError(t, log.Close())
	return view, recovery
}

// indexFiles lists the bases of the index files in dir.
func indexFiles(t *testing.T, fs FS, dir string) []uint64 {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var bases []uint64
	for _, name := range names {
		if base, ok := parseSegmentIndexName(name); ok {
			bases = append(bases, base)
		}
	}
	return bases
}

// TestSealedSegmentsRecoverFromTheirIndexFiles: every sealed segment the
// persisted HWM covers gets an index file as its round completes, and
// the next recovery takes each from it, reading no segment but the
// active one, and shows exactly what a recovery that scans them shows.
func TestSealedSegmentsRecoverFromTheirIndexFiles(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := indexedLogConfig()
		log, _ := openTestLog(t, fs, "p", cfg)
		appendTestRecords(t, log, 0, 150)
		require.NoError(t, log.Sync())
		sealed := len(log.segments) - 1
		require.GreaterOrEqual(t, sealed, 3)
		require.Len(t, indexFiles(t, fs, "p"), sealed, "each sealed segment's round wrote its index")
		require.NoError(t, log.Close())

		want, scanned := scannedView(t, fs, "p")
		require.Zero(t, scanned.SegmentsFromIndex)
		log, recovery := openTestLog(t, fs, "p", cfg)
		require.Equal(t, sealed, recovery.SegmentsFromIndex)
		require.Zero(t, recovery.SegmentIndexesWritten)
		require.True(t, log.Unverified())
		require.Equal(t, want, viewOf(t, log))
		requireTestRecords(t, log, 0, 150)
		appendTestRecords(t, log, 150, 200)
		require.NoError(t, log.Sync())
		requireTestRecords(t, log, 0, 200)
		require.NoError(t, log.Close())
	})
}

// TestAnUnusableIndexFileIsScannedAndRewritten: an index file that fails
// a check (its checksum, the segment it names, the segment's size, the
// frames at its ends) is not used: the segment is scanned, as without
// index files, and its index written again for the next recovery.
func TestAnUnusableIndexFileIsScannedAndRewritten(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, fs FS, log *Log){
		"checksum": func(t *testing.T, fs FS, log *Log) {
			flipByte(t, fs, segmentIndexPath("p", log.segments[1].base), segmentIndexHeaderSize+1)
		},
		"another segment's index": func(t *testing.T, fs FS, log *Log) {
			data, err := ReadFile(fs, segmentIndexPath("p", log.segments[0].base))
			require.NoError(t, err)
			require.NoError(t, WriteFileAtomic(fs, segmentIndexPath("p", log.segments[1].base), data))
		},
		"a truncated index": func(t *testing.T, fs FS, log *Log) {
			truncateFile(t, fs, segmentIndexPath("p", log.segments[1].base), segmentIndexHeaderSize)
		},
		"the segment's size": func(t *testing.T, fs FS, log *Log) {
			s := residentSegment(t, log, 1)
			truncateFile(t, fs, segmentPath("p", s.base), int64(s.positions[len(s.positions)-1]))
		},
		"its first frame": func(t *testing.T, fs FS, log *Log) {
			flipByte(t, fs, segmentPath("p", log.segments[1].base), frameHeaderBytes+2)
		},
		"its last frame": func(t *testing.T, fs FS, log *Log) {
			s := residentSegment(t, log, 1)
			flipByte(t, fs, segmentPath("p", s.base), int64(s.positions[len(s.positions)-1])+frameHeaderBytes+2)
		},
	} {
		t.Run(name, func(t *testing.T) {
			fs, cfg := newLogMemFS(1), indexedLogConfig()
			writeClosedTestLog(t, fs, "p", cfg, 150)
			log, _ := openTestLog(t, fs, "p", cfg)
			sealed := len(log.segments) - 1
			damage(t, fs, log)
			require.NoError(t, log.Close())

			want, _ := scannedView(t, fs, "p")
			log, recovery := openTestLog(t, fs, "p", cfg)
			require.Equal(t, sealed-1, recovery.SegmentsFromIndex, "the damaged one is scanned")
			require.Equal(t, 1, recovery.SegmentIndexesWritten)
			require.Equal(t, want, viewOf(t, log))
			require.NoError(t, log.Close())

			log, recovery = openTestLog(t, fs, "p", cfg)
			require.Equal(t, sealed, recovery.SegmentsFromIndex, "its index was written again")
			require.Equal(t, want, viewOf(t, log))
			require.NoError(t, log.Close())
		})
	}
}

// TestDamageUnderAnIndexIsFoundByReadAndByVerification: media damage to
// a frame inside a segment taken from its index is not seen by recovery;
// Read refuses the frame (ErrCorrupt) and serves its neighbours, and
// VerifySegments counts it as recovery would have, rewrites the index,
// and the next recovery reports it from there.
func TestDamageUnderAnIndexIsFoundByReadAndByVerification(t *testing.T) {
	fs, cfg := newLogMemFS(1), indexedLogConfig()
	writeClosedTestLog(t, fs, "p", cfg, 150)
	log, _ := openTestLog(t, fs, "p", cfg)
	s := residentSegment(t, log, 1)
	damaged := s.base + uint64(len(s.positions))/2
	name, position := framePosition(t, log, damaged)
	require.NoError(t, log.Close())
	flipByte(t, fs, name, position+frameHeaderBytes+2)
	want, scanned := scannedView(t, fs, "p")
	require.Equal(t, uint64(1), scanned.CorruptCount)

	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Zero(t, recovery.CorruptCount, "recovery read no sealed segment")
	_, err := log.Read(damaged)
	require.ErrorIs(t, err, ErrCorrupt)
	requireTestRecords(t, log, damaged+1, damaged+5)
	require.Zero(t, log.Corruption().Count)

	require.NoError(t, log.VerifySegments(len(log.segments)))
	require.False(t, log.Unverified())
	require.Equal(t, Corruption{Count: 1, Offsets: []uint64{damaged}}, log.Corruption())
	require.Equal(t, want, viewOf(t, log))
	require.NoError(t, log.Close())

	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Equal(t, len(log.segments)-1, recovery.SegmentsFromIndex)
	require.Equal(t, uint64(1), recovery.CorruptCount)
	require.Equal(t, []uint64{damaged}, recovery.CorruptOffsets)
	require.Equal(t, want, viewOf(t, log))
	require.NoError(t, log.Close())
}

// TestRetentionRemovesIndexFilesAndRecoveryOrphans: retention removes a
// segment's index with it, and recovery removes an index left without
// its segment (a crash between the two removals).
func TestRetentionRemovesIndexFilesAndRecoveryOrphans(t *testing.T) {
	cfg := indexedLogConfig()
	fs, log := syncedTestLog(t, cfg, 150)
	first, second := log.segments[0].base, log.segments[1].base
	result, err := log.ApplyRetention(1<<40, 1)
	require.NoError(t, err)
	require.Positive(t, result.SegmentsDeleted)
	for _, base := range indexFiles(t, fs, "p") {
		require.GreaterOrEqual(t, base, log.Oldest(), "an index outlived its segment")
	}
	require.NoError(t, log.Close())

	orphan := segmentIndexPath("p", first)
	require.NoError(t, WriteFileAtomic(fs, orphan, []byte("left by a crash")))
	require.NoError(t, WriteFileAtomic(fs, segmentIndexPath("p", second), []byte("another")))
	log, _ = openTestLog(t, fs, "p", cfg)
	require.NotContains(t, indexFiles(t, fs, "p"), first)
	require.NotContains(t, indexFiles(t, fs, "p"), second)
	require.NoError(t, log.Close())
}

// TestDecodeSegmentIndexRefusesInconsistentFiles: an index whose
// checksum holds but whose content contradicts itself is refused.
func TestDecodeSegmentIndexRefusesInconsistentFiles(t *testing.T) {
	valid := &segment{base: 10, positions: []uint32{0, 40, positionCorrupt, 90}, sizeBytes: 130, corruptCount: 2, newestTimeMs: 7}
	encode := func(mutate func(b []byte)) []byte {
		b, ok := encodeSegmentIndex(valid, 15)
		require.True(t, ok)
		mutate(b)
		body := b[:len(b)-segmentIndexCRCBytes]
		binary.BigEndian.PutUint32(b[len(body):], crc32.Checksum(body, castagnoli))
		return b
	}
	index, err := decodeSegmentIndex(encode(func([]byte) {}))
	require.NoError(t, err)
	require.Equal(t, segmentIndex{base: 10, nextBase: 15, segmentBytes: 130, newestTimeMs: 7, corruptCount: 2,
		positions: valid.positions}, index)
	entry := func(i int) int { return segmentIndexHeaderSize + 4*i }
	for name, mutate := range map[string]func(b []byte){
		"magic":              func(b []byte) { b[0] ^= 1 },
		"version":            func(b []byte) { b[7] = 9 },
		"positions reversed": func(b []byte) { binary.BigEndian.PutUint32(b[entry(1):], 0) },
		"position past size": func(b []byte) { binary.BigEndian.PutUint32(b[entry(3):], 130) },
		"corrupt count":      func(b []byte) { binary.BigEndian.PutUint64(b[8+8*4:], 1) },
		"more entries than offsets": func(b []byte) {
			binary.BigEndian.PutUint64(b[8+8*1:], 13) // nextBase 13: three offsets, four entries
		},
		"count": func(b []byte) { binary.BigEndian.PutUint64(b[8+8*5:], 3) },
	} {
		_, err := decodeSegmentIndex(encode(mutate))
		require.ErrorIs(t, err, errSegmentIndexUnusable, name)
	}
}

// TestRecoveryWithIndexFilesAgreesWithAScan: across random histories of
// appends, rolls, retention, clean closes and crashes (torn writes
// included, so index files are lost or torn too), a recovery that uses
// index files shows exactly what one that scans every segment shows of
// the same files.
func TestRecoveryWithIndexFilesAgreesWithAScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fs := newLogMemFS(rapid.Uint64().Draw(rt, "fs"))
		fs.SetTornWriteProbability(rapid.Float64Range(0, 0.5).Draw(rt, "torn"))
		cfg := indexedLogConfig()
		cfg.HWMLagBytesMax = rapid.SampledFrom([]int64{0, 300, 2000}).Draw(rt, "lag")
		const dir = "p"
		next := uint64(0)
		for range rapid.IntRange(1, 6).Draw(rt, "lives") {
			view, _ := scannedView(t, fs, dir)
			log, _, err := OpenLog(fs, dir, cfg)
			require.NoError(rt, err)
			require.Equal(rt, view, viewOf(t, log))
			next = log.Next()
			for range rapid.IntRange(0, 6).Draw(rt, "rounds") {
				count := rapid.Uint64Range(1, 40).Draw(rt, "records")
				for i := range count {
					_, err := log.Append(testRecord(next + i))
					require.NoError(rt, err)
				}
				next += count
				require.NoError(rt, log.Sync())
				if rapid.Bool().Draw(rt, "retain") {
					_, err := log.ApplyRetention(1<<40, 1)
					require.NoError(rt, err)
				}
			}
			if rapid.Bool().Draw(rt, "crash") {
				fs.Crash()
				continue
			}
			require.NoError(rt, log.Close())
		}
		view, _ := scannedView(t, fs, dir)
		log, _, err := OpenLog(fs, dir, cfg)
		require.NoError(rt, err)
		require.Equal(rt, view, viewOf(t, log))
		require.NoError(rt, log.VerifySegments(len(log.segments)))
		require.Equal(rt, view, viewOf(t, log), "a verification of intact segments changes nothing")
		require.NoError(rt, log.Close())
		for _, base := range indexFiles(t, fs, dir) {
			_, err := fs.Stat(path.Join(dir, segmentName(base)))
			require.NoError(rt, err, "index %d without its segment", base)
		}
	})
}

// TestARecoveredLogWritesNoIndexAgain: the rounds after a recovery write
// the index of no segment the recovery loaded or wrote (a start would
// otherwise rewrite every index of the node at its first rounds), only
// those of segments sealed since.
func TestARecoveredLogWritesNoIndexAgain(t *testing.T) {
	fs, cfg := newLogMemFS(1), indexedLogConfig()
	writeClosedTestLog(t, fs, "p", cfg, 150)
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Positive(t, recovery.SegmentsFromIndex)
	loaded := log.segments[0].base
	require.NoError(t, fs.Remove(segmentIndexPath("p", loaded)))
	sealed := len(log.segments) - 1
	appendTestRecords(t, log, 150, 250)
	require.NoError(t, log.Sync())
	require.Greater(t, len(log.segments)-1, sealed, "the appends sealed more segments")
	bases := indexFiles(t, fs, "p")
	require.NotContains(t, bases, loaded, "a loaded segment's index was written again")
	require.Contains(t, bases, log.segments[len(log.segments)-2].base, "a segment sealed since got its index")
	require.NoError(t, log.Close())
}

// TestAWarmReopenWritesNoIndexAgain: a log evicted and reopened warm
// keeps what its indexes cover, so its next close (an eviction of an idle
// log, every few ticks) writes and fsyncs none of them again.
func TestAWarmReopenWritesNoIndexAgain(t *testing.T) {
	fs, cfg := newLogMemFS(1), indexedLogConfig()
	store := NewStore(fs, cfg, storeOpenMaxTest, storeKeptBytesTest)
	log, _, err := store.Log("p", 0)
	require.NoError(t, err)
	appendTestRecords(t, log, 0, 300)
	require.NoError(t, log.Sync())
	require.Greater(t, len(log.segments), 2)
	require.NoError(t, store.Evict("p"))
	for cycle := range 3 {
		_, recovery, err := store.Log("p", int64(cycle))
		require.NoError(t, err)
		require.True(t, recovery.Warm)
		syncs := fs.Stats().Syncs
		require.NoError(t, store.Evict("p"))
		require.Zero(t, fs.Stats().Syncs-syncs, "cycle %d: the close of an idle log rewrote indexes", cycle)
	}
}

// TestASegmentSealedAfterItsFramesSyncedKeepsItsIndex: a segment whose
// every frame a round synced, with its zero tail, is sealed by the next
// append, which cuts the tail; the cut size is synced before the index
// names it, so a power loss leaves segment and index in agreement and the
// recovery scans no sealed segment.
func TestASegmentSealedAfterItsFramesSyncedKeepsItsIndex(t *testing.T) {
	fs, cfg := newLogMemFS(1), indexedLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	for offset := range uint64(150) {
		appendTestRecords(t, log, offset, offset+1)
		require.NoError(t, log.Sync())
	}
	sealed := len(log.segments) - 1
	require.Positive(t, sealed)
	appendTestRecords(t, log, 150, 151)
	require.NoError(t, log.Sync()) // syncs the directory the indexes were written in
	fs.Crash()

	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, sealed, recovery.SegmentsFromIndex)
	got := viewOf(t, log)
	require.NoError(t, log.Close())
	want, _ := scannedView(t, fs, "p") // after: its recovery cuts the zero tails durably
	require.Equal(t, want, got)
}

// TestIndexFilesOutliveAPowerLoss: an index file is synced when written,
// and the round after it syncs the directory, so a crash (power loss)
// after that round keeps every index: the recovery scans no sealed
// segment.
func TestIndexFilesOutliveAPowerLoss(t *testing.T) {
	cfg := indexedLogConfig()
	fs, log := syncedTestLog(t, cfg, 150)
	sealed := len(log.segments) - 1
	require.True(t, log.directoryDirty, "the indexes written ask for a directory sync")
	appendTestRecords(t, log, 150, 151)
	require.NoError(t, log.Sync())
	require.Equal(t, sealed, len(log.segments)-1, "one record seals nothing")
	fs.Crash()

	want, _ := scannedView(t, fs, "p")
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, sealed, recovery.SegmentsFromIndex)
	require.Equal(t, want, viewOf(t, log))
	require.NoError(t, log.Close())
}

// TestVerifyingAnUnchangedDamagedEndFindsNothing: a damaged end that
// recovery kept is marked corrupt offset by offset in the index, where a
// scan of the same bytes leaves a gap; the verification of that unchanged
// segment finds no new damage and rewrites nothing.
func TestVerifyingAnUnchangedDamagedEndFindsNothing(t *testing.T) {
	cfg := indexedLogConfig()
	fs, log := syncedTestLog(t, cfg, 10)
	name, from := framePosition(t, log, 8)
	size, err := log.active().file.Size()
	require.NoError(t, err)
	require.NoError(t, log.Close())
	zeroBytes(t, fs, name, from, size)

	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(2), recovery.CorruptCount)
	appendTestRecords(t, log, 10, 12) // the roll before this append seals the damaged segment
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close())

	log, recovery = openTestLog(t, fs, "p", cfg)
	require.Equal(t, 1, recovery.SegmentsFromIndex)
	before, err := ReadFile(fs, segmentIndexPath("p", 0))
	require.NoError(t, err)
	corruption := log.Corruption()
	require.NoError(t, log.VerifySegments(10))
	require.False(t, log.Unverified())
	after, err := ReadFile(fs, segmentIndexPath("p", 0))
	require.NoError(t, err)
	require.Equal(t, before, after, "the verification rewrote the index of an unchanged segment")
	require.Equal(t, corruption, log.Corruption())
	require.NoError(t, log.Close())
}
