package storage

import "testing"

func TestOSFSCountsFsyncs(t *testing.T) {
	fs, err := NewOSFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file, err := fs.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	if got := fs.Fsyncs(); got != 2 {
		t.Fatalf("Fsyncs() = %d after one file and one directory sync, want 2", got)
	}
}
