package node

import (
	"strings"
	"testing"

	"narad/meta"

	"github.com/stretchr/testify/require"
)

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := DefaultConfig()
	require.ErrorContains(t, cfg.Validate(), "handle key of 0 bytes", "the driver must draw the handle key")
	cfg.HandleKey = testHandleKey
	require.NoError(t, cfg.Validate())
	cfg.NodeID = strings.Repeat("n", NodeIDBytesMax+1)
	cfg.DefaultPartitions = 2
	cfg.WaitersMax = 0
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{"node id must be 1 to 64 bytes", "default partitions 2", "waiters max"} {
		require.Contains(t, err.Error(), want)
	}
}

// Property: a node may not allow topics of more partitions than the
// metastore takes (it would propose creates every replica refuses).
func TestConfigPartitionsMaxIsWithinTheMetastoresBound(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HandleKey = testHandleKey
	cfg.PartitionsMax = meta.PartitionsMax
	require.NoError(t, cfg.Validate())
	cfg.PartitionsMax = meta.PartitionsMax + 1
	require.ErrorContains(t, cfg.Validate(), "partitions max 4097 outside [3, 4096]")
}
