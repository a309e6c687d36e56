package storage

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The FS conformance suite: one set of tests run against every FS
// implementation, so the simulator's disk and the production disk keep one
// contract (docs/style.md#tests). Crash behaviour, which only MemFS can show,
// is tested in memfs_test.go.

func TestFSConformanceOS(t *testing.T) {
	runFSConformance(t, func(t *testing.T) FS {
		fs, err := NewOSFS(t.TempDir())
		require.NoError(t, err)
		return fs
	})
}

// TestFSConformanceOSGroupSync runs the suite with group sync enabled, so
// SyncGroup goes through syncfs(2).
func TestFSConformanceOSGroupSync(t *testing.T) {
	runFSConformance(t, func(t *testing.T) FS {
		fs, err := NewOSFS(t.TempDir())
		require.NoError(t, err)
		if err := fs.EnableGroupSync(); err != nil {
			t.Skipf("group sync unavailable here: %v", err)
		}
		t.Cleanup(func() { require.NoError(t, fs.Close()) })
		return fs
	})
}

func TestFSConformanceMem(t *testing.T) {
	runFSConformance(t, func(t *testing.T) FS {
		return NewMemFS(rand.New(rand.NewPCG(1, 2)))
	})
	t.Run("TinyChunks", func(t *testing.T) {
		// Content stored in 3-byte chunks: every test crosses chunk boundaries.
		runFSConformance(t, func(t *testing.T) FS {
			fs := NewMemFS(rand.New(rand.NewPCG(1, 2)))
			fs.fileChunkBytes = 3
			return fs
		})
	})
}

// runFSConformance runs every conformance test on a fresh FS from newFS.
func runFSConformance(t *testing.T, newFS func(t *testing.T) FS) {
	tests := []struct {
		name string
		run  func(t *testing.T, fs FS)
	}{
		{"CreateWriteReadBack", conformCreateWriteReadBack},
		{"OpenAppendsAtEnd", conformOpenAppendsAtEnd},
		{"WriteAtOverwritesAndExtends", conformWriteAtOverwritesAndExtends},
		{"WriteAtOverZeroTail", conformWriteAtOverZeroTail},
		{"ReadAtPastEnd", conformReadAtPastEnd},
		{"Truncate", conformTruncate},
		{"CreateTruncatesExisting", conformCreateTruncatesExisting},
		{"Sync", conformSync},
		{"SyncGroup", conformSyncGroup},
		{"ListSorted", conformListSorted},
		{"Stat", conformStat},
		{"RenameReplaces", conformRenameReplaces},
		{"RenameDirectory", conformRenameDirectory},
		{"Remove", conformRemove},
		{"RemoveAll", conformRemoveAll},
		{"MkdirAll", conformMkdirAll},
		{"MissingNames", conformMissingNames},
		{"BadPaths", conformBadPaths},
		{"PathsAreCleaned", conformPathsAreCleaned},
		{"ClosedFile", conformClosedFile},
		{"HandleOutlivesRemove", conformHandleOutlivesRemove},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) { test.run(t, newFS(t)) })
	}
}

// ---- helpers ----

// conformTB is what the helpers need of *testing.T and *rapid.T.
type conformTB interface {
	require.TestingT
	Helper()
}

// conformWriteFile creates name with content, syncs it, and closes it.
func conformWriteFile(t conformTB, fs FS, name, content string) {
	t.Helper()
	file, err := fs.Create(name)
	require.NoError(t, err)
	_, err = file.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
}

// conformReadFile returns the whole content of name.
func conformReadFile(t conformTB, fs FS, name string) string {
	t.Helper()
	file, err := fs.Open(name)
	require.NoError(t, err)
	defer file.Close()
	return conformReadAll(t, file)
}

// conformReadAll returns the whole content of an open file.
func conformReadAll(t conformTB, file File) string {
	t.Helper()
	size, err := file.Size()
	require.NoError(t, err)
	buffer := make([]byte, size)
	n, err := file.ReadAt(buffer, 0)
	if err == io.EOF && n == len(buffer) {
		err = nil
	}
	require.NoError(t, err)
	return string(buffer[:n])
}

func conformWrite(t conformTB, file File, content string) {
	t.Helper()
	n, err := file.Write([]byte(content))
	require.NoError(t, err)
	require.Equal(t, len(content), n)
}

// ---- tests ----

func conformCreateWriteReadBack(t *testing.T, fs FS) {
	file, err := fs.Create("a")
	require.NoError(t, err)
	conformWrite(t, file, "hello")
	conformWrite(t, file, ", world")
	size, err := file.Size()
	require.NoError(t, err)
	require.Equal(t, int64(12), size)
	require.Equal(t, "hello, world", conformReadAll(t, file))
	part := make([]byte, 5)
	n, err := file.ReadAt(part, 7)
	require.NoError(t, err)
	require.Equal(t, "world", string(part[:n]))
	require.NoError(t, file.Close())
	require.Equal(t, "hello, world", conformReadFile(t, fs, "a"))
}

func conformOpenAppendsAtEnd(t *testing.T, fs FS) {
	conformWriteFile(t, fs, "log", "first;")
	file, err := fs.Open("log")
	require.NoError(t, err)
	conformWrite(t, file, "second;")
	conformWrite(t, file, "third")
	require.NoError(t, file.Close())
	require.Equal(t, "first;second;third", conformReadFile(t, fs, "log"))
}

// The log's zero tail: zeros written and synced past the content, then
// positioned writes over them, through a handle opened later, keep the
// size and land where they are written.
func conformWriteAtOverZeroTail(t *testing.T, fs FS) {
	file, err := fs.Create("segment")
	require.NoError(t, err)
	conformWrite(t, file, "frame1")
	_, err = file.WriteAt(make([]byte, 10), 6)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
	file, err = fs.Open("segment")
	require.NoError(t, err)
	defer file.Close()
	size, err := file.Size()
	require.NoError(t, err)
	require.Equal(t, int64(16), size)
	_, err = file.WriteAt([]byte("frame2"), 6)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	size, err = file.Size()
	require.NoError(t, err)
	require.Equal(t, int64(16), size, "a write over the zeros does not grow the file")
	require.Equal(t, "frame1frame2\x00\x00\x00\x00", conformReadAll(t, file))
	require.Equal(t, "frame1frame2\x00\x00\x00\x00", conformReadFile(t, fs, "segment"))
}

func conformWriteAtOverwritesAndExtends(t *testing.T, fs FS) {
	file, err := fs.Create("slots")
	require.NoError(t, err)
	defer file.Close()
	conformWrite(t, file, "aaaabbbb")
	_, err = file.WriteAt([]byte("XY"), 2)
	require.NoError(t, err)
	require.Equal(t, "aaXYbbbb", conformReadAll(t, file))
	_, err = file.WriteAt([]byte("cc"), 7) // straddles the end
	require.NoError(t, err)
	require.Equal(t, "aaXYbbbcc", conformReadAll(t, file))
	_, err = file.WriteAt([]byte("z"), 11) // past the end: zero-filled gap
	require.NoError(t, err)
	require.Equal(t, "aaXYbbbcc\x00\x00z", conformReadAll(t, file))
	conformWrite(t, file, "!") // Write still appends at the new end
	require.Equal(t, "aaXYbbbcc\x00\x00z!", conformReadAll(t, file))
	n, err := file.WriteAt(nil, 20)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, "aaXYbbbcc\x00\x00z!", conformReadAll(t, file), "an empty write does not extend")
	_, err = file.WriteAt([]byte("q"), -1)
	require.Error(t, err, "negative offset")
}

func conformReadAtPastEnd(t *testing.T, fs FS) {
	file, err := fs.Create("short")
	require.NoError(t, err)
	defer file.Close()
	conformWrite(t, file, "abc")
	buffer := make([]byte, 5)
	n, err := file.ReadAt(buffer, 1)
	require.Equal(t, 2, n)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, "bc", string(buffer[:n]))
	n, err = file.ReadAt(buffer, 3)
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
	n, err = file.ReadAt(buffer, 10)
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
	_, err = file.ReadAt(buffer, -1)
	require.Error(t, err)
	require.NotErrorIs(t, err, io.EOF)
}

func conformTruncate(t *testing.T, fs FS) {
	file, err := fs.Create("t")
	require.NoError(t, err)
	defer file.Close()
	conformWrite(t, file, "0123456789")
	require.NoError(t, file.Truncate(4))
	size, err := file.Size()
	require.NoError(t, err)
	require.Equal(t, int64(4), size)
	conformWrite(t, file, "ab") // appends at the truncated end
	require.Equal(t, "0123ab", conformReadAll(t, file))
	require.NoError(t, file.Truncate(8)) // extends with zeros
	require.Equal(t, "0123ab\x00\x00", conformReadAll(t, file))
	require.NoError(t, file.Truncate(0))
	require.Equal(t, "", conformReadAll(t, file))
	info, err := fs.Stat("t")
	require.NoError(t, err)
	require.Equal(t, int64(0), info.Size)
	require.Error(t, file.Truncate(-1))
}

func conformCreateTruncatesExisting(t *testing.T, fs FS) {
	conformWriteFile(t, fs, "c", "old content")
	file, err := fs.Create("c")
	require.NoError(t, err)
	size, err := file.Size()
	require.NoError(t, err)
	require.Equal(t, int64(0), size)
	conformWrite(t, file, "new")
	require.NoError(t, file.Close())
	require.Equal(t, "new", conformReadFile(t, fs, "c"))
}

func conformSync(t *testing.T, fs FS) {
	require.NoError(t, fs.MkdirAll("d"))
	file, err := fs.Create("d/f")
	require.NoError(t, err)
	conformWrite(t, file, "data")
	require.NoError(t, file.Sync())
	require.NoError(t, file.Sync(), "a second Sync with nothing new")
	require.Equal(t, "data", conformReadAll(t, file))
	require.NoError(t, file.Close())
	require.NoError(t, fs.SyncDir("d"))
	require.NoError(t, fs.SyncDir("."))
	require.ErrorIs(t, fs.SyncDir("missing"), ErrNotExist)
}

func conformSyncGroup(t *testing.T, fs FS) {
	group, ok := fs.(GroupSyncer)
	require.True(t, ok, "every FS implements GroupSyncer")
	require.NoError(t, group.SyncGroup(nil, nil), "an empty group")
	var files []File
	for _, dir := range []string{"a", "b"} {
		require.NoError(t, fs.MkdirAll(dir))
		file, err := fs.Create(dir + "/f")
		require.NoError(t, err)
		conformWrite(t, file, "data of "+dir)
		files = append(files, file)
	}
	require.NoError(t, group.SyncGroup(files, []string{"a", "b", "."}))
	for i, dir := range []string{"a", "b"} {
		require.Equal(t, "data of "+dir, conformReadAll(t, files[i]))
	}
	require.ErrorIs(t, group.SyncGroup(files[:1], []string{"missing"}), ErrNotExist)
	require.NoError(t, files[1].Close())
	require.ErrorIs(t, group.SyncGroup(files, nil), ErrClosed, "a closed file fails the group")
	require.NoError(t, files[0].Close())
}

func conformListSorted(t *testing.T, fs FS) {
	for _, name := range []string{"m", "b", "z", "a10", "a2"} {
		conformWriteFile(t, fs, name, name)
	}
	require.NoError(t, fs.MkdirAll("k/inner"))
	names, err := fs.List(".")
	require.NoError(t, err)
	require.Equal(t, []string{"a10", "a2", "b", "k", "m", "z"}, names)
	names, err = fs.List("k")
	require.NoError(t, err)
	require.Equal(t, []string{"inner"}, names)
	names, err = fs.List("k/inner")
	require.NoError(t, err)
	require.Empty(t, names)
	_, err = fs.List("nope")
	require.ErrorIs(t, err, ErrNotExist)
	_, err = fs.List("m")
	require.Error(t, err, "List of a file")
}

func conformStat(t *testing.T, fs FS) {
	conformWriteFile(t, fs, "f", "12345")
	require.NoError(t, fs.MkdirAll("d"))
	info, err := fs.Stat("f")
	require.NoError(t, err)
	require.Equal(t, FileInfo{IsDir: false, Size: 5}, info)
	info, err = fs.Stat("d")
	require.NoError(t, err)
	require.True(t, info.IsDir)
	info, err = fs.Stat(".")
	require.NoError(t, err)
	require.True(t, info.IsDir)
	_, err = fs.Stat("g")
	require.ErrorIs(t, err, ErrNotExist)
	_, err = fs.Stat("d/g")
	require.ErrorIs(t, err, ErrNotExist)
}

func conformRenameReplaces(t *testing.T, fs FS) {
	conformWriteFile(t, fs, "new", "new content")
	conformWriteFile(t, fs, "current", "current content")
	require.NoError(t, fs.Rename("new", "current"))
	require.Equal(t, "new content", conformReadFile(t, fs, "current"))
	_, err := fs.Stat("new")
	require.ErrorIs(t, err, ErrNotExist)
	names, err := fs.List(".")
	require.NoError(t, err)
	require.Equal(t, []string{"current"}, names)

	require.NoError(t, fs.Rename("current", "fresh"), "rename to a free name")
	require.Equal(t, "new content", conformReadFile(t, fs, "fresh"))
	require.ErrorIs(t, fs.Rename("gone", "x"), ErrNotExist)
	require.ErrorIs(t, fs.Rename("fresh", "nodir/x"), ErrNotExist)
	require.Equal(t, "new content", conformReadFile(t, fs, "fresh"), "a failed rename changes nothing")
}

func conformRenameDirectory(t *testing.T, fs FS) {
	require.NoError(t, fs.MkdirAll("stage/sub"))
	conformWriteFile(t, fs, "stage/a", "A")
	conformWriteFile(t, fs, "stage/sub/b", "B")
	require.NoError(t, fs.MkdirAll("parts"))
	require.NoError(t, fs.Rename("stage", "parts/p0"))
	require.Equal(t, "A", conformReadFile(t, fs, "parts/p0/a"))
	require.Equal(t, "B", conformReadFile(t, fs, "parts/p0/sub/b"))
	_, err := fs.Stat("stage")
	require.ErrorIs(t, err, ErrNotExist)
	require.Error(t, fs.Rename("parts", "parts/p0/inside"), "a directory cannot move into itself")
	conformWriteFile(t, fs, "file", "F")
	require.Error(t, fs.Rename("parts", "file"), "a directory cannot replace a file")
	require.Error(t, fs.Rename("file", "parts"), "a file cannot replace a directory")
	require.Equal(t, "A", conformReadFile(t, fs, "parts/p0/a"))
}

func conformRemove(t *testing.T, fs FS) {
	conformWriteFile(t, fs, "f", "x")
	require.NoError(t, fs.Remove("f"))
	_, err := fs.Stat("f")
	require.ErrorIs(t, err, ErrNotExist)
	require.ErrorIs(t, fs.Remove("f"), ErrNotExist)

	require.NoError(t, fs.MkdirAll("d"))
	conformWriteFile(t, fs, "d/g", "y")
	require.ErrorIs(t, fs.Remove("d"), ErrExist, "a non-empty directory")
	require.Equal(t, "y", conformReadFile(t, fs, "d/g"))
	require.NoError(t, fs.Remove("d/g"))
	require.NoError(t, fs.Remove("d"), "an empty directory")
	names, err := fs.List(".")
	require.NoError(t, err)
	require.Empty(t, names)
}

func conformRemoveAll(t *testing.T, fs FS) {
	require.NoError(t, fs.MkdirAll("p/q/r"))
	conformWriteFile(t, fs, "p/one", "1")
	conformWriteFile(t, fs, "p/q/r/two", "2")
	conformWriteFile(t, fs, "keep", "k")
	require.NoError(t, fs.RemoveAll("p"))
	_, err := fs.Stat("p")
	require.ErrorIs(t, err, ErrNotExist)
	require.NoError(t, fs.RemoveAll("p"), "a missing path")
	require.NoError(t, fs.RemoveAll("missing/deeper"), "a missing parent")
	require.NoError(t, fs.RemoveAll("keep"), "a single file")
	names, err := fs.List(".")
	require.NoError(t, err)
	require.Empty(t, names)
}

func conformMkdirAll(t *testing.T, fs FS) {
	require.NoError(t, fs.MkdirAll("a/b/c"))
	require.NoError(t, fs.MkdirAll("a/b/c"), "again")
	require.NoError(t, fs.MkdirAll("a"), "a prefix")
	require.NoError(t, fs.MkdirAll("."), "the root")
	for _, dir := range []string{"a", "a/b", "a/b/c"} {
		info, err := fs.Stat(dir)
		require.NoError(t, err)
		require.True(t, info.IsDir, dir)
	}
	conformWriteFile(t, fs, "a/file", "x")
	require.Error(t, fs.MkdirAll("a/file"), "over a file")
	require.Error(t, fs.MkdirAll("a/file/sub"), "below a file")
	conformWriteFile(t, fs, "a/b/c/deep", "deep")
	require.Equal(t, "deep", conformReadFile(t, fs, "a/b/c/deep"))
}

func conformMissingNames(t *testing.T, fs FS) {
	_, err := fs.Open("missing")
	require.ErrorIs(t, err, ErrNotExist)
	_, err = fs.Create("nodir/file")
	require.ErrorIs(t, err, ErrNotExist)
	_, err = fs.Open("nodir/file")
	require.ErrorIs(t, err, ErrNotExist)
	require.NoError(t, fs.MkdirAll("d"))
	_, err = fs.Open("d")
	require.Error(t, err, "Open of a directory")
	_, err = fs.Create("d")
	require.Error(t, err, "Create over a directory")
}

func conformBadPaths(t *testing.T, fs FS) {
	long := strings.Repeat("n", FileNameBytesMax+1)
	_, err := fs.Create(long)
	require.ErrorIs(t, err, ErrNameTooLong, "a file name of %d bytes", len(long))
	require.ErrorIs(t, fs.MkdirAll("d/"+long), ErrNameTooLong)
	longest := strings.Repeat("n", FileNameBytesMax)
	file, err := fs.Create(longest)
	require.NoError(t, err, "a file name of %d bytes", FileNameBytesMax)
	require.NoError(t, file.Close())
	require.ErrorIs(t, fs.Rename(longest, longest+"~"), ErrNameTooLong)
	require.NoError(t, fs.Remove(longest))

	for _, name := range []string{"..", "../x", "a/../../x", "/etc/passwd", "./../x"} {
		_, err := fs.Create(name)
		require.ErrorIs(t, err, ErrBadPath, "Create %q", name)
		_, err = fs.Open(name)
		require.ErrorIs(t, err, ErrBadPath, "Open %q", name)
		require.ErrorIs(t, fs.Remove(name), ErrBadPath, "Remove %q", name)
		require.ErrorIs(t, fs.RemoveAll(name), ErrBadPath, "RemoveAll %q", name)
		require.ErrorIs(t, fs.Rename("x", name), ErrBadPath, "Rename to %q", name)
		require.ErrorIs(t, fs.Rename(name, "x"), ErrBadPath, "Rename from %q", name)
		require.ErrorIs(t, fs.MkdirAll(name), ErrBadPath, "MkdirAll %q", name)
		_, err = fs.List(name)
		require.ErrorIs(t, err, ErrBadPath, "List %q", name)
		_, err = fs.Stat(name)
		require.ErrorIs(t, err, ErrBadPath, "Stat %q", name)
		require.ErrorIs(t, fs.SyncDir(name), ErrBadPath, "SyncDir %q", name)
	}
	// The root itself cannot be removed or renamed.
	require.ErrorIs(t, fs.Remove("."), ErrBadPath)
	require.ErrorIs(t, fs.RemoveAll("."), ErrBadPath)
	require.ErrorIs(t, fs.Rename(".", "x"), ErrBadPath)
	info, err := fs.Stat(".")
	require.NoError(t, err)
	require.True(t, info.IsDir, "the root survives")
}

func conformPathsAreCleaned(t *testing.T, fs FS) {
	require.NoError(t, fs.MkdirAll("a/b"))
	conformWriteFile(t, fs, "a/./b/../c", "cleaned")
	require.Equal(t, "cleaned", conformReadFile(t, fs, "a/c"))
	require.Equal(t, "cleaned", conformReadFile(t, fs, "a//c"))
	names, err := fs.List("a/b/..")
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, names)
}

func conformClosedFile(t *testing.T, fs FS) {
	file, err := fs.Create("f")
	require.NoError(t, err)
	conformWrite(t, file, "abc")
	require.NoError(t, file.Close())
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
	require.ErrorIs(t, file.Close(), ErrClosed, "Close twice")
	require.Equal(t, "abc", conformReadFile(t, fs, "f"), "writes through a closed file change nothing")
}

func conformHandleOutlivesRemove(t *testing.T, fs FS) {
	conformWriteFile(t, fs, "segment", "records")
	file, err := fs.Open("segment")
	require.NoError(t, err)
	defer file.Close()
	require.NoError(t, fs.Remove("segment"))
	require.Equal(t, "records", conformReadAll(t, file), "an open file stays readable after its name is removed")
	_, err = fs.Stat("segment")
	require.ErrorIs(t, err, ErrNotExist)
}
