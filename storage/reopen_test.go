package storage

import (
	"bytes"
	"fmt"
	"path"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// logView is what a log shows its users: bounds, stats, the committed
// offset, and every readable record (or the error of an unreadable one).
type logView struct {
	Oldest, HWM, Next, Committed uint64
	Stats                        LogStats
	Corruption                   Corruption
	Segments                     []SegmentInfo
	Records                      []string
}

func viewOf(t *testing.T, log *Log) logView {
	t.Helper()
	view := logView{Oldest: log.Oldest(), HWM: log.HWM(), Next: log.Next(), Committed: log.Committed(),
		Stats: log.Stats(), Corruption: log.Corruption(), Segments: log.Segments()}
	for offset := log.Oldest(); offset < log.HWM(); offset++ {
		record, err := log.Read(offset)
		view.Records = append(view.Records, fmt.Sprintf("%d %v %x %x %d", offset, err, record.Key, record.Payload, record.TimeMs))
	}
	return view
}

// evictAndReopen evicts dir's log from store and opens it again; it
// returns the reopened log, its Recovery, and the view a cold recovery of
// the same files shows (taken in between, the cold log closed again).
func evictAndReopen(t *testing.T, store *Store, fs FS, dir string, cfg LogConfig, nowMs int64) (*Log, Recovery, logView) {
	t.Helper()
	require.NoError(t, store.Evict(dir))
	cold, _ := openTestLog(t, fs, dir, cfg)
	coldView := viewOf(t, cold)
	require.NoError(t, cold.Close())
	log, recovery, err := store.Log(dir, nowMs)
	require.NoError(t, err)
	return log, recovery, coldView
}

// TestAnEvictedLogReopensWarmAsRecoveryWould: a log closed cleanly by an
// eviction reopens from the state its close kept (no scan), and shows
// exactly what a recovery of its files shows, across random histories of
// appends, rolls, commits, retention and reopens; it goes on taking
// appends, and a cold recovery after it agrees again.
func TestAnEvictedLogReopensWarmAsRecoveryWould(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fs, cfg, store := newKeptStore(rapid.Uint64().Draw(rt, "fs"))
		const dir = "t/p00000"
		log, _, err := store.Log(dir, 0)
		require.NoError(rt, err)
		next := uint64(0)
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0: // a round of appends
				count := rapid.Uint64Range(1, 20).Draw(rt, "records")
				appendTestRecords(t, log, next, next+count)
				next += count
				require.NoError(rt, log.Sync())
			case 1: // a commit
				log.SetCommitted(rapid.Uint64Range(log.Committed(), log.HWM()).Draw(rt, "committed"))
				require.NoError(rt, log.SyncCommitted())
			case 2: // retention of every sealed segment older than now
				_, err := log.ApplyRetention(1_000_000, 1)
				require.NoError(rt, err)
			case 3: // an eviction (of a log with nothing to sync, as the Store's callers pick) and a reopen
				if log.CommittedDirty() { // retention raised it
					require.NoError(rt, log.SyncCommitted())
				}
				before := viewOf(t, log)
				reopened, recovery, coldView := evictAndReopen(t, store, fs, dir, cfg, int64(step))
				require.True(rt, recovery.Warm, "a cleanly evicted log reopens warm")
				require.NotSame(rt, log, reopened)
				require.Equal(rt, coldView, viewOf(t, reopened), "warm reopen and recovery agree")
				require.Equal(rt, before, coldView, "the eviction changed nothing a user sees")
				log = reopened
			}
		}
		appendTestRecords(t, log, next, next+3)
		require.NoError(rt, log.Sync())
		final := viewOf(t, log)
		require.NoError(rt, store.Close(dir))
		cold, _ := openTestLog(t, fs, dir, cfg)
		require.Equal(rt, final, viewOf(t, cold))
		require.NoError(rt, cold.Close())
	})
}

// newKeptStore is a Store of small logs on a MemFS of seed that keeps
// every log it evicts.
func newKeptStore(seed uint64) (*MemFS, LogConfig, *Store) {
	fs, cfg := newLogMemFS(seed), smallLogConfig()
	return fs, cfg, NewStore(fs, cfg, storeOpenMaxTest, storeKeptBytesTest)
}

// evictedLog opens dir in store, appends count records in one round, and
// evicts it; it returns the evicted log.
func evictedLog(t *testing.T, store *Store, dir string, count uint64) *Log {
	t.Helper()
	log, _, err := store.Log(dir, 0)
	require.NoError(t, err)
	appendTestRecords(t, log, 0, count)
	require.NoError(t, log.Sync())
	require.NoError(t, store.Evict(dir))
	return log
}

// A kept log is reopened warm only while its directory holds what it
// left; any change sends its next open through recovery, which sees the
// change.
func TestAWarmReopenDeclinesAChangedDirectory(t *testing.T) {
	cfg := smallLogConfig()
	const dir = "t/p00000"
	changes := map[string]func(t *testing.T, fs *MemFS, log *Log){
		"a segment file added": func(t *testing.T, fs *MemFS, log *Log) {
			file, err := fs.Create(segmentPath(dir, 1_000))
			require.NoError(t, err)
			require.NoError(t, file.Close())
		},
		"the active segment shorter": func(t *testing.T, fs *MemFS, log *Log) {
			file, err := fs.Open(segmentPath(dir, log.active().base))
			require.NoError(t, err)
			require.NoError(t, file.Truncate(log.active().writtenBytes))
			require.NoError(t, file.Close())
		},
		"a sealed segment shorter": func(t *testing.T, fs *MemFS, log *Log) {
			sealed := log.segments[0]
			file, err := fs.Open(segmentPath(dir, sealed.base))
			require.NoError(t, err)
			require.NoError(t, file.Truncate(sealed.fileBytes-1))
			require.NoError(t, file.Close())
		},
		"the hwm file rewritten": func(t *testing.T, fs *MemFS, log *Log) {
			require.NoError(t, writeHWMFile(fs, dir, log.HWM()-1))
		},
		"the committed offset rewritten": func(t *testing.T, fs *MemFS, log *Log) {
			require.NoError(t, writeFreshCommittedFiles(fs, dir, 1))
		},
		"a temporary file left": func(t *testing.T, fs *MemFS, log *Log) {
			file, err := fs.Create(path.Join(dir, "x"+temporarySuffix))
			require.NoError(t, err)
			require.NoError(t, file.Close())
		},
		"the directory made again": func(t *testing.T, fs *MemFS, log *Log) {
			require.NoError(t, DeletePartition(fs, dir))
			other, _ := openTestLog(t, fs, dir, cfg)
			appendTestRecords(t, other, 0, 3)
			require.NoError(t, other.Sync())
			require.NoError(t, other.Close())
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			fs, _, store := newKeptStore(9)
			log := evictedLog(t, store, dir, 40)
			require.Greater(t, len(log.segments), 1)
			change(t, fs, log)
			reopened, recovery, err := store.Log(dir, 1)
			require.NoError(t, err)
			require.False(t, recovery.Warm, "the directory changed: recovered")
			view := viewOf(t, reopened)
			require.NoError(t, store.Close(dir))
			cold, _ := openTestLog(t, fs, dir, cfg)
			require.Equal(t, viewOf(t, cold), view)
		})
	}
}

// Only a clean close keeps a log: one closed with unsynced records, a
// failed one, or one closed by Close (whose callers may remove or replace
// its directory) recovers at its next open.
func TestOnlyACleanEvictionKeepsALog(t *testing.T) {
	_, _, store := newKeptStore(4)
	open := func(dir string) *Log {
		log, _, err := store.Log(dir, 0)
		require.NoError(t, err)
		appendTestRecords(t, log, 0, 5)
		require.NoError(t, log.Sync())
		return log
	}
	dirty := open("dirty")
	_, err := dirty.Append(testRecord(5))
	require.NoError(t, err)
	require.NoError(t, store.Evict("dirty"))

	open("closed")
	require.NoError(t, store.Close("closed"))

	open("forgotten")
	require.NoError(t, store.Evict("forgotten"))
	logs, bytes := store.Kept()
	require.Equal(t, 1, logs)
	require.Positive(t, bytes)
	require.NoError(t, store.Close("forgotten"), "a Close forgets the kept log too")

	open("a/p1")
	open("a/p2")
	open("ab/p1")
	for _, dir := range []string{"a/p1", "a/p2", "ab/p1"} {
		require.NoError(t, store.Evict(dir))
	}
	open("a/p3")
	open("ab/p2")
	require.NoError(t, store.CloseUnder("a"))
	logs, _ = store.Kept()
	require.Equal(t, 1, logs, "ab/p1 is not under a")
	require.Equal(t, []string{"ab/p2"}, store.OpenDirs(), "a/p3 closed, ab/p2 not under a")

	for _, dir := range []string{"dirty", "closed", "forgotten", "a/p1", "a/p2"} {
		_, recovery, err := store.Log(dir, 1)
		require.NoError(t, err)
		require.False(t, recovery.Warm, dir)
		require.Equal(t, uint64(5), recovery.HWM, dir)
	}
	_, recovery, err := store.Log("ab/p1", 1)
	require.NoError(t, err)
	require.True(t, recovery.Warm)
	logs, bytes = store.Kept()
	require.Zero(t, logs, "a reopened log is no longer kept")
	require.Zero(t, bytes)
}

// The kept logs stay within the Store's budget: the least recently closed
// are forgotten first, and a log larger than the budget is not kept.
func TestKeptLogsStayWithinTheirBudget(t *testing.T) {
	fs, cfg, probe := newKeptStore(5)
	evictedLog(t, probe, "probe", 10)
	_, one := probe.Kept()

	store := NewStore(fs, cfg, storeOpenMaxTest, 2*one)
	for i := range 3 {
		evictedLog(t, store, fmt.Sprintf("d%d", i), 10)
	}
	logs, bytes := store.Kept()
	require.Equal(t, 2, logs)
	require.Equal(t, 2*one, bytes)
	_, recovery, err := store.Log("d0", 1)
	require.NoError(t, err)
	require.False(t, recovery.Warm, "the least recently closed was forgotten")
	_, recovery, err = store.Log("d2", 1)
	require.NoError(t, err)
	require.True(t, recovery.Warm)

	evictedLog(t, store, "big", 100)
	_, bytes = store.Kept()
	require.LessOrEqual(t, bytes, 2*one)
	_, recovery, err = store.Log("big", 1)
	require.NoError(t, err)
	require.False(t, recovery.Warm, "larger than the whole budget: not kept")
}

// A warm reopen reads the segments' files again only when a read needs
// them: an evicted log with sealed segments reopens with one segment file
// open, and its sealed records are read back.
func TestAWarmReopenOpensOnlyTheActiveSegment(t *testing.T) {
	_, _, store := newKeptStore(6)
	log := evictedLog(t, store, "p", 200)
	require.Greater(t, len(log.segments), 3)

	reopened, recovery, err := store.Log("p", 1)
	require.NoError(t, err)
	require.True(t, recovery.Warm)
	for _, s := range reopened.segments[:len(reopened.segments)-1] {
		require.Nil(t, s.file)
	}
	require.NotNil(t, reopened.active().file)
	for offset := range uint64(200) {
		record, err := reopened.Read(offset)
		require.NoError(t, err)
		require.True(t, bytes.Equal(testRecord(offset).Payload, record.Payload), "offset %d", offset)
	}
}

// A kept log holds its index and no write buffer: Close releases the
// buffer its last writes grew (up to WriteBufferBytesMax), which the
// budget of kept logs does not count (a review's finding).
func TestAKeptLogHoldsNoWriteBuffer(t *testing.T) {
	cfg := smallLogConfig()
	cfg.WriteBufferBytesMax = 64 << 10
	store := NewStore(newLogMemFS(8), cfg, storeOpenMaxTest, storeKeptBytesTest)
	log, _, err := store.Log("p", 0)
	require.NoError(t, err)
	appendTestRecords(t, log, 0, 60)
	require.Positive(t, cap(log.pending))
	require.NoError(t, log.Sync())
	require.NoError(t, store.Evict("p"))
	require.Zero(t, cap(log.pending))
	_, bytes := store.Kept()
	require.Equal(t, log.indexBytes(), bytes)
}

// A log recovered with damage (a corrupt frame in a sealed segment, a
// kept damaged end in the last) and evicted reopens warm with the same
// index, corrupt offsets and pending seal as a recovery of its files, and
// its first append seals the damaged segment as recovery's log would.
func TestADamagedLogReopensWarmAsRecoveryWould(t *testing.T) {
	cfg := lazyLogConfig(1 << 20)
	cfg.SegmentBytes = segmentBytesMin
	fs, log := syncedTestLog(t, cfg, 120)
	require.Greater(t, len(log.segments), 2)
	sealedName, sealed := framePosition(t, log, 3)
	lastName, last := framePosition(t, log, 119)
	require.NoError(t, log.Close())
	flipByte(t, fs, sealedName, sealed+frameHeaderBytes+2)
	flipByte(t, fs, lastName, last+frameHeaderBytes+2)

	store := NewStore(fs, cfg, storeOpenMaxTest, storeKeptBytesTest)
	damaged, recovery, err := store.Log("p", 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{3, 119}, recovery.CorruptOffsets)
	require.True(t, damaged.rollBeforeAppend, "a kept damaged end")
	reopened, recovery, coldView := evictAndReopen(t, store, fs, "p", cfg, 1)
	require.True(t, recovery.Warm)
	require.Equal(t, coldView, viewOf(t, reopened))
	require.True(t, reopened.rollBeforeAppend)
	cold, _ := openTestLog(t, fs, "p", cfg)
	for i, s := range reopened.segments {
		require.Equal(t, residentSegment(t, cold, i).positions, residentSegment(t, reopened, i).positions, "segment %d", s.base)
		require.Equal(t, cold.segments[i].corruptCount, s.corruptCount, "segment %d", s.base)
	}
	require.NoError(t, cold.Close())

	segments := len(reopened.segments)
	appendTestRecords(t, reopened, 120, 121)
	require.NoError(t, reopened.Sync())
	require.Len(t, reopened.segments, segments+1, "the damaged segment sealed")
	require.NoError(t, store.Close("p"))
	cold, _ = openTestLog(t, fs, "p", cfg)
	requireTestRecords(t, cold, 120, 121)
}

// Adopting a log for a directory forgets the log kept there: the adopted
// one (a move's verified copy) replaced its files.
func TestAdoptForgetsTheLogKeptThere(t *testing.T) {
	fs, cfg, store := newKeptStore(10)
	evictedLog(t, store, "p", 5)
	logs, _ := store.Kept()
	require.Equal(t, 1, logs)

	adopted, _ := openTestLog(t, fs, "p", cfg)
	require.NoError(t, store.Adopt("p", adopted, 1))
	logs, bytes := store.Kept()
	require.Zero(t, logs)
	require.Zero(t, bytes)
}

// OpenIndexBytes counts the index memory of the open logs only: it grows
// with their records, a log's share moves to Kept when it is evicted and
// back when it reopens warm, and a Close drops it.
func TestOpenIndexBytesFollowTheOpenLogs(t *testing.T) {
	_, _, store := newKeptStore(9)
	require.Zero(t, store.OpenIndexBytes())
	log, _, err := store.Log("t/p0", 0)
	require.NoError(t, err)
	empty := store.OpenIndexBytes()
	appendTestRecords(t, log, 0, 200)
	require.NoError(t, log.Sync())
	full := store.OpenIndexBytes()
	require.GreaterOrEqual(t, full-empty, int64(200*4), "4 bytes a record")

	require.NoError(t, store.Evict("t/p0"))
	require.Zero(t, store.OpenIndexBytes())
	_, kept := store.Kept()
	require.Equal(t, full, kept, "the evicted log's index is counted as kept")

	_, recovery, err := store.Log("t/p0", 1)
	require.NoError(t, err)
	require.True(t, recovery.Warm)
	require.Equal(t, full, store.OpenIndexBytes())
	require.NoError(t, store.Close("t/p0"))
	require.Zero(t, store.OpenIndexBytes())
}
