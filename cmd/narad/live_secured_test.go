package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
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

// TestLiveHTTPSWithCAFile: the CLI reaches an HTTPS server whose
// certificate it trusts through --ca-file, and refuses it without.
func TestLiveHTTPSWithCAFile(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
	opts := host.DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Security.TLSCertFile, opts.Security.TLSKeyFile = certFile, keyFile
	h, err := host.Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	server := "https://" + h.Addr()

	cli := newHarness(t)
	cli.runOK("-s", server, "--ca-file", certFile, "topic", "add", "orders")
	require.Contains(t, cli.stdout.String(), `"name": "orders"`)
	cli.runOK("-s", server, "--ca-file", certFile, "bench", "orders", "--count", "10", "--workers", "2")
	require.Equal(t, 1, cli.run("-s", server, "topic", "ls"))
	require.Contains(t, cli.stderr.String(), "certificate")
	require.Equal(t, exitUsage, cli.run("-s", server, "--ca-file", keyFile, "topic", "ls"), "a file that cannot be used, as the root help says")
	require.Contains(t, cli.stderr.String(), "no PEM certificate")
}

// writeSelfSigned writes a certificate for 127.0.0.1 signed by itself.
func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "narad cli test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
}
