package host

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire"
)

// The address a node advertises for its API (http.addr, a wildcard host
// replaced by the host of its own cluster.peers entry) travels in its
// heartbeats and join requests like its cluster address: a configuration
// that validates must not derive one the wire cannot carry, which ended
// the process at its first heartbeat (an invariant panic in the encoder).
// Each address alone is within config's bound; their combination is not.
func TestAValidConfigurationAdvertisesNoAddressTheWireCannotCarry(t *testing.T) {
	cfg := clusterConfig()
	cfg.Security.ClusterSecret = "s3cret-of-16-bytes"
	longHost := strings.Repeat("h", wire.AddressBytesMax-len(":7943")-2)
	cfg.Cluster.Peers = []string{"n1@10.0.0.1:7943", "n2@" + longHost + ":7943", "n3@10.0.0.3:7943"}
	cfg.HTTP.Addr = ":0000007942" // a wildcard host and a port of leading zeros: both valid
	if err := cfg.Validate(); err != nil {
		return // refused at start, with a message: what the bound is for
	}
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	require.NotPanics(t, func() {
		_, _ = wire.EncodeEnvelope(nil, msg.Envelope{From: "n2", To: "n1",
			Message: msg.Heartbeat{HTTPAddr: opts.Node.AdvertiseAddr, ClusterAddr: opts.Node.ClusterAddr}})
	}, "advertised %d bytes, the wire carries %d", len(opts.Node.AdvertiseAddr), wire.AddressBytesMax)
}
