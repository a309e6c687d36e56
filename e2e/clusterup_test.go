package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
)

// clusterUpStartTimeout bounds `narad cluster up` until it prints that the
// nodes are ready.
const clusterUpStartTimeout = 60 * time.Second

// TestClusterUpStartsAndStopsThreeNodes runs `narad cluster up` as a user
// would: it must print the three addresses once every node is ready, the
// nodes must form one cluster, and an interrupt must stop all of them and
// exit 0.
func TestClusterUpStartsAndStopsThreeNodes(t *testing.T) {
	basePort := freePortRange(t, 3)
	cmd, stderr, banner := startClusterUp(t, basePort)

	addrs := []string{}
	for i := range 3 {
		addr := fmt.Sprintf("127.0.0.1:%d", basePort+10*i)
		require.Contains(t, banner, "http://"+addr)
		addrs = append(addrs, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range addrs {
		_, err := client.New("http://" + addr).Readyz(ctx)
		require.NoError(t, err, "node %s is not ready after cluster up said so", addr)
	}
	_, err := client.New("http://" + addrs[2]).ClusterMembers(ctx)
	require.True(t, client.IsStatus(err, 401), "the nodes run with authentication on: %v", err)
	password := regexp.MustCompile(`user admin, password (\S+)`).FindStringSubmatch(banner)
	require.NotNil(t, password, "the banner prints the admin password:\n%s", banner)
	secured := client.New("http://"+addrs[2], client.WithBasicAuth("admin", password[1]))
	var members []client.Member
	for range 100 { // the root seed may still be on its way to n3
		if members, err = secured.ClusterMembers(ctx); !client.IsStatus(err, 401) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	require.Len(t, members, 3, "the three nodes form one cluster")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, waitTimeout(cmd, 30*time.Second), "cluster up exits 0 on an interrupt; stderr:\n%s", stderr)
	for _, addr := range addrs {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		require.Error(t, err, "node %s still listens after cluster up stopped", addr)
	}
}

// startClusterUp runs `narad cluster up` on basePort with a data
// directory of the test and args, and returns it once its banner is out
// (the banner, and its stderr so far and to come); the test's cleanup
// interrupts it if the test did not stop it.
func startClusterUp(t *testing.T, basePort int, args ...string) (*exec.Cmd, *lockedBuffer, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"cluster", "up", "--base-port", fmt.Sprint(basePort), "--data-dir", t.TempDir()}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
		}
	})
	banner := readUntil(t, stdout, "Ctrl-C stops all three", clusterUpStartTimeout, stderr)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return cmd, stderr, banner
}

// readUntil reads lines from r until one contains marker and returns all
// of them; it fails the test after timeout.
func readUntil(t *testing.T, r io.Reader, marker string, timeout time.Duration, stderr fmt.Stringer) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		var seen strings.Builder
		scanner := bufio.NewScanner(r)
		for scanner.Scan() {
			seen.WriteString(scanner.Text() + "\n")
			if strings.Contains(scanner.Text(), marker) {
				found <- seen.String()
				return
			}
		}
		found <- ""
	}()
	select {
	case text := <-found:
		require.NotEmpty(t, text, "output ended before %q; stderr:\n%s", marker, stderr)
		return text
	case <-time.After(timeout):
		t.Fatalf("no %q within %s; stderr:\n%s", marker, timeout, stderr)
		return ""
	}
}

func waitTimeout(cmd *exec.Cmd, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		return fmt.Errorf("did not exit within %s", timeout)
	}
}

// freePortRange finds a base port such that the HTTP and cluster ports of
// nodes nodes (base+10*i and one above) are free right now.
func freePortRange(t *testing.T, nodes int) int {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		base := 20000 + (time.Now().Nanosecond()/1000+attempt*397)%30000
		if portsFree(base, nodes) {
			return base
		}
	}
	t.Fatal("found no free range of loopback ports")
	return 0
}

func portsFree(base, nodes int) bool {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := range nodes {
		for _, port := range []int{base + 10*i, base + 10*i + 1} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				return false
			}
			listeners = append(listeners, l)
		}
	}
	return true
}

// lockedBuffer is an io.Writer for a child's output that the test may read
// while the child still writes.
type lockedBuffer struct {
	mu     sync.Mutex
	buffer bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.String()
}

// TestClusterUpStartsADeadNodeAgain runs `narad cluster up --restart-after
// 1s`, kills one node with kill -9 (as the help suggests trying), and
// expects cluster up to say it died, start it again on its data as a new
// process, and report it ready again once it answers /readyz; an interrupt
// then stops all three, the restarted one included.
func TestClusterUpStartsADeadNodeAgain(t *testing.T) {
	basePort := freePortRange(t, 3)
	cmd, stderr, banner := startClusterUp(t, basePort, "--restart-after", "1s")
	found := regexp.MustCompile(`(?m)^  n2 .* pid (\d+) `).FindStringSubmatch(banner)
	require.NotNil(t, found, "the banner names n2's pid:\n%s", banner)
	pid, err := strconv.Atoi(found[1])
	require.NoError(t, err)

	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	waitForText(t, stderr, "n2 ready again on http://", clusterUpStartTimeout)
	log := stderr.String()
	require.Contains(t, log, "n2 exited (signal: killed)")
	require.Contains(t, log, "starting it again in 1s (--restart-after)")
	again := regexp.MustCompile(`n2 started again \(pid (\d+)\)`).FindStringSubmatch(log)
	require.NotNil(t, again, "cluster up says n2's new pid:\n%s", log)
	require.NotEqual(t, found[1], again[1], "n2 runs as a new process")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n2 := fmt.Sprintf("127.0.0.1:%d", basePort+10)
	_, err = client.New("http://" + n2).Readyz(ctx)
	require.NoError(t, err, "n2 serves again after cluster up said so")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, waitTimeout(cmd, 30*time.Second), "cluster up exits 0 on an interrupt; stderr:\n%s", stderr)
	require.Error(t, syscall.Kill(pid, 0), "the killed process is gone")
	conn, err := net.DialTimeout("tcp", n2, time.Second)
	if err == nil {
		conn.Close()
	}
	require.Error(t, err, "the restarted n2 was stopped with the run")
}

// waitForText polls text until it contains want, failing the test after
// timeout.
func waitForText(t *testing.T, text fmt.Stringer, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(text.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s; so far:\n%s", want, timeout, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
