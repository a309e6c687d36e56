package host

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A move job that outlives the shutdown grace does not hold the stop for
// as long as it runs: the node is dropped as a crash would drop it (the
// job's files are put right at the next start), and it starts again on
// its data with every acknowledged record. The grace is the HTTP server's
// too: at 200 ms a starved machine (the race detector beside other tests)
// did not see the test's idle connection closed within it, and Shutdown
// returned its deadline.
func TestAShutdownWaitsForAJobAtMostItsGrace(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.HTTPAddr = "127.0.0.1:0"
	opts.ShutdownGrace = time.Second
	h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"jobs","partitions":3}`), 201, ""},
		{"produce", post("/v1/topics/jobs/produce?partition=1", "text/plain", "kept"), 202, ""},
	})
	release := make(chan struct{})
	defer close(release)
	h.loop.goJob(func() { <-release }) // a copy's verification that takes longer than the grace

	require.NoError(t, h.Shutdown())
	require.True(t, h.loop.jobsLeft.Load(), "the job was still running when the host stopped")

	again := testHostAt(t, dir)
	runSteps(t, again, []step{{"replay", get("/v1/topics/jobs/consume?partition=1&offset=0"), 200, `"payload":"kept"`}})
}
