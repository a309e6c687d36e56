package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/wire"
)

// An address longer than the node-to-node messages carry is refused at
// start: a peer or listener address of more than wire.AddressBytesMax
// bytes reached the wire's encoder in a heartbeat and ended the process.
func TestAnAddressLongerThanTheWireCarriesIsRefused(t *testing.T) {
	require.Equal(t, wire.AddressBytesMax, addressBytesMax, "the bound must be the wire's")
	long := strings.Repeat("h", addressBytesMax) + ":7943"
	_, err := ParsePeer("n2@" + long)
	require.ErrorContains(t, err, "at most 1024 bytes")
	c := Default()
	c.HTTP.Addr = long
	require.ErrorContains(t, c.Validate(), "http.addr")
}

// The address a member advertises for its API (http.addr, a wildcard
// host replaced by the host of its cluster.peers entry) travels in its
// heartbeats too. Derived from two addresses each within the bound, it
// can pass it: such a configuration is refused, not started to end at the
// first heartbeat (host's TestAValidConfigurationAdvertisesNoAddressTheWireCannotCarry).
func TestAnAdvertisedAddressLongerThanTheWireCarriesIsRefused(t *testing.T) {
	c := Default()
	c.Cluster.NodeID, c.Cluster.Addr, c.Security.ClusterSecret = "n2", ":7943", "s3cret-of-16-bytes"
	c.Cluster.Peers = []string{"n1@10.0.0.1:7943", "n2@" + strings.Repeat("h", addressBytesMax-len(":7943")-2) + ":7943", "n3@10.0.0.3:7943"}
	c.HTTP.Addr = ":0000007942"
	require.ErrorContains(t, c.Validate(), "advertises")
	c.HTTP.Addr = ":7942" // four bytes, as its cluster port: it fits
	require.NoError(t, c.Validate())
	require.Equal(t, "10.0.0.2:7942", AdvertiseAddr(":7942", "10.0.0.2:7943"))
	require.Equal(t, "[fd00::2]:7942", AdvertiseAddr("[::]:7942", "[fd00::2]:7943"))
	require.Equal(t, "192.168.1.5:7942", AdvertiseAddr("192.168.1.5:7942", "10.0.0.2:7943"))
}
