package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedAcks answers acks from a script of statuses; 0 breaks the
// connection without an answer. It records the handles it was sent.
type scriptedAcks struct {
	mu      sync.Mutex // guards the fields below
	script  []int
	handles []string
}

func (s *scriptedAcks) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.handles = append(s.handles, r.URL.Query().Get("receipt_handle"))
	status := s.script[0]
	if len(s.script) > 1 {
		s.script = s.script[1:]
	}
	s.mu.Unlock()
	if status == 0 {
		connection, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = connection.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status != http.StatusNoContent {
		_, _ = w.Write([]byte(`{"error":"scripted"}`))
	}
}

func ackAgainst(t *testing.T, script ...int) (*scriptedAcks, int, error) {
	t.Helper()
	acks := &scriptedAcks{script: script}
	server := httptest.NewServer(http.HandlerFunc(acks.serve))
	t.Cleanup(server.Close)
	policy := AckRetry{Attempts: 4, FirstBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	retries, err := New(server.URL).AckRetrying(context.Background(), "orders", "1:42:3", policy)
	return acks, retries, err
}

func TestAckRetryingRetriesLostAndRetryableAnswers(t *testing.T) {
	acks, retries, err := ackAgainst(t, 0, 503, 204)
	require.NoError(t, err)
	assert.Equal(t, 2, retries)
	assert.Equal(t, []string{"1:42:3", "1:42:3", "1:42:3"}, acks.handles, "always the same handle")
}

func TestAckRetryingStopsAtADefiniteAnswer(t *testing.T) {
	for _, status := range []int{410, 400, 404} {
		acks, retries, err := ackAgainst(t, 503, status)
		assert.True(t, IsStatus(err, status), "status %d: %v", status, err)
		assert.Equal(t, 1, retries)
		assert.Len(t, acks.handles, 2)
	}
}

func TestAckRetryingIsBounded(t *testing.T) {
	acks, retries, err := ackAgainst(t, 503)
	assert.True(t, IsStatus(err, 503))
	assert.Equal(t, 3, retries)
	assert.Len(t, acks.handles, 4, "Attempts requests at most")
}

func TestAckRetryingRefusesABadPolicy(t *testing.T) {
	_, err := New("http://127.0.0.1:1").AckRetrying(context.Background(), "orders", "1:2:3", AckRetry{})
	assert.ErrorIs(t, err, errAckRetryInvalid)
}

// A retried ack waits at least the Retry-After of the 503 it got.
func TestAckRetryingWaitsTheRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		first := len(times) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"partition is being handed over"}` + "\n"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(server.Close)
	retries, err := New(server.URL).AckRetrying(context.Background(), "orders", "1:2:3", DefaultAckRetry())
	require.NoError(t, err)
	require.Equal(t, 1, retries)
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, times[1].Sub(times[0]), time.Second, "the retry came before the Retry-After")
}

func TestParseRetryAfter(t *testing.T) {
	for value, want := range map[string]time.Duration{"1": time.Second, " 3 ": 3 * time.Second, "": 0, "-1": 0,
		"0": 0, "Wed, 21 Oct 2015 07:28:00 GMT": 0, "3600": retryAfterMax} {
		require.Equal(t, want, parseRetryAfter(value), "%q", value)
	}
}
