package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"narad/msg"
)

// bigConsumeBackend answers every consume with messages records of
// payloadBytes each; the rest as tableBackend does.
type bigConsumeBackend struct {
	*tableBackend
	messages, payloadBytes int
}

func (b *bigConsumeBackend) Do(ctx context.Context, req msg.Request) msg.Reply {
	consume, ok := req.(msg.Consume)
	if !ok {
		return b.tableBackend.Do(ctx, req)
	}
	payload := bytes.Repeat([]byte("x"), b.payloadBytes)
	result := msg.ConsumeResult{Batch: consume.Max > 0}
	for i := range b.messages {
		result.Messages = append(result.Messages, msg.Message{Topic: consume.Topic, Offset: uint64(i), Payload: payload,
			ReceiptHandle: "handle-" + string(rune('a'+i))})
	}
	return msg.Reply{Result: result}
}

// A consume reply holds its encoded bytes from the reply budget until it
// is written: while a client that does not read holds most of the
// budget, another consume is answered 503 with Retry-After and its
// records are handed back; once the first reply is read, the budget is
// free again.
func TestReplyBudgetRefusesConsumesWhileRepliesHoldIt(t *testing.T) {
	backend := &bigConsumeBackend{tableBackend: &tableBackend{}, messages: 20, payloadBytes: 1 << 20}
	cfg := DefaultCodecConfig()
	cfg.ReplyBytesInFlightMax = 24 << 20 // one 20 MiB reply fits, two do not
	registry := prometheus.NewRegistry()
	server := httptest.NewServer(NewHandler(backend, NewCodec(cfg), registry, slog.New(slog.DiscardHandler)))
	t.Cleanup(server.Close)

	// The first reply is larger than what the loopback socket buffers
	// take, so its write waits for a reader that does not come yet.
	slow, err := net.Dial("tcp", server.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = slow.Close() })
	_, err = slow.Write([]byte("GET /v1/topics/t/consume?max=20 HTTP/1.1\r\nHost: test\r\n\r\n"))
	require.NoError(t, err)
	deadline := time.Now().Add(20 * time.Second)
	for series(t, registry, "narad_http_reply_bytes_in_flight")[""] == 0 {
		require.True(t, time.Now().Before(deadline), "the first reply never took from the budget")
		time.Sleep(5 * time.Millisecond)
	}

	response, err := server.Client().Get(server.URL + "/v1/topics/t/consume?max=20")
	require.NoError(t, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	require.NoError(t, response.Body.Close())
	require.Equal(t, http.StatusServiceUnavailable, response.StatusCode, string(body))
	require.Equal(t, "1", response.Header.Get("Retry-After"))
	require.Contains(t, string(body), "reply bytes in flight")
	require.Equal(t, 1.0, series(t, registry, "narad_http_reply_budget_refused_total")[""])
	backend.mu.Lock()
	handedBack := backend.handedBack
	backend.mu.Unlock()
	require.Len(t, handedBack, 1, "the refused reply's records go back to the node")
	require.Len(t, handedBack[0].Result.(msg.ConsumeResult).Messages, 20)

	// Reading the first reply to its end gives its bytes back.
	reader := bufio.NewReader(slow)
	first, err := http.ReadResponse(reader, nil)
	require.NoError(t, err)
	firstBody, err := io.ReadAll(first.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Greater(t, len(firstBody), 20<<20)
	for series(t, registry, "narad_http_reply_bytes_in_flight")[""] != 0 {
		require.True(t, time.Now().Before(deadline), "the first reply's bytes were never given back")
		time.Sleep(5 * time.Millisecond)
	}
	response, err = server.Client().Get(server.URL + "/v1/topics/t/consume?max=20")
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, response.Body)
	require.NoError(t, err)
	require.NoError(t, response.Body.Close())
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, 24.0*(1<<20), series(t, registry, "narad_http_reply_bytes_in_flight_max")[""])
}

// A reply larger than the whole budget is sent when no other is held,
// rather than never; replies of other routes are not charged.
func TestReplyBudgetSendsAnOversizedReplyAlone(t *testing.T) {
	budget := newReplyBudget(1<<20, prometheus.NewRegistry())
	require.True(t, budget.take(3<<20), "alone, a reply above the cap is admitted")
	require.False(t, budget.take(1), "nothing more while it is held")
	budget.give(3 << 20)
	require.True(t, budget.take(1<<20))
	require.False(t, budget.take(1))

	backend := &bigConsumeBackend{tableBackend: &tableBackend{}, messages: 2, payloadBytes: 1 << 20}
	cfg := DefaultCodecConfig()
	cfg.ReplyBytesInFlightMax = 1 << 20
	registry := prometheus.NewRegistry()
	server := httptest.NewServer(NewHandler(backend, NewCodec(cfg), registry, slog.New(slog.DiscardHandler)))
	t.Cleanup(server.Close)
	response, err := server.Client().Get(server.URL + "/v1/topics/t/consume?max=2")
	require.NoError(t, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	require.NoError(t, response.Body.Close())
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, 2, strings.Count(string(body), `"receipt_handle"`))
	// The handler gives the bytes back once its write returned, which may
	// be just after the client read the last byte.
	gaugeReaches(t, registry, "narad_http_reply_bytes_in_flight", 0)
}
