package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// MaxBackoff caps every pause of an ack's retries, a reply's Retry-After
// included (a proxy's long one would keep `narad sub`, whose retries Ctrl-C
// does not cut short, on one ack for minutes).
func TestAckRetryPausesAreCappedByMaxBackoff(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "2") // a proxy in front, say
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"unavailable"}`))
	}))
	defer server.Close()
	broker := New(server.URL)
	policy := AckRetry{Attempts: 3, FirstBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	retries, err := broker.AckRetrying(ctx, "t", "h", policy)
	elapsed := time.Since(start)
	require.Equal(t, 2, retries)
	require.True(t, IsStatus(err, http.StatusServiceUnavailable), "err %v", err)
	require.Less(t, elapsed, time.Second,
		"two pauses, each capped by MaxBackoff = 50 ms, took %v", elapsed)
}
