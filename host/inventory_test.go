package host

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The inventory gauges are published as the host starts, not at the end
// of the first poll interval: a node that starts under its disk reserve
// (here a reserve of 1 TiB, more than the test machine's disk has free)
// says so from its first scrape.
func TestTheInventoryGaugesArePublishedAtTheStart(t *testing.T) {
	h := startUnderTheDiskReserve(t)
	metrics := scrapeAfterAPoll(t, h)
	require.Equal(t, "narad_disk_low 1", metricLine(metrics, "narad_disk_low"))
	require.Equal(t, "narad_disk_reserve_bytes 1.099511627776e+12", metricLine(metrics, "narad_disk_reserve_bytes"))
}

// metricLine is the sample line of an unlabelled metric in a scrape, or
// "" when there is none.
func metricLine(scrape, name string) string {
	for line := range strings.Lines(scrape) {
		if strings.HasPrefix(line, name+" ") {
			return strings.TrimSuffix(line, "\n")
		}
	}
	return ""
}

// The bound of the parked long polls is on /metrics beside their gauge,
// as every other bounded resource's is: narad_consume_parked_polls had
// nothing to be compared with (observability audit).
func TestTheParkedPollsBoundIsPublished(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Node.WaitersMax = 3
	h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	_, metrics := call(t, h, get("/metrics"))
	require.Equal(t, "narad_consume_parked_polls_max 3", metricLine(metrics, "narad_consume_parked_polls_max"))
}

// A produce refused for the disk reserve moves
// narad_disk_reserve_refusals_total at the next inventory poll: the
// reserve's refusals were visible only as 503s among all others
// (observability audit).
func TestProducesRefusedForTheDiskReserveAreCounted(t *testing.T) {
	h := startUnderTheDiskReserve(t)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"jobs","partitions":3}`), 201, ""},
		{"pinned", post("/v1/topics/jobs/produce?partition=1", "text/plain", "x"), 503, "storage.disk_reserve_bytes"},
		{"keyless", post("/v1/topics/jobs/produce", "text/plain", "y"), 503, "storage.disk_reserve_bytes"},
	})
	metrics := scrapeAfterAPoll(t, h)
	require.Equal(t, "narad_disk_reserve_refusals_total 2", metricLine(metrics, "narad_disk_reserve_refusals_total"))
}

// startUnderTheDiskReserve starts a node whose reserve, 1 TiB, is more
// than the test machine's disk has free.
func startUnderTheDiskReserve(t *testing.T) *Host {
	t.Helper()
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Node.DiskReserveBytes = 1 << 40
	h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	return h
}

// scrapeAfterAPoll runs one inventory poll, as the poller does as it
// starts, and scrapes /metrics once the stats it asked for are in.
func scrapeAfterAPoll(t *testing.T, h *Host) string {
	t.Helper()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	h.pollInventory(stopped)
	status, _ := call(t, h, get("/v1/topics"))
	require.Equal(t, http.StatusOK, status) // answered after the stats the poll asked for
	_, metrics := call(t, h, get("/metrics"))
	return metrics
}
