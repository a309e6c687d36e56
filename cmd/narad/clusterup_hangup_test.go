//go:build linux

package main

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/proc"
)

// startUntilLine starts cmd and returns once a line of its stderr starts
// with prefix; the process is killed and the test fails (with failure)
// if none does within 30 s.
func startUntilLine(t *testing.T, cmd *exec.Cmd, prefix, failure string) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	seen := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stderr)
		signalled := false
		for scanner.Scan() {
			if !signalled && strings.HasPrefix(scanner.Text(), prefix) {
				signalled = true
				close(seen)
			}
		}
	}()
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal(failure)
	}
}

// childPids lists the processes whose parent is pid (from /proc/*/stat).
func childPids(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var children []int
	for _, entry := range entries {
		candidate, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			children = append(children, candidate)
		}
	}
	return children
}

// startClusterUp builds narad, starts `narad cluster up` on free ports
// and returns it with its three node processes, which the test's cleanup
// kills whatever happened.
func startClusterUp(t *testing.T) (*exec.Cmd, []int) {
	t.Helper()
	binary, err := proc.Build(t.TempDir())
	require.NoError(t, err)
	base := 21000 + 100*rand.IntN(90)
	cmd := exec.Command(binary, "cluster", "up", "--base-port", strconv.Itoa(base), "--data-dir", filepath.Join(t.TempDir(), "cluster"))
	startUntilLine(t, cmd, "waiting for ", "cluster up did not start its nodes within 30 s")
	nodes := childPids(t, cmd.Process.Pid)
	require.Len(t, nodes, 3, "three narad serve children")
	t.Cleanup(func() {
		for _, pid := range nodes {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return cmd, nodes
}

// `narad cluster up` puts its nodes in their own process group, where a
// hangup of its terminal never reaches them: on SIGHUP (the terminal or
// ssh session closed) it stops them as on Ctrl-C, leaving no node holding
// its ports and data directory.
func TestClusterUpStopsItsNodesOnHangup(t *testing.T) {
	cmd, nodes := startClusterUp(t)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("cluster up still running 30 s after SIGHUP")
	}
	time.Sleep(500 * time.Millisecond)
	for _, pid := range nodes {
		assert.False(t, running(pid), "node pid %d still runs after cluster up ended on SIGHUP", pid)
	}
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return !strings.Contains(string(stat), ") Z ")
}

// A `narad cluster up` killed with SIGKILL cannot stop its nodes; the
// kernel sends each SIGTERM when it dies (Pdeathsig), and each stops
// gracefully. They ran on for good, holding their ports and data
// directories.
func TestClusterUpKilledLeavesNoNodeRunning(t *testing.T) {
	cmd, nodes := startClusterUp(t)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range nodes {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		assert.False(t, running(pid), "node pid %d still runs 30 s after cluster up was killed", pid)
	}
}
