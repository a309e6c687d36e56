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
