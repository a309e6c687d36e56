package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"narad/proc"
	"narad/client"
)

// ErrNotRunning is returned when a signal is asked for a node that has no
// process.
var ErrNotRunning = errors.New("node is not running")

// nodeProcess is one `narad serve` node of the soak: its identity, ports
// and data directory stay the same across restarts; its process changes.
type nodeProcess struct {
	// id, httpAddr, clusterAddr, dataDir, logPath and env are set when the
	// node is planned and never change.
	id          string
	httpAddr    string
	clusterAddr string
	dataDir     string
	logPath     string
	// env holds the node's NARAD_* settings (peers, initial members,
	// timings), appended to the harness's environment.
	env    []string
	client *client.Client
	// httpClient scrapes /metrics.
	httpClient *http.Client
	// reapers counts the goroutines waiting for this node's processes
	// (shared by the cluster, which waits for them at the end).
	reapers *sync.WaitGroup

	// mu protects the fields below; the scenario goroutine changes them,
	// the waiter goroutine of a process reports its exit.
	mu sync.Mutex
	// cmd is the current process; nil while the node is down.
	cmd *exec.Cmd
	// exited is closed when the current process has been reaped.
	exited chan struct{}
	// expectExit is set before the harness signals the process to end; an
	// exit without it is a crash of the broker (recorded in crashes).
	expectExit bool
	crashes    []string
	// starts counts the processes started for this node.
	starts int
}

// start runs the node's process, appending its output to its log after a
// marker line, so that the log shows where each process begins.
func (n *nodeProcess) start(binary string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("start %s: already running", n.id)
	}
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	n.starts++
	if err := writeMarker(logFile, n.id, n.starts); err != nil {
		return err
	}
	cmd := exec.Command(binary, "serve", "--addr", n.httpAddr, "--node-id", n.id, "--data-dir", n.dataDir, "--log-format", "json")
	cmd.Env = append(os.Environ(), n.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.id, err)
	}
	n.cmd, n.exited, n.expectExit = cmd, make(chan struct{}), false
	exited := n.exited
	n.reapers.Go(func() { n.reap(cmd, exited) })
	return nil
}

// processStartMessage marks the start of a process in a node's log.
const processStartMessage = "soak: process start"

func writeMarker(w io.Writer, id string, start int) error {
	line, err := json.Marshal(map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "msg": processStartMessage,
		"node": id, "start": start})
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

// reap waits for a process and records an exit nobody asked for.
func (n *nodeProcess) reap(cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.expectExit && n.cmd == cmd {
		n.crashes = append(n.crashes, fmt.Sprintf("%s exited on its own at %s: %v", n.id, time.Now().Format(time.TimeOnly), err))
		n.cmd = nil
	}
	close(exited)
}

// signal sends sig to the current process. With ending set, the exit that
// follows is expected.
func (n *nodeProcess) signal(sig syscall.Signal, ending bool) (chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, n.id)
	}
	if ending {
		n.expectExit = true
	}
	return n.exited, n.cmd.Process.Signal(sig)
}

// forget clears the process once it was reaped.
func (n *nodeProcess) forget() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cmd = nil
}

// killNine ends the process with SIGKILL (no shutdown, no flush) and waits
// until it is reaped.
func (n *nodeProcess) killNine() error {
	exited, err := n.signal(syscall.SIGKILL, true)
	if err != nil {
		return err
	}
	<-exited
	n.forget()
	return nil
}

// terminate asks the process to shut down gracefully (SIGTERM) and waits
// up to terminateTimeout; past it the process is killed and the overrun
// is returned as an error.
func (n *nodeProcess) terminate() (time.Duration, error) {
	began := time.Now()
	exited, err := n.signal(syscall.SIGTERM, true)
	if err != nil {
		return 0, err
	}
	select {
	case <-exited:
		n.forget()
		return time.Since(began), nil
	case <-time.After(terminateTimeout):
		_ = n.killNine()
		return time.Since(began), fmt.Errorf("%s still running %s after SIGTERM: killed", n.id, terminateTimeout)
	}
}

// pause stops the process (SIGSTOP) without ending it; resume continues
// it (SIGCONT).
func (n *nodeProcess) pause() error {
	_, err := n.signal(syscall.SIGSTOP, false)
	return err
}

func (n *nodeProcess) resume() error {
	_, err := n.signal(syscall.SIGCONT, false)
	return err
}

// running reports whether the node has a process.
func (n *nodeProcess) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// takeCrashes returns and clears the unexpected exits seen so far.
func (n *nodeProcess) takeCrashes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	crashes := n.crashes
	n.crashes = nil
	return crashes
}

// waitReady polls /readyz until it answers 200, within readyTimeout.
func (n *nodeProcess) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var lastErr error
	for {
		if !n.running() {
			return fmt.Errorf("%s exited while starting; the end of its log:\n%s", n.id, proc.LogTail(n.logPath))
		}
		probe, cancelProbe := context.WithTimeout(ctx, probeTimeout)
		_, lastErr = n.client.Readyz(probe)
		cancelProbe()
		if lastErr == nil {
			return nil
		}
		if proc.SleepContext(ctx, pollInterval) != nil {
			return fmt.Errorf("%s on %s not ready after %s (last answer: %v); the end of its log:\n%s",
				n.id, n.httpAddr, readyTimeout, lastErr, proc.LogTail(n.logPath))
		}
	}
}

// metrics returns the node's /metrics page.
func (n *nodeProcess) metrics(ctx context.Context) (string, error) {
	return proc.Metrics(ctx, n.httpClient, n.httpAddr, probeTimeout)
}

// isLeader reports whether the node's narad_meta_leader gauge is 1.
func (n *nodeProcess) isLeader(ctx context.Context) bool {
	page, err := n.metrics(ctx)
	return err == nil && strings.Contains(page, "\nnarad_meta_leader 1\n")
}

// nodeLogPath is where a node's log lives in the run directory.
func nodeLogPath(dir, id string) string { return filepath.Join(dir, id+".log") }
