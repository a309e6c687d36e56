package host

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientFrom is an HTTP client whose connections leave from the loopback
// address ip (any 127.0.0.0/8 address is this host's on Linux).
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	transport := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// TestOneAddressGuessingAcrossUsersIsThrottled: wrong passwords for
// several users from 127.0.0.1 (none of whose own buckets empties) run
// bcrypt SourceBucketBurst times, then answer 429 with the source's
// Retry-After without bcrypt, even for a right password not verified
// yet, or a password change's current password; from 127.0.0.2 a user
// logs in at once and a wrong guess is a plain 401; credentials verified
// before still pass from 127.0.0.1.
func TestOneAddressGuessingAcrossUsersIsThrottled(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	root := as{"admin", rootPassword}
	waitSeeded(t, h, root)
	var users []as
	for i := range 6 {
		users = append(users, addUser(t, h, fmt.Sprintf("u%d", i), `[]`))
	}
	cfg := h.opts.Security.Auth
	require.Less(t, cfg.SourceBucketBurst, 5*cfg.BucketBurst, "the five users' buckets outlast the source's")
	authenticator := h.loop.authenticator
	before := authenticator.VerifyRuns()
	for i := range cfg.SourceBucketBurst {
		mustAs(t, h, as{users[i%5].user, fmt.Sprintf("guess-%d", i)}, get("/v1/topics"), http.StatusUnauthorized)
	}
	require.Equal(t, uint64(cfg.SourceBucketBurst), authenticator.VerifyRuns()-before, "one bcrypt run per failure")

	status, body, header := callAs(t, h, as{users[0].user, "guess-next"}, get("/v1/topics"))
	require.Equal(t, http.StatusTooManyRequests, status, body)
	require.JSONEq(t, `{"error":"too many failed authentication attempts"}`, body)
	require.Equal(t, "3", header.Get("Retry-After"), "the time the address's bucket takes to regain a token")
	mustAs(t, h, users[5], get("/v1/topics"), http.StatusTooManyRequests)
	mustAs(t, h, as{"nobody", "pw"}, get("/v1/topics"), http.StatusTooManyRequests)
	require.Equal(t, uint64(cfg.SourceBucketBurst), authenticator.VerifyRuns()-before, "a throttled address costs no bcrypt")
	mustAs(t, h, root, get("/v1/topics"), http.StatusOK)

	other := clientFrom(t, "127.0.0.2")
	status, body, _ = callFrom(t, h, other, users[5], get("/v1/topics"))
	require.Equal(t, http.StatusOK, status, "another address keeps its own bucket: %s", body)
	status, _, _ = callFrom(t, h, other, as{users[1].user, "guess-other"}, get("/v1/topics"))
	require.Equal(t, http.StatusUnauthorized, status)
	mustAs(t, h, users[5], get("/v1/topics"), http.StatusOK) // verified from 127.0.0.2: cached
	mustAs(t, h, users[5], put("/v1/users/u5/password", `{"current_password":"guess","new_password":"pw2"}`),
		http.StatusTooManyRequests) // the current password is checked against 127.0.0.1's bucket too

	metrics := mustAs(t, h, as{}, get("/metrics"), http.StatusOK)
	require.Contains(t, metrics, `narad_auth_attempts_total{result="source_throttled"} 4`)
	require.Contains(t, metrics, "narad_auth_sources_tracked 2", "127.0.0.1 and 127.0.0.2 both failed")
}
