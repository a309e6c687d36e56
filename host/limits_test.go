package host

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/config"
)

// The cap of open logs derives from the descriptor limit (clamped), and a
// configured cap the limit cannot hold refuses the start.
func TestOpenLogsCapFollowsTheDescriptorLimit(t *testing.T) {
	derived, err := openLogsCap(0, 20_000)
	require.NoError(t, err)
	require.Equal(t, 2_500, derived)
	require.Less(t, derived*descriptorsPerLogBudget, 20_000)
	derived, err = openLogsCap(0, 64)
	require.NoError(t, err)
	require.Equal(t, openLogsDerivedMin, derived)
	derived, err = openLogsCap(0, 1<<40)
	require.NoError(t, err)
	require.Equal(t, openLogsDerivedMax, derived)

	configured, err := openLogsCap(100, 20_000)
	require.NoError(t, err)
	require.Equal(t, 100, configured)
	_, err = openLogsCap(2_501, 20_000)
	require.ErrorContains(t, err, "storage.open_logs_max 2501")

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
	require.LessOrEqual(t, uint64(opts.Node.OpenLogsMax), max(logsDescriptorShare(limit), openLogsDerivedMin))
}
