package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"narad/client"
)

// ErrNotRunning is returned when a signal is asked for a node that has no
// process.
var ErrNotRunning = errors.New("node is not running")

// ErrAddrInUse is returned when a node exited while starting because one
// of its ports was taken: the caller may plan new ports and start again.
var ErrAddrInUse = errors.New("a port of the node was taken")

// StartMessage is the msg of the line a Process writes to a JSON log
// before each process it starts, so that the log shows where each one
// begins.
const StartMessage = "proc: process start"

// Spec is how a node is started. Its fields are set before the first
// start and never change.
type Spec struct {
	// Binary is the narad executable.
	Binary string
	// ID is the node id (--node-id), empty for a node that has none.
	ID string
	// HTTPAddr is the loopback host:port of the HTTP API (--addr);
	// ClusterAddr that of the node-to-node port (NARAD_CLUSTER_ADDR).
	HTTPAddr, ClusterAddr string
	// DataDir is the node's data directory; LogPath is the file its output
	// is appended to.
	DataDir, LogPath string
	// LogFormat is json (the default when empty) or text.
	LogFormat string
	// BaseEnv is the environment the node inherits (os.Environ() when
	// nil); Env is appended to it, so a variable of Env wins.
	BaseEnv, Env []string
	// SysProcAttr, when set, is given to each process (a process group).
	SysProcAttr *syscall.SysProcAttr
	// HTTPClient reads /metrics and /readyz (http.DefaultClient when nil).
	HTTPClient *http.Client
}

// Process is one node: its Spec stays the same across restarts, its
// process changes. Safe for use by several goroutines.
type Process struct {
	// spec is set by NewProcess and never changes.
	spec Spec
	// probe asks /readyz, within ProbeTimeout.
	probe *client.Client
	// reapers counts the goroutines waiting for a process of this node.
	reapers sync.WaitGroup

	// mu protects the fields below; the caller's goroutines change them,
	// the reaping goroutine of a process reports its exit.
	mu sync.Mutex
	// cmd is the current process; nil while the node is down.
	cmd *exec.Cmd
	// exited is closed when the last process started has been reaped;
	// exitErr is then its exit status.
	exited  chan struct{}
	exitErr error
	// expectExit is set before the harness signals the process to end; an
	// exit without it is a crash (recorded in crashes).
	expectExit bool
	crashes    []string
	// starts counts the processes started for this node (written to the
	// log's start line).
	starts int
}

// NewProcess returns the node of spec, not started.
func NewProcess(spec Spec) *Process {
	spec.LogFormat = spec.logFormat()
	httpClient := spec.HTTPClient
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Process{spec: spec, exited: closedChannel(),
		probe: client.New(spec.URL(), client.WithTimeout(ProbeTimeout), client.WithHTTPClient(httpClient))}
}

func closedChannel() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// URL is the base URL of the node's HTTP API.
func (s Spec) URL() string { return "http://" + s.HTTPAddr }

// Args are the command-line arguments of the node's `narad serve`.
func (s Spec) Args() []string {
	args := []string{"serve", "--addr", s.HTTPAddr, "--data-dir", s.DataDir, "--log-format", s.logFormat()}
	if s.ID != "" {
		args = append(args, "--node-id", s.ID)
	}
	return args
}

// Start runs a new process of the node, appending its output to its log
// (after a StartMessage line when the log is JSON).
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("start %s: already running", p.spec.ID)
	}
	logFile, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	p.starts++
	if err := p.writeStartLine(logFile); err != nil {
		return err
	}
	cmd := exec.Command(p.spec.Binary, p.spec.Args()...)
	cmd.Env = p.spec.Environ()
	cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = logFile, logFile, p.spec.SysProcAttr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.spec.ID, err)
	}
	p.cmd, p.exited, p.exitErr, p.expectExit = cmd, make(chan struct{}), nil, false
	exited := p.exited
	p.reapers.Go(func() { p.reap(cmd, exited) })
	return nil
}

func (s Spec) logFormat() string {
	if s.LogFormat == "" {
		return "json"
	}
	return s.LogFormat
}

// Environ is the node's whole environment: BaseEnv (os.Environ() when
// nil), then Env.
func (s Spec) Environ() []string {
	base := s.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	return append(append([]string{}, base...), s.Env...)
}

func (p *Process) writeStartLine(w io.Writer) error {
	if p.spec.LogFormat != "json" {
		return nil
	}
	line, err := json.Marshal(map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "level": "INFO",
		"msg": StartMessage, "node": p.spec.ID, "start": p.starts})
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

// reap waits for a process and records an exit nobody asked for.
func (p *Process) reap(cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.expectExit && p.cmd == cmd {
		p.crashes = append(p.crashes, fmt.Sprintf("%s exited on its own at %s: %v", p.spec.ID, time.Now().Format(time.TimeOnly), err))
		p.cmd = nil
	}
	p.exitErr = err
	close(exited)
}

// Exited returns a channel closed once the last process started has been
// reaped (already closed before the first start).
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// ExitErr is the exit status of the last process, once Exited is closed.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Pid is the current process's id, 0 while the node is down.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the node has a process that was not reaped.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// TakeCrashes returns and clears the exits nobody asked for.
func (p *Process) TakeCrashes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	crashes := p.crashes
	p.crashes = nil
	return crashes
}

// Signal sends sig to the current process. With ending set, the exit that
// follows is expected (not a crash). It returns the channel closed when
// the process has been reaped.
func (p *Process) Signal(sig syscall.Signal, ending bool) (<-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, p.spec.ID)
	}
	if ending {
		p.expectExit = true
	}
	return p.exited, p.cmd.Process.Signal(sig)
}

// forget clears the process once it was reaped.
func (p *Process) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cmd = nil
}

// Kill ends the process with SIGKILL (no shutdown, no flush) and waits
// until it is reaped. A node that is down is left as it is.
func (p *Process) Kill() error {
	exited, err := p.Signal(syscall.SIGKILL, true)
	if errors.Is(err, ErrNotRunning) {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrProcessDone) { // one that just exited is being reaped
		return err
	}
	<-exited
	p.forget()
	return nil
}

// Terminate asks the process to shut down gracefully (SIGTERM) and waits
// up to timeout; past it the process is killed and the overrun is
// returned as an error. It returns how long the stop took.
func (p *Process) Terminate(timeout time.Duration) (time.Duration, error) {
	began := time.Now()
	exited, err := p.Signal(syscall.SIGTERM, true)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
		p.forget()
		return time.Since(began), nil
	case <-timer.C:
		_ = p.Kill()
		return time.Since(began), fmt.Errorf("%s still running %s after SIGTERM: killed", p.spec.ID, timeout)
	}
}

// Pause stops the process (SIGSTOP) without ending it; Resume continues
// it (SIGCONT).
func (p *Process) Pause() error {
	_, err := p.Signal(syscall.SIGSTOP, false)
	return err
}

// Resume continues a paused process.
func (p *Process) Resume() error {
	_, err := p.Signal(syscall.SIGCONT, false)
	return err
}

// WaitReaped waits for every goroutine that reaps this node's processes.
func (p *Process) WaitReaped() { p.reapers.Wait() }

// Ready asks /readyz once; nil means 200.
func (p *Process) Ready(ctx context.Context) error {
	_, err := p.probe.Readyz(ctx)
	return err
}

// WaitReady polls /readyz until it answers 200, within timeout. A process
// that exits meanwhile ends the wait with the end of its log, as
// ErrAddrInUse when a port was taken.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		if !p.Running() {
			return p.exitedWhileStarting()
		}
		if lastErr = p.Ready(ctx); lastErr == nil {
			return nil
		}
		if SleepContext(ctx, PollInterval) != nil {
			return fmt.Errorf("%s on %s not ready after %s (last answer: %v); the end of its log:\n%s",
				p.spec.ID, p.spec.HTTPAddr, timeout, lastErr, LogTail(p.spec.LogPath))
		}
	}
}

func (p *Process) exitedWhileStarting() error {
	tail := LogTail(p.spec.LogPath)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%s exited while starting: %w; the end of its log:\n%s", p.spec.ID, ErrAddrInUse, tail)
	}
	return fmt.Errorf("%s exited while starting; the end of its log:\n%s", p.spec.ID, tail)
}

// Metrics reads the node's /metrics page.
func (p *Process) Metrics(ctx context.Context) (Metrics, error) {
	return Scrape(ctx, p.spec.HTTPClient, p.spec.HTTPAddr, ProbeTimeout)
}

// IsLeader reports whether the node's narad_meta_leader gauge is 1.
func (p *Process) IsLeader(ctx context.Context) bool {
	metrics, err := p.Metrics(ctx)
	if err != nil {
		return false
	}
	value, found := metrics.Value(LeaderMetric)
	return found && value == 1
}
