package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Property: an address is loopback when it can be reached only from this
// machine: a loopback IP of either family, or localhost; an empty host,
// a wildcard, another interface's address or a malformed address is not.
func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7942": true, "127.0.0.2:80": true, "[::1]:7942": true, "localhost:7942": true,
		":7942": false, "0.0.0.0:7942": false, "[::]:7942": false, "10.0.0.1:7942": false,
		"example.com:7942": false, "127.0.0.1": false, "": false,
	} {
		require.Equal(t, want, LoopbackAddr(addr), "%q", addr)
	}
}
