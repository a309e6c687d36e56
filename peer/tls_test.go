package peer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// authority is a throwaway certificate authority for one test.
type authority struct {
	certificate *x509.Certificate
	key         *ecdsa.PrivateKey
	pool        *x509.CertPool
}

func newAuthority(t testing.TB, name string) authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	certificate, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(certificate)
	return authority{certificate: certificate, key: key, pool: pool}
}

// issue signs a certificate for a node on 127.0.0.1, good for both ends of
// a connection.
func (a authority) issue(t testing.TB, nodeID string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: nodeID},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.certificate, &key.PublicKey, a.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// mutualTLS is the TLS config of a node trusting authority; without a
// certificate the node can still verify servers but cannot be a client.
func mutualTLS(trusted authority, own *tls.Certificate) *tls.Config {
	config := &tls.Config{
		RootCAs: trusted.pool, ClientCAs: trusted.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13,
	}
	if own != nil {
		config.Certificates = []tls.Certificate{*own}
	}
	return config
}

func tlsConfig(id string, trusted authority, own *tls.Certificate) Config {
	cfg := testConfig(id, nil)
	cfg.TLS = mutualTLS(trusted, own)
	return cfg
}

// Two nodes exchange every message type over mutual TLS, in order.
func TestMutualTLSExchange(t *testing.T) {
	checkGoroutinesEnd(t)
	ca := newAuthority(t, "cluster ca")
	certificateA, certificateB := ca.issue(t, "a"), ca.issue(t, "b")
	a := startTransport(t, tlsConfig("a", ca, &certificateA))
	b := startTransport(t, tlsConfig("b", ca, &certificateB))
	require.NoError(t, a.SetPeer("b", b.Addr()))
	require.NoError(t, b.SetPeer("a", a.Addr()))

	toB := sendStream(t, a, "a", "b", 20)
	toA := sendStream(t, b, "b", "a", 20)
	require.Equal(t, toB, receiveFrom(t, b.inbox, len(toB))["a"])
	require.Equal(t, toA, receiveFrom(t, a.inbox, len(toA))["b"])
	require.Zero(t, a.Stats().Peers["b"].AuthFailures)
	require.Zero(t, b.Stats().InboundAuthFailures)
}

// A dialer without a client certificate, or with one from another
// authority, is refused by the listener even though it knows the secret.
func TestMutualTLSRefusesClientWithoutTrustedCertificate(t *testing.T) {
	checkGoroutinesEnd(t)
	ca, stranger := newAuthority(t, "cluster ca"), newAuthority(t, "other ca")
	certificateB := ca.issue(t, "b")
	// Short handshakes: a plaintext dialer and a TLS listener each wait
	// for the other to speak first, until the timeout.
	const handshakeTimeout = 200 * time.Millisecond
	listenerConfig := tlsConfig("b", ca, &certificateB)
	listenerConfig.HandshakeTimeout = handshakeTimeout
	b := startTransport(t, listenerConfig)
	strangerCertificate := stranger.issue(t, "c")
	clients := map[string]Config{
		"no certificate":    tlsConfig("c", ca, nil),
		"other authority":   tlsConfig("c", ca, &strangerCertificate),
		"no tls whatsoever": testConfig("c", nil),
	}
	// A refused certificate is an authentication failure on both sides;
	// a dialer without TLS times out, a handshake error on both.
	inboundFailures := func() uint64 { return b.Stats().InboundAuthFailures + b.Stats().InboundHandshakeErrors }
	failures := uint64(0)
	for name, cfg := range clients {
		cfg.Peers = map[string]string{"b": b.Addr()}
		cfg.HandshakeTimeout = handshakeTimeout
		c := startTransport(t, cfg)
		requireEventually(t, func() bool {
			c.Send(msg.Envelope{From: "c", To: "b", Message: msg.Notify{Topic: name}})
			outbound := c.Stats().Peers["b"]
			refusedHere := outbound.AuthFailures >= 1 || (name == "no tls whatsoever" && outbound.DialFailures >= 1)
			return refusedHere && inboundFailures() > failures
		}, "%s: refusal not counted on both sides", name)
		failures = inboundFailures()
		require.Zero(t, c.Stats().Peers["b"].Connections, name)
		require.NoError(t, c.Close())
	}
	require.Zero(t, b.Stats().Delivered)
	b.inbox.requireEmpty()
}
