package storage

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Tests of the MemFS crash model, faults and capacity. The plain FS
// behaviour is covered by the conformance suite in fs_conformance_test.go.

var (
	errInjectedIO    = fmt.Errorf("injected: %w", ErrIO)
	errInjectedSpace = fmt.Errorf("injected: %w", ErrNoSpace)
)

func newTestMemFS(seed uint64) *MemFS {
	return NewMemFS(rand.New(rand.NewPCG(seed, 0x6d656d6673)))
}

// memDurableFile creates name holding content, with both the content and
// the name durable.
func memDurableFile(t *testing.T, fs *MemFS, name, content string) {
	t.Helper()
	conformWriteFile(t, fs, name, content)
	require.NoError(t, fs.SyncDir(path.Dir(name)))
}

// memAppend opens name and appends content without syncing.
func memAppend(t *testing.T, fs *MemFS, name, content string) File {
	t.Helper()
	file, err := fs.Open(name)
	require.NoError(t, err)
	conformWrite(t, file, content)
	return file
}

func requireMissing(t *testing.T, fs FS, name string) {
	t.Helper()
	_, err := fs.Stat(name)
	require.ErrorIs(t, err, ErrNotExist, name)
}

// keepNone and keepAll are CrashWith choices.
func keepNone(string, int64) int64        { return 0 }
func keepAll(_ string, bytes int64) int64 { return bytes }

func keepExactly(kept int64) func(string, int64) int64 {
	return func(string, int64) int64 { return kept }
}

func TestMemFSUnsyncedDataLost(t *testing.T) {
	fs := newTestMemFS(1)
	memDurableFile(t, fs, "f", "synced")
	memAppend(t, fs, "f", "+unsynced")
	fs.CrashWith(keepNone)
	require.Equal(t, "synced", conformReadFile(t, fs, "f"))
	fs.checkInvariants()
}

func TestMemFSSyncedDataSurvives(t *testing.T) {
	fs := newTestMemFS(2)
	fs.SetTornWriteProbability(1)
	memDurableFile(t, fs, "f", "first")
	file := memAppend(t, fs, "f", "+second")
	require.NoError(t, file.Sync())
	fs.Crash()
	require.Equal(t, "first+second", conformReadFile(t, fs, "f"), "synced data survives whatever the tear")
	info, err := fs.Stat("f")
	require.NoError(t, err)
	require.Equal(t, int64(12), info.Size)
}

func TestMemFSUnsyncedCreateLost(t *testing.T) {
	fs := newTestMemFS(3)
	conformWriteFile(t, fs, "f", "content synced, name not")
	fs.Crash()
	requireMissing(t, fs, "f")

	conformWriteFile(t, fs, "f", "content and name synced")
	require.NoError(t, fs.SyncDir("."))
	fs.Crash()
	require.Equal(t, "content and name synced", conformReadFile(t, fs, "f"))
	fs.checkInvariants()
}

func TestMemFSRenameNeedsSyncDir(t *testing.T) {
	fs := newTestMemFS(4)
	memDurableFile(t, fs, "target", "old")
	memDurableFile(t, fs, "temporary", "new")
	require.NoError(t, fs.Rename("temporary", "target"))
	require.Equal(t, "new", conformReadFile(t, fs, "target"))
	fs.Crash()
	require.Equal(t, "old", conformReadFile(t, fs, "target"), "the rename is undone")
	require.Equal(t, "new", conformReadFile(t, fs, "temporary"), "the old name comes back")

	require.NoError(t, fs.Rename("temporary", "target"))
	require.NoError(t, fs.SyncDir("."))
	fs.Crash()
	require.Equal(t, "new", conformReadFile(t, fs, "target"))
	requireMissing(t, fs, "temporary")

	require.NoError(t, fs.Rename("target", "fresh"))
	fs.Crash()
	require.Equal(t, "new", conformReadFile(t, fs, "target"))
	requireMissing(t, fs, "fresh")
	fs.checkInvariants()
}

func TestMemFSRenameAcrossDirectoriesIsAtomic(t *testing.T) {
	for _, synced := range []string{"from", "to"} {
		t.Run("sync "+synced, func(t *testing.T) {
			fs := newTestMemFS(5)
			require.NoError(t, fs.MkdirAll("from"))
			require.NoError(t, fs.MkdirAll("to"))
			require.NoError(t, fs.SyncDir("."))
			memDurableFile(t, fs, "from/x", "payload")
			require.NoError(t, fs.Rename("from/x", "to/x"))
			require.NoError(t, fs.SyncDir(synced))
			fs.Crash()
			require.Equal(t, "payload", conformReadFile(t, fs, "to/x"), "the rename is durable as a whole")
			requireMissing(t, fs, "from/x")
			fs.checkInvariants()
		})
	}
}

func TestMemFSRenameChainStaysDurable(t *testing.T) {
	// b moves away and a takes its slot; syncing only the slot's new owner
	// must not lose b.
	fs := newTestMemFS(6)
	require.NoError(t, fs.MkdirAll("d"))
	require.NoError(t, fs.SyncDir("."))
	memDurableFile(t, fs, "a", "A")
	memDurableFile(t, fs, "d/b", "B")
	require.NoError(t, fs.Rename("d/b", "d/c"))
	require.NoError(t, fs.Rename("a", "d/b"))
	require.NoError(t, fs.SyncDir("."))
	fs.Crash()
	require.Equal(t, "A", conformReadFile(t, fs, "d/b"))
	require.Equal(t, "B", conformReadFile(t, fs, "d/c"))
	requireMissing(t, fs, "a")
	fs.checkInvariants()
}

func TestMemFSSwappedDirectoriesStayReachable(t *testing.T) {
	// a moves into b and back out, then b moves into a. Persisting b's new
	// place alone would leave a and b durably inside each other, and both
	// unreachable after a crash.
	fs := newTestMemFS(24)
	require.NoError(t, fs.MkdirAll("a"))
	require.NoError(t, fs.MkdirAll("b"))
	require.NoError(t, fs.SyncDir("."))
	memDurableFile(t, fs, "a/f", "in a")
	memDurableFile(t, fs, "b/g", "in b")
	require.NoError(t, fs.Rename("a", "b/a"))
	require.NoError(t, fs.SyncDir("b"))
	require.NoError(t, fs.Rename("b/a", "a"))
	require.NoError(t, fs.Rename("b", "a/b"))
	require.NoError(t, fs.SyncDir("a"))
	fs.Crash()
	fs.checkInvariants()
	require.Equal(t, "in a", conformReadFile(t, fs, "a/f"))
	require.Equal(t, "in b", conformReadFile(t, fs, "a/b/g"))
}

func TestMemFSMkdirAllDurableAfterParentSync(t *testing.T) {
	fs := newTestMemFS(7)
	require.NoError(t, fs.MkdirAll("a/b"))
	fs.Crash()
	requireMissing(t, fs, "a")

	require.NoError(t, fs.MkdirAll("a/b"))
	require.NoError(t, fs.SyncDir("."))
	fs.Crash()
	info, err := fs.Stat("a")
	require.NoError(t, err)
	require.True(t, info.IsDir)
	requireMissing(t, fs, "a/b")

	require.NoError(t, fs.MkdirAll("a/b"))
	require.NoError(t, fs.SyncDir("a"))
	memDurableFile(t, fs, "a/b/f", "deep")
	fs.Crash()
	require.Equal(t, "deep", conformReadFile(t, fs, "a/b/f"))
}

func TestMemFSRemoveNeedsSyncDir(t *testing.T) {
	fs := newTestMemFS(8)
	require.NoError(t, fs.MkdirAll("p"))
	require.NoError(t, fs.SyncDir("."))
	memDurableFile(t, fs, "p/segment", "records")
	memDurableFile(t, fs, "lone", "file")
	require.NoError(t, fs.Remove("lone"))
	require.NoError(t, fs.RemoveAll("p"))
	fs.Crash()
	require.Equal(t, "file", conformReadFile(t, fs, "lone"))
	require.Equal(t, "records", conformReadFile(t, fs, "p/segment"), "RemoveAll is undone as a whole")

	require.NoError(t, fs.Remove("lone"))
	require.NoError(t, fs.RemoveAll("p"))
	require.NoError(t, fs.SyncDir("."))
	fs.Crash()
	requireMissing(t, fs, "lone")
	requireMissing(t, fs, "p")
	fs.checkInvariants()
}

func TestMemFSCreateOverExistingRevertsToDurable(t *testing.T) {
	fs := newTestMemFS(9)
	memDurableFile(t, fs, "f", "durable")
	file, err := fs.Create("f")
	require.NoError(t, err)
	conformWrite(t, file, "replacement")
	fs.CrashWith(keepNone)
	require.Equal(t, "durable", conformReadFile(t, fs, "f"))
}

// requireTornAppend checks that got is durable followed by a prefix of
// appended.
func requireTornAppend(t *testing.T, got, durable, appended string) int {
	t.Helper()
	require.GreaterOrEqual(t, len(got), len(durable))
	require.Equal(t, durable, got[:len(durable)], "durable content intact")
	kept := got[len(durable):]
	require.LessOrEqual(t, len(kept), len(appended))
	require.Equal(t, appended[:len(kept)], kept, "only a prefix of what was written survives")
	return len(kept)
}

func TestMemFSTornTailIsPrefixOfWritten(t *testing.T) {
	durable, appended := "DURABLE|", "write-one|write-two|write-three"
	partial := 0
	for seed := uint64(0); seed < 200; seed++ {
		fs := newTestMemFS(seed)
		fs.SetTornWriteProbability(1)
		memDurableFile(t, fs, "f", durable)
		file := memAppend(t, fs, "f", "write-one|")
		conformWrite(t, file, "write-two|")
		conformWrite(t, file, "write-three")
		fs.Crash()
		kept := requireTornAppend(t, conformReadFile(t, fs, "f"), durable, appended)
		require.Positive(t, kept, "probability 1 keeps at least one byte")
		if kept < len(appended) {
			partial++
		}
	}
	require.Greater(t, partial, 100, "most tears are partial")
}

func TestMemFSNoTearAtProbabilityZero(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		fs := newTestMemFS(seed)
		fs.SetTornWriteProbability(0)
		memDurableFile(t, fs, "f", "durable")
		memAppend(t, fs, "f", "lost")
		fs.Crash()
		require.Equal(t, "durable", conformReadFile(t, fs, "f"))
		require.Zero(t, fs.Stats().TornWrites)
	}
}

func TestMemFSTornOverwrite(t *testing.T) {
	setup := func() *MemFS {
		fs := newTestMemFS(10)
		memDurableFile(t, fs, "slots", "AAAABBBB")
		file, err := fs.Open("slots")
		require.NoError(t, err)
		_, err = file.WriteAt([]byte("XXXX"), 0)
		require.NoError(t, err)
		_, err = file.WriteAt([]byte("YYYY"), 4) // the most recent overwrite
		require.NoError(t, err)
		conformWrite(t, file, "appended")
		return fs
	}
	for _, test := range []struct {
		kept int64
		want string
	}{{0, "AAAABBBB"}, {2, "AAAAYYBB"}, {4, "AAAAYYYY"}} {
		kept, want := test.kept, test.want
		fs := setup()
		var offered []int64
		fs.CrashWith(func(_ string, writeBytes int64) int64 {
			offered = append(offered, writeBytes)
			return kept
		})
		require.Equal(t, []int64{4}, offered, "the last overwrite is the write that may tear")
		require.Equal(t, want, conformReadFile(t, fs, "slots"), "kept %d", kept)
	}
}

func TestMemFSOverlappingOverwritesRevert(t *testing.T) {
	fs := newTestMemFS(23)
	memDurableFile(t, fs, "f", "ABCDEFGH")
	file, err := fs.Open("f")
	require.NoError(t, err)
	for _, write := range []struct {
		data   string
		offset int64
	}{{"xx", 0}, {"yyyy", 1}, {"z", 6}, {"wwwwww", 2}} {
		_, err = file.WriteAt([]byte(write.data), write.offset)
		require.NoError(t, err)
	}
	require.Equal(t, "xywwwwww", conformReadAll(t, file))
	fs.CrashWith(keepNone)
	require.Equal(t, "ABCDEFGH", conformReadFile(t, fs, "f"), "every overwritten durable byte comes back")
}

func TestMemFSTruncateRevertsAtCrash(t *testing.T) {
	fs := newTestMemFS(11)
	memDurableFile(t, fs, "log", "0123456789")
	file, err := fs.Open("log")
	require.NoError(t, err)
	require.NoError(t, file.Truncate(3))
	fs.CrashWith(keepAll)
	require.Equal(t, "0123456789", conformReadFile(t, fs, "log"), "an unsynced truncation is undone")

	file, err = fs.Open("log")
	require.NoError(t, err)
	require.NoError(t, file.Truncate(3))
	require.NoError(t, file.Sync())
	conformWrite(t, file, "abc")
	fs.CrashWith(keepExactly(2))
	require.Equal(t, "012ab", conformReadFile(t, fs, "log"))
}

func TestMemFSHandlesDeadAfterCrash(t *testing.T) {
	fs := newTestMemFS(12)
	memDurableFile(t, fs, "f", "abc")
	file, err := fs.Open("f")
	require.NoError(t, err)
	fs.Crash()
	_, err = file.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, ErrClosed, "ReadAt")
	_, err = file.Write([]byte("x"))
	require.ErrorIs(t, err, ErrClosed, "Write")
	_, err = file.WriteAt([]byte("x"), 0)
	require.ErrorIs(t, err, ErrClosed, "WriteAt")
	require.ErrorIs(t, file.Truncate(0), ErrClosed, "Truncate")
	require.ErrorIs(t, file.Sync(), ErrClosed, "Sync")
	_, err = file.Size()
	require.ErrorIs(t, err, ErrClosed, "Size")
	require.ErrorIs(t, file.Close(), ErrClosed, "Close")
	require.Equal(t, "abc", conformReadFile(t, fs, "f"), "a fresh handle works")
}

func TestMemFSCrashCloneLeavesOriginalIntact(t *testing.T) {
	fs := newTestMemFS(13)
	fs.SetTornWriteProbability(0)
	memDurableFile(t, fs, "f", "durable")
	file := memAppend(t, fs, "f", "+volatile")
	conformWriteFile(t, fs, "unnamed", "x") // name never synced
	before := fs.Stats()

	clone := fs.CrashClone()
	require.Equal(t, "durable", conformReadFile(t, clone, "f"))
	requireMissing(t, clone, "unnamed")
	require.Equal(t, "durable+volatile", conformReadFile(t, fs, "f"))
	require.Equal(t, "durable+volatile", conformReadAll(t, file), "open files of the original still work")
	require.Equal(t, "x", conformReadFile(t, fs, "unnamed"))
	require.Equal(t, before, fs.Stats())
	require.Equal(t, before.Crashes+1, clone.Stats().Crashes)

	conformWrite(t, file, "+more") // the two file systems share nothing
	require.Equal(t, "durable", conformReadFile(t, clone, "f"))
	memAppend(t, clone, "f", "+clone")
	require.Equal(t, "durable+volatile+more", conformReadFile(t, fs, "f"))
	fs.checkInvariants()
	clone.checkInvariants()
}

func TestMemFSDurableCloneDirHoldsOnlyThatDirectory(t *testing.T) {
	fs := newTestMemFS(14)
	require.NoError(t, fs.MkdirAll("t/p"))
	require.NoError(t, fs.MkdirAll("t/q"))
	require.NoError(t, fs.SyncDir("."))
	require.NoError(t, fs.SyncDir("t"))
	memDurableFile(t, fs, "t/p/f", "durable")
	memAppend(t, fs, "t/p/f", "+volatile")
	memDurableFile(t, fs, "t/q/g", "0123456789")
	fs.SetCapacity(30)

	clone := fs.DurableCloneDir("t/p")
	require.Equal(t, "durable", conformReadFile(t, clone, "t/p/f"))
	requireMissing(t, clone, "t/q")
	file := memAppend(t, clone, "t/p/f", "1234567890123") // 7 + 13 here and 10 in t/q: exactly full
	_, err := file.Write([]byte("4"))
	require.ErrorIs(t, err, ErrNoSpace, "capacity counts the bytes left out")
	require.Equal(t, "durable1234567890123", conformReadFile(t, clone, "t/p/f"))
	require.Equal(t, "durable+volatile", conformReadFile(t, fs, "t/p/f"), "the original is unchanged")
	clone.checkInvariants()

	whole := fs.DurableClone()
	_, err = whole.Stat("t/q/g")
	require.NoError(t, err)
	require.Equal(t, "durable", conformReadFile(t, fs.DurableCloneDir("t/missing"), "t/p/f"), "no such directory: the whole copy")
}

func TestMemFSFailNextWrite(t *testing.T) {
	fs := newTestMemFS(14)
	file, err := fs.Create("f")
	require.NoError(t, err)
	fs.FailNext(FaultWrite, errInjectedIO, 3)
	_, err = file.Write([]byte("a"))
	require.ErrorIs(t, err, ErrIO)
	_, err = file.WriteAt([]byte("b"), 0)
	require.ErrorIs(t, err, ErrIO)
	require.ErrorIs(t, file.Truncate(5), ErrIO)
	require.Equal(t, "", conformReadAll(t, file), "failed writes write nothing")
	conformWrite(t, file, "ok")
	require.Equal(t, "ok", conformReadAll(t, file))
	require.Equal(t, int64(3), fs.Stats().InjectedFaults)
}

func TestMemFSFailNextSync(t *testing.T) {
	fs := newTestMemFS(15)
	memDurableFile(t, fs, "f", "durable")
	file := memAppend(t, fs, "f", "+more")
	fs.FailNext(FaultSync, errInjectedIO, 1)
	require.ErrorIs(t, file.Sync(), ErrIO)
	fs.CrashWith(keepNone)
	require.Equal(t, "durable", conformReadFile(t, fs, "f"), "a failed sync makes nothing durable")
}

func TestMemFSFailNextSyncDir(t *testing.T) {
	fs := newTestMemFS(16)
	conformWriteFile(t, fs, "f", "x")
	fs.FailNext(FaultSyncDir, errInjectedIO, 1)
	require.ErrorIs(t, fs.SyncDir("."), ErrIO)
	fs.Crash()
	requireMissing(t, fs, "f")
}

func TestMemFSFailNextRename(t *testing.T) {
	fs := newTestMemFS(17)
	memDurableFile(t, fs, "a", "A")
	memDurableFile(t, fs, "b", "B")
	fs.FailNext(FaultRename, errInjectedIO, 2)
	require.ErrorIs(t, fs.Rename("a", "b"), ErrIO)
	require.ErrorIs(t, fs.Rename("a", "b"), ErrIO)
	require.Equal(t, "A", conformReadFile(t, fs, "a"), "a failed rename changes nothing")
	require.Equal(t, "B", conformReadFile(t, fs, "b"))
	require.NoError(t, fs.Rename("a", "b"), "the third rename succeeds")
	require.Equal(t, "A", conformReadFile(t, fs, "b"))
}

func TestMemFSFailNextCreate(t *testing.T) {
	fs := newTestMemFS(18)
	memDurableFile(t, fs, "existing", "keep me")
	fs.FailNext(FaultCreate, errInjectedSpace, 2)
	_, err := fs.Create("new")
	require.ErrorIs(t, err, ErrNoSpace)
	_, err = fs.Create("existing")
	require.ErrorIs(t, err, ErrNoSpace)
	requireMissing(t, fs, "new")
	require.Equal(t, "keep me", conformReadFile(t, fs, "existing"), "a failed create does not truncate")
	_, err = fs.Create("new")
	require.NoError(t, err)
}

// TestMemFSFailNextMatchingAimsAtOnePath: a rule limited to some paths
// fails the next operations on those only; the others proceed and do not
// use it up; a later FailNext replaces it, matcher and all.
func TestMemFSFailNextMatchingAimsAtOnePath(t *testing.T) {
	fs := newTestMemFS(20)
	fs.FailNextMatching(FaultCreate, errInjectedSpace, 1, func(name string) bool { return strings.HasSuffix(name, ".log") })
	_, err := fs.Create("cursor.tmp")
	require.NoError(t, err, "a path the rule does not aim at")
	_, err = fs.Create("00000000000000000000.log")
	require.ErrorIs(t, err, ErrNoSpace)
	_, err = fs.Create("00000000000000000000.log")
	require.NoError(t, err, "the rule failed one")
	require.Equal(t, int64(1), fs.Stats().InjectedFaults)

	fs.FailNextMatching(FaultRename, errInjectedIO, 1, func(name string) bool { return name == "b" })
	memDurableFile(t, fs, "a", "A")
	memDurableFile(t, fs, "b", "B")
	fs.FailNext(FaultRename, errInjectedIO, 1)
	require.ErrorIs(t, fs.Rename("a", "c"), ErrIO, "FailNext replaced the rule and its matcher")
}

func TestMemFSFailureProbability(t *testing.T) {
	fs := newTestMemFS(19)
	file, err := fs.Create("f")
	require.NoError(t, err)
	fs.SetFailureProbability(FaultWrite, errInjectedIO, 0.5)
	failures := 0
	for range 1000 {
		if _, err := file.Write([]byte("x")); err != nil {
			require.ErrorIs(t, err, ErrIO)
			failures++
		}
	}
	require.InDelta(t, 500, failures, 100, "about half fail")
	size, err := file.Size()
	require.NoError(t, err)
	require.Equal(t, int64(1000-failures), size, "only successful writes land")
	require.Equal(t, int64(failures), fs.Stats().InjectedFaults)

	fs.SetFailureProbability(FaultSync, errInjectedIO, 1)
	require.ErrorIs(t, file.Sync(), ErrIO)
	fs.ClearFaults()
	require.NoError(t, file.Sync())
	for range 100 {
		_, err := file.Write([]byte("x"))
		require.NoError(t, err, "no faults after ClearFaults")
	}
}

func TestMemFSCapacity(t *testing.T) {
	fs := newTestMemFS(20)
	fs.SetCapacity(10)
	file, err := fs.Create("a")
	require.NoError(t, err)
	conformWrite(t, file, "12345678")
	_, err = file.Write([]byte("9ab"))
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, file.Truncate(11), ErrNoSpace)
	_, err = file.WriteAt([]byte("xyz"), 8)
	require.ErrorIs(t, err, ErrNoSpace)
	require.Equal(t, "12345678", conformReadAll(t, file), "a refused write changes nothing")
	_, err = file.WriteAt([]byte("xy"), 8) // exactly full
	require.NoError(t, err)

	other, err := fs.Create("b")
	require.NoError(t, err)
	_, err = other.Write([]byte("z"))
	require.ErrorIs(t, err, ErrNoSpace, "capacity is shared by all files")
	require.NoError(t, fs.Remove("a"))
	conformWrite(t, other, "0123456789")
	require.Equal(t, int64(4), fs.Stats().NoSpaceErrors, "NoSpaceErrors counts refusals")
	fs.checkInvariants()

	fs.SetCapacity(0)
	conformWrite(t, other, "unlimited again")
}

func TestMemFSCapacityFreedByRenameAndCrash(t *testing.T) {
	fs := newTestMemFS(21)
	fs.SetCapacity(8)
	memDurableFile(t, fs, "a", "aaaa")
	memDurableFile(t, fs, "b", "bbbb")
	require.NoError(t, fs.Rename("a", "b"), "replacing b frees its bytes")
	require.NoError(t, fs.SyncDir("."))
	file := memAppend(t, fs, "b", "1234")
	fs.checkInvariants()
	fs.CrashWith(keepNone)
	fs.checkInvariants()
	file, err := fs.Open("b")
	require.NoError(t, err)
	conformWrite(t, file, "1234")
	_, err = file.Write([]byte("5"))
	require.ErrorIs(t, err, ErrNoSpace)
}

// memWorkload runs a random mix of operations, crashes included, on a
// MemFS seeded with seed, and returns a fingerprint of everything it saw.
func memWorkload(t *testing.T, seed uint64) string {
	choices := rand.New(rand.NewPCG(seed, 1))
	fs := newTestMemFS(seed)
	fs.SetFailureProbability(FaultWrite, errInjectedIO, 0.05)
	require.NoError(t, fs.MkdirAll("d"))
	require.NoError(t, fs.SyncDir("."))
	trace := sha256.New()
	for step := range 400 {
		name := fmt.Sprintf("d/f%d", choices.IntN(4))
		err := memWorkloadStep(fs, choices, name, step)
		fmt.Fprintf(trace, "%d %s %v\n", step, name, err)
	}
	fs.Crash()
	names, err := fs.List("d")
	require.NoError(t, err)
	for _, name := range names {
		fmt.Fprintf(trace, "%s=%q\n", name, conformReadFile(t, fs, "d/"+name))
	}
	fmt.Fprintf(trace, "%+v", fs.Stats())
	return fmt.Sprintf("%x", trace.Sum(nil))
}

// memWorkloadStep does one random operation on name.
func memWorkloadStep(fs *MemFS, choices *rand.Rand, name string, step int) error {
	switch choices.IntN(6) {
	case 0:
		_, err := fs.Create(name)
		return err
	case 1:
		file, err := fs.Open(name)
		if err != nil {
			return err
		}
		_, err = file.Write(bytes.Repeat([]byte{byte(step)}, 1+choices.IntN(50)))
		return err
	case 2:
		file, err := fs.Open(name)
		if err != nil {
			return err
		}
		return file.Sync()
	case 3:
		return fs.SyncDir("d")
	case 4:
		return fs.Rename(name, fmt.Sprintf("d/f%d", choices.IntN(4)))
	}
	fs.Crash()
	return nil
}

func TestMemFSDeterminism(t *testing.T) {
	first := memWorkload(t, 42)
	require.Equal(t, first, memWorkload(t, 42), "same seed, same calls, same result")
	require.NotEqual(t, first, memWorkload(t, 43), "another seed explores something else")
}

func TestMemFSStats(t *testing.T) {
	fs := newTestMemFS(22)
	file, err := fs.Create("f")
	require.NoError(t, err)
	conformWrite(t, file, "abc")
	_, err = file.WriteAt([]byte("z"), 0)
	require.NoError(t, err)
	require.NoError(t, file.Truncate(2))
	require.NoError(t, file.Sync())
	require.NoError(t, fs.SyncDir("."))
	require.NoError(t, fs.Rename("f", "g"))
	conformWrite(t, file, "tail")
	fs.CrashWith(keepExactly(2))
	require.Equal(t, "zbta", conformReadFile(t, fs, "f"), "the rename is undone, the tail torn")
	require.Equal(t, MemFSStats{
		Writes: 3, WrittenBytes: 8, Truncates: 1, Syncs: 1, DirSyncs: 1,
		Renames: 1, Crashes: 1, UnsyncedFiles: 1, TornWrites: 1,
	}, fs.Stats())
}

// memFileModel is the naive model of one file under the crash model:
// whole byte slices, no sharing, no undo records.
type memFileModel struct {
	durable []byte
	current []byte
	// appendsOnly: since the last sync, no byte below len(durable) changed.
	appendsOnly bool
	// tearableOffset and tearable are the most recent write that changed
	// durable bytes, clipped to len(durable) and to later truncations.
	tearableOffset int64
	tearable       []byte
}

func (model *memFileModel) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	if end := off + int64(len(p)); end > int64(len(model.current)) {
		model.current = append(model.current, make([]byte, end-int64(len(model.current)))...)
	}
	copy(model.current[off:], p)
	if off < int64(len(model.durable)) {
		model.appendsOnly = false
		model.tearableOffset = off
		model.tearable = bytes.Clone(p[:min(int64(len(p)), int64(len(model.durable))-off)])
	}
}

func (model *memFileModel) truncate(size int64) {
	if size < int64(len(model.current)) {
		model.current = model.current[:size]
	} else {
		model.current = append(model.current, make([]byte, size-int64(len(model.current)))...)
	}
	if size < int64(len(model.durable)) {
		model.appendsOnly = false
	}
	if cut := size - model.tearableOffset; cut < int64(len(model.tearable)) {
		model.tearable = model.tearable[:max(0, cut)]
	}
}

func (model *memFileModel) sync() {
	model.durable = bytes.Clone(model.current)
	model.appendsOnly, model.tearable = true, nil
}

// tornWriteBytes returns the size of the write the crash may tear.
func (model *memFileModel) tornWriteBytes() int64 {
	if model.appendsOnly {
		return int64(len(model.current) - len(model.durable))
	}
	return int64(len(model.tearable))
}

// expectedAfterCrash returns the content a crash keeping kept bytes of the
// tearable write must leave.
func (model *memFileModel) expectedAfterCrash(kept int64) []byte {
	if model.appendsOnly {
		return bytes.Clone(model.current[:int64(len(model.durable))+kept])
	}
	expected := bytes.Clone(model.durable)
	if kept > 0 {
		copy(expected[model.tearableOffset:], model.tearable[:kept])
	}
	return expected
}

func TestMemFSRapidCrashModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := NewMemFS(rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0)))
		fs.fileChunkBytes = rapid.SampledFrom([]int64{1, 3, 16, memFileChunkBytes}).Draw(t, "chunkBytes")
		file, err := fs.Create("f")
		require.NoError(t, err)
		require.NoError(t, fs.SyncDir("."))
		model := &memFileModel{appendsOnly: true}
		t.Repeat(map[string]func(*rapid.T){
			"write": func(t *rapid.T) {
				p := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "bytes")
				_, err := file.Write(p)
				require.NoError(t, err)
				model.writeAt(p, int64(len(model.current)))
			},
			"writeAt": func(t *rapid.T) {
				p := rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "bytes")
				off := rapid.Int64Range(0, int64(len(model.current))+4).Draw(t, "offset")
				_, err := file.WriteAt(p, off)
				require.NoError(t, err)
				model.writeAt(p, off)
			},
			"truncate": func(t *rapid.T) {
				size := rapid.Int64Range(0, int64(len(model.current))+8).Draw(t, "size")
				require.NoError(t, file.Truncate(size))
				model.truncate(size)
			},
			"sync": func(t *rapid.T) {
				require.NoError(t, file.Sync())
				model.sync()
			},
			"crash": func(t *rapid.T) {
				file = memRapidCrash(t, fs, model)
			},
			"": func(t *rapid.T) {
				require.Equal(t, string(model.current), conformReadAll(t, file))
				fs.checkInvariants()
			},
		})
	})
}

// memRapidCrash crashes fs with the tear drawn by rapid, checks the file
// against the model, makes the model adopt the result and reopens the file.
func memRapidCrash(t *rapid.T, fs *MemFS, model *memFileModel) File {
	offered := int64(-1)
	fs.CrashWith(func(name string, writeBytes int64) int64 {
		require.Equal(t, "f", name)
		require.Equal(t, int64(-1), offered, "one file, one tearable write")
		offered = rapid.Int64Range(0, writeBytes).Draw(t, "kept")
		require.Equal(t, model.tornWriteBytes(), writeBytes, "the tearable write")
		return offered
	})
	if offered < 0 {
		require.Zero(t, model.tornWriteBytes(), "a tearable write was not offered")
		offered = 0
	}
	expected := model.expectedAfterCrash(offered)
	file, err := fs.Open("f")
	require.NoError(t, err)
	require.Equal(t, string(expected), conformReadAll(t, file), "durable content plus a prefix of one write")
	model.current = expected
	model.sync()
	return file
}

func TestMemFSRapidNamespace(t *testing.T) {
	names := []string{"a", "b", "d/a", "d/b", "e/a", "d/e/a", "e/d/b"}
	rapid.Check(t, func(t *rapid.T) {
		fs := NewMemFS(rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0)))
		name := rapid.SampledFrom(names)
		dir := rapid.SampledFrom([]string{".", "d", "e", "d/e", "e/d"})
		t.Repeat(map[string]func(*rapid.T){
			"create": func(t *rapid.T) {
				if file, err := fs.Create(name.Draw(t, "name")); err == nil {
					_, err = file.Write([]byte("content"))
					require.NoError(t, err)
				}
			},
			"mkdir":     func(t *rapid.T) { require.NoError(t, fs.MkdirAll(dir.Draw(t, "dir"))) },
			"rename":    func(t *rapid.T) { _ = fs.Rename(name.Draw(t, "from"), name.Draw(t, "to")) },
			"renameDir": func(t *rapid.T) { _ = fs.Rename(dir.Draw(t, "from"), dir.Draw(t, "to")) },
			"remove":    func(t *rapid.T) { _ = fs.Remove(name.Draw(t, "name")) },
			"removeAll": func(t *rapid.T) { _ = fs.RemoveAll(dir.Draw(t, "dir")) },
			"syncDir":   func(t *rapid.T) { _ = fs.SyncDir(dir.Draw(t, "dir")) },
			"crash":     func(t *rapid.T) { fs.Crash() },
			"": func(t *rapid.T) {
				fs.checkInvariants()
				memRequireListable(t, fs)
			},
		})
	})
}

// memRequireListable checks that every listed entry can be stated and
// files opened: the listing and the lookups agree.
func memRequireListable(t *rapid.T, fs *MemFS) {
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := fs.List(dir)
		require.NoError(t, err)
		for _, entry := range entries {
			info, err := fs.Stat(path.Join(dir, entry))
			require.NoError(t, err)
			if info.IsDir {
				walk(path.Join(dir, entry))
			}
		}
	}
	walk(".")
}

func BenchmarkMemFSAppendSync(b *testing.B) {
	const (
		writeBytes     = 4096
		writesPerSync  = 16
		fileBytesLimit = 64 << 20
	)
	fs := newTestMemFS(1)
	payload := bytes.Repeat([]byte{0xa5}, writeBytes)
	b.SetBytes(writeBytes)
	var file File
	var fileBytes int
	for i := 0; b.Loop(); i++ {
		if file == nil || fileBytes >= fileBytesLimit {
			// One live segment at a time, as retention would keep it.
			_ = fs.RemoveAll("segment")
			file, _ = fs.Create("segment")
			fileBytes = 0
		}
		if _, err := file.Write(payload); err != nil {
			b.Fatal(err)
		}
		fileBytes += writeBytes
		if i%writesPerSync == writesPerSync-1 {
			if err := file.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkMemFSCrash(b *testing.B) {
	fs := newTestMemFS(2)
	fs.SetTornWriteProbability(1)
	payload := bytes.Repeat([]byte{0x5a}, 1<<20)
	for i := range 64 {
		memBenchWriteFile(b, fs, fmt.Sprintf("segment-%d", i), payload)
	}
	if err := fs.SyncDir("."); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		file, err := fs.Open("segment-0")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := file.Write(payload[:4096]); err != nil {
			b.Fatal(err)
		}
		fs.Crash()
	}
}

func memBenchWriteFile(b *testing.B, fs FS, name string, content []byte) {
	file, err := fs.Create(name)
	if err == nil {
		_, err = file.Write(content)
	}
	if err == nil {
		err = file.Sync()
	}
	if err != nil {
		b.Fatal(err)
	}
}

// FlipDurableByte corrupts a synced byte as the medium would: the flip is
// in the current content and survives a crash, the bytes around it and
// the unsynced tail are untouched, and recovery of a log reports the
// frame it hit below the persisted HWM as corrupt.
func TestMemFSFlipDurableByteSurvivesACrash(t *testing.T) {
	fs := newLogMemFS(7)
	log, _ := openTestLog(t, fs, "p", smallLogConfig())
	appendTestRecords(t, log, 0, 40)
	require.NoError(t, log.Sync())
	persisted, ok, err := PersistedHWM(fs, "p")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(40), persisted)
	name, position := framePosition(t, log, 11)
	require.NoError(t, log.Close())
	before, err := ReadFile(fs, name)
	require.NoError(t, err)

	require.NoError(t, fs.FlipDurableByte(name, position+frameHeaderBytes+2))
	require.Error(t, fs.FlipDurableByte(name, int64(len(before))), "past the durable content")
	fs.Crash()
	after, err := ReadFile(fs, name)
	require.NoError(t, err)
	require.Len(t, after, len(before))
	for i := range before {
		if int64(i) == position+frameHeaderBytes+2 {
			require.Equal(t, ^before[i], after[i])
			continue
		}
		require.Equal(t, before[i], after[i], "byte %d", i)
	}
	log, recovery := openTestLog(t, fs, "p", smallLogConfig())
	require.Equal(t, []uint64{11}, recovery.CorruptOffsets)
	_, err = log.Read(11)
	require.ErrorIs(t, err, ErrCorrupt)
	requireTestRecords(t, log, 12, 40)
	require.NoError(t, log.Close())
}

// A flip of a synced byte that an unsynced overwrite changed since is
// durable too: a crash brings back the synced content with the flip. The
// flip hits only that durable copy: the current content keeps the
// overwrite, and a sync makes the overwrite durable without the flip.
func TestMemFSFlipDurableByteUnderAnUnsyncedOverwrite(t *testing.T) {
	fs := newLogMemFS(8)
	file, err := fs.Create("f")
	require.NoError(t, err)
	_, err = file.Write([]byte{1, 2, 3, 4})
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, fs.SyncDir("."))
	_, err = file.WriteAt([]byte{9, 9}, 1)
	require.NoError(t, err)
	require.NoError(t, fs.FlipDurableByte("f", 2))
	data, err := ReadFile(fs, "f")
	require.NoError(t, err)
	require.Equal(t, []byte{1, 9, 9, 4}, data, "the unsynced overwrite is the current content, untouched")
	require.NoError(t, file.Close())
	fs.Crash()
	data, err = ReadFile(fs, "f")
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2, ^byte(3), 4}, data)

	file, err = fs.Open("f")
	require.NoError(t, err)
	_, err = file.WriteAt([]byte{9, 9}, 1)
	require.NoError(t, err)
	require.NoError(t, fs.FlipDurableByte("f", 2))
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
	fs.Crash()
	data, err = ReadFile(fs, "f")
	require.NoError(t, err)
	require.Equal(t, []byte{1, 9, 9, 4}, data, "a sync after the flip makes the overwrite durable, not the flip")
}
