package client

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithRootCAsTrustsTheGivenCA: an https server whose certificate the
// system does not know is reached with its CA, whatever the order of the
// options, and refused without it.
func TestWithRootCAsTrustsTheGivenCA(t *testing.T) {
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	defer server.Close()
	pool := x509.NewCertPool()
	pool.AddCert(server.Certificate())
	ctx := context.Background()

	_, err := New(server.URL, WithRootCAs(pool), WithHTTPClient(&http.Client{})).Healthz(ctx)
	require.NoError(t, err)
	_, err = New(server.URL, WithHTTPClient(&http.Client{}), WithRootCAs(pool)).Healthz(ctx)
	require.NoError(t, err)
	_, err = New(server.URL).Healthz(ctx)
	require.ErrorContains(t, err, "certificate")
}
