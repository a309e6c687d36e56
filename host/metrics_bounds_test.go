package host

import (
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/node"
	"narad/wire"
)

// sampleInventory runs the inventory sample now, without waiting for its
// ticker.
func sampleInventory(h *Host) {
	sampled := make(chan struct{})
	h.loop.post(func(*node.Node) { close(sampled) })
	h.loop.requestStats()
	h.loop.post(func(*node.Node) {})
	<-sampled
}

// The users and the schema bytes of the cluster are shown against their
// bounds (hostile-client audit: no metric showed them), with security on
// (the users published to the authenticator) and off (none).
func TestStateBoundGauges(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	admin := as{"admin", rootPassword}
	waitSeeded(t, h, admin)
	status, body, _ := callAs(t, h, admin, postJSON("/v1/users", `{"username":"alice","password":"alice-password"}`))
	require.Equal(t, 201, status, body)
	status, body, _ = callAs(t, h, admin, postJSON("/v1/topics", `{"name":"orders","schema":`+orderSchema+`}`))
	require.Equal(t, 201, status, body)
	status, body, _ = callAs(t, h, admin, patch("/v1/topics/orders", `{"schema":`+orderSchemaV2+`}`))
	require.Equal(t, 200, status, body)
	sampleInventory(h)
	_, scrape, _ := callAs(t, h, admin, get("/metrics"))
	require.Contains(t, scrape, "\nnarad_users 2\n", "the root user and alice")
	require.Contains(t, scrape, "\nnarad_users_max 10000\n")
	require.Contains(t, scrape, "\nnarad_schema_bytes "+strconv.Itoa(len(orderSchema)+len(orderSchemaV2))+"\n", "both kept versions")
	require.Contains(t, scrape, "\nnarad_schema_bytes_max 3.3554432e+07\n")
	require.Contains(t, scrape, "\nnarad_users_bytes_max 1.6777216e+07\n")
	require.Regexp(t, `\nnarad_users_bytes [1-9][0-9]{2,}\n`, scrape, "two users' names, hashes and grants")

	plain := testHost(t)
	sampleInventory(plain)
	_, scrape = call(t, plain, get("/metrics"))
	require.Contains(t, scrape, "\nnarad_wire_version "+strconv.Itoa(wire.Version)+"\n", "which peers this node can talk to")
	require.Contains(t, scrape, "\nnarad_users 0\n")
	require.Contains(t, scrape, "\nnarad_users_bytes 0\n")
	require.Contains(t, scrape, "\nnarad_schema_bytes 0\n")
}
