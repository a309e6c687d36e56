package host

import (
	"log/slog"
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/proc"
)

// A host shut down right after Start (a SIGTERM during boot, or a node
// whose first sync round failed) releases its API port: with one
// processor the server's goroutine has not run when Shutdown closes the
// server's listeners, and Serve, finding the server closing, must close
// the listener it was handed.
func TestShutdownRightAfterStartReleasesTheAPIPort(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	addr, err := proc.FreeAddr()
	require.NoError(t, err)
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = addr
	h, err := Start(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, h.Shutdown())
	again, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the stopped host still holds its API port %s", addr)
	require.NoError(t, again.Close())
}
