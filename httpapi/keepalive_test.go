package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestProduceKeepsConnection: a produce whose body the handler read and
// closed early is answered on a connection the next request reuses, so
// closing the body cost no keep-alive; one with a body over the cap is
// refused (413) and the connection still serves the next request.
func TestProduceKeepsConnection(t *testing.T) {
	handler := NewHandler(instantBackend{}, newTestCodec(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	server := httptest.NewServer(handler)
	defer server.Close()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	reused := make([]bool, 0, 3)
	send := func(payload string) int {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }}
		request, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace),
			http.MethodPost, server.URL+"/v1/topics/orders/produce", strings.NewReader(payload))
		require.NoError(t, err)
		request.Header.Set("Content-Type", "application/octet-stream")
		response, err := client.Do(request)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, response.Body)
		require.NoError(t, response.Body.Close())
		require.NotEmpty(t, response.Header.Get("Content-Length"))
		return response.StatusCode
	}
	require.Equal(t, http.StatusAccepted, send("first"))
	require.Equal(t, http.StatusAccepted, send("second"))
	require.Equal(t, []bool{false, true}, reused)
	require.Equal(t, http.StatusRequestEntityTooLarge, send(strings.Repeat("x", int(newTestCodec().config.MessageBodyBytesMax)+1)))
	require.Equal(t, http.StatusAccepted, send("after the refusal"))
}
