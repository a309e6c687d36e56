package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/proc"
	"narad/client"
)

// binary is the narad binary built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "narad-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "narad")
	build := exec.Command("go", "build", "-o", binary, "narad/cmd/narad")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build narad:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one `narad serve` process.
type server struct {
	cmd    *exec.Cmd
	addr   string
	client *client.Client
	log    string
}

// startServer runs `narad serve` on a free loopback port with dataDir and
// waits until /readyz answers (bounded).
func startServer(t *testing.T, dataDir string) *server {
	t.Helper()
	addr := freeAddr(t)
	logPath := filepath.Join(t.TempDir(), "server.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(binary, "serve", "--addr", addr, "--data-dir", dataDir, "--log-format", "text")
	cmd.Env = append(os.Environ(), "NARAD_SECURITY_ENABLED=false", "NARAD_CLUSTER_ADDR="+freeAddr(t))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	s := &server{cmd: cmd, addr: addr, client: client.New("http://"+addr, client.WithTimeout(10*time.Second)), log: logPath}
	t.Cleanup(func() {
		s.kill()
		logFile.Close()
	})
	s.waitReady(t)
	return s
}

func (s *server) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.client.Readyz(ctx)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	logData, _ := os.ReadFile(s.log)
	t.Fatalf("server on %s never became ready; its log:\n%s", s.addr, logData)
}

// kill ends the process with SIGKILL: no graceful shutdown, no flush.
func (s *server) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := proc.FreeAddr()
	require.NoError(t, err)
	return addr
}
