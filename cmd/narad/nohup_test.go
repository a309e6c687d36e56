//go:build linux

package main

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/proc"
)

// A server started with SIGHUP ignored (nohup narad serve &, or a
// service manager's "ignore hangup") keeps running when the hangup comes:
// signal.Notify(SIGHUP) would install a handler even for a signal the
// process inherited as ignored.
func TestANohupServerSurvivesAHangup(t *testing.T) {
	binary, err := proc.Build(t.TempDir())
	require.NoError(t, err)
	port := 23000 + rand.IntN(5000)
	cmd := exec.Command("sh", "-c", `trap "" HUP; exec "$0" server start --dev --port "$1" --data-dir "$2"`,
		binary, strconv.Itoa(port), filepath.Join(t.TempDir(), "data"))
	startUntilLine(t, cmd, "narad dev server:", "the dev server did not start within 30 s")
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	select {
	case err := <-exited:
		t.Fatalf("the server, started with SIGHUP ignored, ended on a hangup (%v)", err)
	case <-time.After(3 * time.Second):
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop on SIGTERM within 30 s")
	}
}
