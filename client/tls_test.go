package client

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// healthyTLSServer is an https server whose certificate the system does
// not know, answering every request as a healthy node; the pool holds its
// certificate.
func healthyTLSServer(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(server.Close)
	pool := x509.NewCertPool()
	pool.AddCert(server.Certificate())
	return server, pool
}

// TestWithRootCAsTrustsTheGivenCA: an https server whose certificate the
// system does not know is reached with its CA, whatever the order of the
// options, and refused without it.
func TestWithRootCAsTrustsTheGivenCA(t *testing.T) {
	server, pool := healthyTLSServer(t)
	ctx := context.Background()

	_, err := New(server.URL, WithRootCAs(pool), WithHTTPClient(&http.Client{})).Healthz(ctx)
	require.NoError(t, err)
	_, err = New(server.URL, WithHTTPClient(&http.Client{}), WithRootCAs(pool)).Healthz(ctx)
	require.NoError(t, err)
	_, err = New(server.URL).Healthz(ctx)
	require.ErrorContains(t, err, "certificate")
}

// poolTakingTransport is a RootCAsTransport that records the pool it was
// handed and sends through a transport trusting it.
type poolTakingTransport struct {
	pool     *x509.CertPool
	standard *http.Transport
}

func (t *poolTakingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.standard.RoundTrip(req)
}

func (t *poolTakingTransport) WithRootCAs(pool *x509.CertPool) http.RoundTripper {
	return &poolTakingTransport{pool: pool, standard: TransportWithRootCAs(t.standard, pool)}
}

// TestWithRootCAsHandsThePoolToARootCAsTransport: a transport that takes
// the pool itself keeps its own kind (it is not replaced by a clone of
// Go's default transport) and trusts the CA.
func TestWithRootCAsHandsThePoolToARootCAsTransport(t *testing.T) {
	server, pool := healthyTLSServer(t)
	original := &poolTakingTransport{standard: &http.Transport{}}

	c := New(server.URL, WithHTTPClient(&http.Client{Transport: original}), WithRootCAs(pool))
	_, err := c.Healthz(context.Background())
	require.NoError(t, err)
	taken, ok := c.httpClient.Transport.(*poolTakingTransport)
	require.True(t, ok, "the transport is %T", c.httpClient.Transport)
	require.Same(t, pool, taken.pool)
	require.Nil(t, original.pool, "the caller's transport is left as it was")
}
