package httpserve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	parsed, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestTLS: a TLS connection is served with the request's TLS state set;
// plain HTTP to the TLS listener gets a 400 that says why.
func TestTLS(t *testing.T) {
	certificate, pool := selfSigned(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listener := tls.NewListener(inner, &tls.Config{Certificates: []tls.Certificate{certificate}})
	server := New(Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || !r.TLS.HandshakeComplete {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})})
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	defer func() {
		require.NoError(t, server.Close())
		require.ErrorIs(t, <-served, ErrServerClosed)
	}()
	client := &http.Client{Timeout: testTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	for range 2 {
		response, err := client.Get("https://" + inner.Addr().String() + "/")
		require.NoError(t, err)
		require.NoError(t, response.Body.Close())
		require.Equal(t, http.StatusOK, response.StatusCode)
	}
	plain := dial(t, inner.Addr().String())
	plain.send(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	response, body := plain.response(t, "GET")
	require.Equal(t, http.StatusBadRequest, response.StatusCode)
	require.Contains(t, body, "HTTPS")
}
