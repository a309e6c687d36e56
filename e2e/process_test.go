package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// binary is the narad binary built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "narad-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = proc.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one `narad serve` process without a node id.
type server struct {
	process *proc.Process
	client  *client.Client
}

// startServer runs `narad serve` on a free loopback port with dataDir and
// waits until /readyz answers (bounded). A start whose port was taken is
// tried again on new ports, up to startTriesMax times.
func startServer(t *testing.T, dataDir string) *server {
	t.Helper()
	var err error
	for range startTriesMax {
		spec := proc.Spec{Binary: binary, HTTPAddr: freeAddr(t), DataDir: dataDir, LogPath: filepath.Join(t.TempDir(), "server.log")}
		spec.Env = []string{"NARAD_SECURITY_ENABLED=false", "NARAD_CLUSTER_ADDR=" + freeAddr(t)}
		s := &server{process: proc.NewProcess(spec), client: client.New(spec.URL(), client.WithTimeout(clusterClientTimeout))}
		require.NoError(t, s.process.Start())
		t.Cleanup(s.kill)
		if err = s.process.WaitReady(context.Background(), clusterReadyTimeout); err == nil {
			return s
		}
		s.kill()
		if !errors.Is(err, proc.ErrAddrInUse) {
			break
		}
	}
	t.Fatalf("server never became ready: %v", err)
	return nil
}

// kill ends the process with SIGKILL: no graceful shutdown, no flush.
func (s *server) kill() { _ = s.process.Kill() }

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := proc.FreeAddr()
	require.NoError(t, err)
	return addr
}

// TestStartOnATakenPortIsReportedAsAddrInUse: a node whose HTTP port is
// taken exits while starting, and the harness says so with
// proc.ErrAddrInUse, which is what lets a start be tried again on new
// ports.
func TestStartOnATakenPortIsReportedAsAddrInUse(t *testing.T) {
	taken, err := net.Listen("tcp", freeAddr(t))
	require.NoError(t, err)
	defer taken.Close()
	process := proc.NewProcess(proc.Spec{Binary: binary, HTTPAddr: taken.Addr().String(), DataDir: t.TempDir(),
		LogPath: filepath.Join(t.TempDir(), "server.log"), Env: []string{"NARAD_SECURITY_ENABLED=false", "NARAD_CLUSTER_ADDR=" + freeAddr(t)}})
	require.NoError(t, process.Start())
	defer func() { require.NoError(t, process.Kill()) }()
	err = process.WaitReady(context.Background(), clusterReadyTimeout)
	require.ErrorIs(t, err, proc.ErrAddrInUse)
}
