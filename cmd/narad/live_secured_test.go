package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"narad/host"
)

// securedServer starts a real node with authentication on and the root
// user "admin" seeded with password root-pw.
func securedServer(t *testing.T) string {
	t.Helper()
	opts := host.DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Security.Enabled, opts.Security.AdminPassword = true, "root-pw"
	opts.Security.Auth.BcryptCost = bcrypt.MinCost
	h, err := host.Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	server := "http://" + h.Addr()
	probe := newHarness(t)
	for range 500 { // the leader seeds the root on one of its first ticks
		if probe.run("-s", server, "-u", "admin", "-p", "root-pw", "user", "ls") == 0 {
			return server
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the root user was not seeded: %s", probe.stderr)
	return ""
}

// TestLiveVerbsAgainstSecuredServer: the CLI's verbs with credentials
// from flags, from NARAD_USER/NARAD_PASS and from a context, and without
// any (401).
func TestLiveVerbsAgainstSecuredServer(t *testing.T) {
	server := securedServer(t)
	h := newHarness(t)
	require.Equal(t, 1, h.run("-s", server, "topic", "ls"))
	require.Contains(t, h.stderr.String(), "http 401: authentication required")

	h.env["NARAD_USER"], h.env["NARAD_PASS"] = "admin", "root-pw"
	h.runOK("-s", server, "user", "add", "alice", "--user-password", "a-pw",
		"--grant", "create:orders*", "--grant", "produce:orders*,logs", "--grant", "consume:orders*")
	require.Contains(t, h.stdout.String(), `"username": "alice"`)
	require.NotContains(t, h.stdout.String(), "a-pw")
	h.runOK("-s", server, "user", "ls")
	var users []map[string]any
	require.NoError(t, json.Unmarshal(h.stdout.Bytes(), &users))
	require.Len(t, users, 2)
	h.runOK("-s", server, "user", "info", "admin")
	require.Contains(t, h.stdout.String(), `"root": true`)
	require.Equal(t, 2, h.run("-s", server, "user", "add", "bob", "--user-password", "x", "--grant", "produce:"))

	delete(h.env, "NARAD_USER")
	delete(h.env, "NARAD_PASS")
	h.runOK("-s", server, "-u", "alice", "-p", "a-pw", "ctx", "add", "alice", "--server", server, "-u", "alice", "-p", "a-pw")
	h.runOK("topic", "add", "orders", "--partitions", "3")
	require.Contains(t, h.stdout.String(), `"owner": "alice"`)
	h.runOK("topic", "ls")
	h.runOK("topic", "edit", "orders", "--visibility", "7s")
	h.runOK("pub", "orders", "hello", "--partition", "0")
	h.runOK("sub", "orders", "--max", "1", "--wait", "1s")
	require.Contains(t, h.stdout.String(), "hello")
	h.runOK("replay", "orders", "--partition", "0")
	h.runOK("sub", "orders", "--peek", "--partition", "0", "--from", "0", "--max", "1")
	h.runOK("bench", "orders", "--count", "20", "--workers", "2")
	h.runOK("cluster", "members")
	h.runOK("cluster", "moves")
	require.Equal(t, 1, h.run("user", "ls"))
	require.Contains(t, h.stderr.String(), "http 403")
	require.Equal(t, 1, h.run("topic", "add", "billing"))
	require.Contains(t, h.stderr.String(), "http 403")

	h.runOK("user", "passwd", "alice", "--current-password", "a-pw", "--new-password", "a-pw2")
	require.Equal(t, 1, h.run("topic", "ls"), "the context still holds the old password")
	require.Contains(t, h.stderr.String(), "http 401")
	h.runOK("-p", "a-pw2", "topic", "rm", "orders", "-f")

	admin := []string{"-s", server, "-u", "admin", "-p", "root-pw"}
	h.runOK(append(admin, "user", "grant", "alice", "--grant", "consume:x")...)
	require.Contains(t, h.stdout.String(), `"patterns": [`)
	h.runOK(append(admin, "user", "rm", "alice")...)
	require.Equal(t, 1, h.run(append(admin, "user", "info", "alice")...))
	require.Contains(t, h.stderr.String(), "http 404")
	require.Equal(t, 1, h.run(append(admin, "user", "rm", "admin")...))
	require.Contains(t, h.stderr.String(), "http 403")
}
