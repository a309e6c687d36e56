package host

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/config"
)

// The cap of open logs derives from the descriptor limit (clamped), less
// the logs one produce may open past it, and a configured cap the limit
// cannot hold with that overdraft refuses the start.
func TestOpenLogsCapFollowsTheDescriptorLimit(t *testing.T) {
	const overdraft = 108
	derived, err := openLogsCap(0, overdraft, 20_000)
	require.NoError(t, err)
	require.Equal(t, 20_000/logsShareDivisor/descriptorsPerLogBudget-overdraft, derived) // 2,000 logs of five descriptors
	require.LessOrEqual(t, (derived+overdraft)*descriptorsPerLogBudget, 20_000/logsShareDivisor)
	derived, err = openLogsCap(0, overdraft, 64)
	require.NoError(t, err)
	require.Equal(t, openLogsDerivedMin, derived)
	derived, err = openLogsCap(0, overdraft, 1<<40)
	require.NoError(t, err)
	require.Equal(t, openLogsDerivedMax, derived)

	configured, err := openLogsCap(100, overdraft, 20_000)
	require.NoError(t, err)
	require.Equal(t, 100, configured)
	_, err = openLogsCap(2_000-overdraft+1, overdraft, 20_000)
	require.ErrorContains(t, err, "storage.open_logs_max 1893, plus the 108 logs one produce may open past it")
	require.Equal(t, uint64(108), openLogsOverdraft(108))
	require.Equal(t, uint64(1000), openLogsOverdraft(4096), "one log per record at most")

	cfg := config.Default()
	cfg.Security.Enabled = false
	cfg.Storage.OpenLogsMax = 1 << 20
	_, err = OptionsFrom(cfg)
	require.ErrorContains(t, err, "ulimit -n")
	cfg.Storage.OpenLogsMax = 0
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	limit, err := descriptorLimit()
	require.NoError(t, err)
	require.LessOrEqual(t, uint64(opts.Node.OpenLogsMax)+openLogsOverdraft(opts.Node.PartitionsMax),
		max(logsDescriptorShare(limit), openLogsDerivedMin+openLogsOverdraft(opts.Node.PartitionsMax)))
}

// The HTTP connection limit derives from the descriptor limit (clamped),
// and a configured one over a quarter of the limit refuses the start: the
// connections would take the descriptors the partition logs need, and a
// produce would fail with a storage error (host review, medium).
func TestConnectionsCapFollowsTheDescriptorLimit(t *testing.T) {
	derived, err := connectionsCap(0, 20_000)
	require.NoError(t, err)
	require.Equal(t, 5_000, derived)
	derived, err = connectionsCap(0, 100)
	require.NoError(t, err)
	require.Equal(t, connectionsDerivedMin, derived)
	configured, err := connectionsCap(5_000, 20_000)
	require.NoError(t, err)
	require.Equal(t, 5_000, configured)
	_, err = connectionsCap(5_001, 20_000)
	require.ErrorContains(t, err, "http.max_connections 5001 needs as many file descriptors, more than a quarter of the process limit 20000")

	limit, err := descriptorLimit()
	require.NoError(t, err)
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.HTTPConnectionsMax = int(limit/connectionsShareDivisor + 1)
	host, err := Start(opts, slog.New(slog.DiscardHandler))
	if err == nil {
		require.NoError(t, host.Shutdown())
	}
	require.ErrorContains(t, err, "ulimit -n")
}
