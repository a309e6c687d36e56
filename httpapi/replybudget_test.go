package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	"pgregory.net/rapid"

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

// Property: the bound charged before a consume or replay reply is encoded
// is never below the encoded size, whatever the bytes of its strings:
// control characters and <, > and & (six bytes each), invalid UTF-8
// (base64), JSON payloads (as they are), the largest numbers and a
// dead-letter origin.
func TestReplyBytesBoundIsAnUpperBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.SliceOfN(rapid.SampledFrom([]byte("a\x00\x1f\"\\<>&\u2028\xff{}[]1 ,:")), 0, 64)
		messages := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) msg.Message {
			message := msg.Message{Topic: string(text.Draw(t, "topic")), Key: text.Draw(t, "key"),
				Payload: text.Draw(t, "payload"), ReceiptHandle: string(text.Draw(t, "handle")),
				Partition: rapid.IntRange(0, 1<<31).Draw(t, "partition"), Offset: rapid.Uint64().Draw(t, "offset"),
				TimestampMs: rapid.Int64().Draw(t, "timestamp"), DeliveryCount: rapid.Uint32().Draw(t, "deliveries")}
			if rapid.Bool().Draw(t, "json") {
				message.Payload = []byte(`{"a":[1,"<&>"]}`)
			}
			if rapid.Bool().Draw(t, "dead letter") {
				message.DeadLetter = &msg.DeadLetterOrigin{Topic: string(text.Draw(t, "source")), Partition: 1 << 31,
					Offset: rapid.Uint64().Draw(t, "source offset"), DeliveryCount: rapid.Uint32().Draw(t, "source deliveries")}
			}
			return message
		}), 1, 8).Draw(t, "messages")
		batch := rapid.Bool().Draw(t, "batch")
		request, reply := msg.Request(msg.Consume{Topic: "t", Max: len(messages)}), msg.Reply{Result: msg.ConsumeResult{Messages: messages, Batch: true}}
		switch {
		case !batch && rapid.Bool().Draw(t, "replay"):
			request, reply = msg.Replay{Topic: "t"}, msg.Reply{Result: msg.ReplayResult{Message: &messages[0]}}
		case !batch:
			request, reply = msg.Consume{Topic: "t"}, msg.Reply{Result: msg.ConsumeResult{Messages: messages[:1]}}
		}
		bound, budgeted := replyBytesBound(request, reply)
		require.True(t, budgeted)
		encoded := Encode(request, reply)
		require.Equal(t, http.StatusOK, encoded.Status)
		require.LessOrEqual(t, int64(len(encoded.Body)), bound)
	})
}

// A consume reply takes the bound of its encoding from the budget before
// it is encoded: a batch of text payloads that could encode to six times
// their size is refused (503, records handed back) when that bound does
// not fit beside a reply already held, and the bytes held once encoded
// are the body's buffer's.
func TestReplyBudgetChargesTheBoundBeforeEncoding(t *testing.T) {
	backend := &bigConsumeBackend{tableBackend: &tableBackend{}, messages: 4, payloadBytes: 100}
	cfg := DefaultCodecConfig()
	cfg.ReplyBytesInFlightMax = 8 << 10
	registry := prometheus.NewRegistry()
	api := NewHandler(backend, NewCodec(cfg), registry, slog.New(slog.DiscardHandler)).(*front).routes
	require.True(t, api.replies.take(4<<10)) // a reply being written
	request, reply := msg.Consume{Topic: "t", Max: 4}, backend.Do(context.Background(), msg.Consume{Topic: "t", Max: 4})
	bound, _ := replyBytesBound(request, reply)
	require.Less(t, bound, int64(4<<10), "plain text payloads bound close to their size")
	response := api.budgetReply(request, reply)
	require.Equal(t, http.StatusOK, response.Status)
	require.Equal(t, int64(cap(response.Body)), response.held, "the buffer is what stays held")
	require.Equal(t, (4<<10)+response.held, api.replies.Held())
	api.replies.give(response.held)

	text := msg.Message{Topic: "t", Payload: bytes.Repeat([]byte{0x01}, 800), ReceiptHandle: "h"}
	reply = msg.Reply{Result: msg.ConsumeResult{Messages: []msg.Message{text}, Batch: true}}
	response = api.budgetReply(msg.Consume{Topic: "t", Max: 1}, reply)
	require.Equal(t, http.StatusServiceUnavailable, response.Status, "800 control bytes take 4,800: past the 4 KiB left")
	require.Equal(t, int64(4<<10), api.replies.Held())
	backend.mu.Lock()
	require.Len(t, backend.handedBack, 1)
	backend.mu.Unlock()
}

// A schema read back (up to 256 KiB) holds its bytes from the reply
// budget while it is written, like a consume: refused with 503 while the
// budget is full, and given back once written.
func TestSchemaReadBackHoldsReplyBytes(t *testing.T) {
	backend := &tableBackend{schemas: map[string][]msg.SchemaVersion{"orders": {anyObject}}}
	cfg := DefaultCodecConfig()
	cfg.ReplyBytesInFlightMax = 1 << 10
	registry := prometheus.NewRegistry()
	handler := NewHandler(backend, NewCodec(cfg), registry, slog.New(slog.DiscardHandler))
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	get := func() (int, string) {
		response, err := server.Client().Get(server.URL + "/v1/topics/orders/schema")
		require.NoError(t, err)
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		require.NoError(t, response.Body.Close())
		return response.StatusCode, string(body)
	}
	replies := handler.(*front).routes.replies
	require.True(t, replies.take(1<<10))
	status, body := get()
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.Equal(t, 1.0, series(t, registry, "narad_http_reply_budget_refused_total")[""])
	replies.give(1 << 10)
	status, body = get()
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"schema":{"type":"object"}`)
	gaugeReaches(t, registry, "narad_http_reply_bytes_in_flight", 0)
}

// A read of the cluster's state (here a topic's description) holds its
// encoded bytes from the reply budget like a consume: refused with 503
// while the budget is full (a topic of 99,999 partitions describes in
// megabytes, and a list of topics in several), taken and held once
// there is room. A write's reply is never refused.
func TestStateReadsHoldReplyBytes(t *testing.T) {
	backend := &tableBackend{}
	cfg := DefaultCodecConfig()
	cfg.ReplyBytesInFlightMax = 1 << 10
	registry := prometheus.NewRegistry()
	api := NewHandler(backend, NewCodec(cfg), registry, slog.New(slog.DiscardHandler)).(*front).routes
	describe := msg.GetTopic{Name: "orders"}
	reply := msg.Reply{Result: msg.TopicDetail{TopicInfo: msg.TopicInfo{Name: "orders", Partitions: 3}}}
	require.True(t, api.replies.take(1<<10))
	refused := api.budgetReply(describe, reply)
	require.Equal(t, http.StatusServiceUnavailable, refused.Status)
	created := api.budgetReply(msg.CreateTopic{Name: "orders", Partitions: 3}, msg.Reply{Result: msg.TopicInfo{Name: "orders", Partitions: 3}})
	require.Equal(t, http.StatusCreated, created.Status, "a write's reply is never refused after it took effect")
	api.replies.give(1 << 10)
	held := api.budgetReply(describe, reply)
	require.Equal(t, http.StatusOK, held.Status)
	require.Equal(t, int64(cap(held.Body)), held.held, "its buffer, as held")
	require.Equal(t, held.held, api.replies.Held())
}

// failingWriter is a connection whose client has gone: every body write
// fails.
type failingWriter struct {
	header http.Header
	status int
}

func (w *failingWriter) Header() http.Header       { return w.header }
func (w *failingWriter) WriteHeader(status int)    { w.status = status }
func (w *failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A consume reply whose write fails keeps its records leased until the
// visibility timeout: they are not handed back, and the answer counts as
// the 200 it was (docs/operations.md, narad_messages_returned_total). The
// connection server sends a reply of up to 32 KiB only after the handler
// returned, and a write that succeeds does not say the client read it,
// so this layer cannot tell a reply nobody read from one that arrived
// (hostile-client audit: the docs read as if it were handed back). Its
// reply budget is given back all the same.
func TestConsumeReplyWhoseWriteFailsStaysLeased(t *testing.T) {
	backend := &bigConsumeBackend{tableBackend: &tableBackend{}, messages: 3, payloadBytes: 100}
	registry := prometheus.NewRegistry()
	handler := NewHandler(backend, newTestCodec(), registry, slog.New(slog.DiscardHandler))
	writer := &failingWriter{header: http.Header{}}
	handler.ServeHTTP(writer, httptest.NewRequest(http.MethodGet, "/v1/topics/t/consume?max=3", nil))
	require.Equal(t, http.StatusOK, writer.status)
	require.Empty(t, backend.handedBack, "the records stay leased")
	require.Equal(t, map[string]float64{`method="GET",route="GET /v1/topics/{topic}/consume",status="200"`: 1},
		series(t, registry, "narad_http_requests_total"))
	require.Equal(t, 0.0, series(t, registry, "narad_http_reply_bytes_in_flight")[""])
}

// A held reply is charged what its buffer holds, not only its bytes, and
// a large one keeps no more than fitSlackMax past them: a message's buffer
// is sized for base64 (a third more than a text payload needs), and a
// state read's doubled as it grew, so the budget charged half or less of
// what the replies held.
func TestAHeldReplyIsChargedItsBuffer(t *testing.T) {
	api := NewHandler(&tableBackend{}, NewCodec(DefaultCodecConfig()), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)).(*front).routes
	text := &msg.Message{Topic: "t", Payload: bytes.Repeat([]byte("a"), 1<<20)}
	response := api.budgetReply(msg.Replay{Topic: "t"}, msg.Reply{Result: msg.ReplayResult{Message: text}})
	require.Equal(t, http.StatusOK, response.Status)
	require.Equal(t, int64(cap(response.Body)), response.held)
	require.LessOrEqual(t, response.held, int64(len(response.Body)+fitSlackMax), "no base64-sized room is kept")
	require.Equal(t, response.held, api.replies.Held())

	long := make([]byte, 0, 3<<20)
	long = append(long, bytes.Repeat([]byte("x"), 1<<20)...)
	held := api.holdReply(Response{Status: http.StatusOK, Body: long})
	require.Equal(t, int64(1<<20), held.held, "a doubled buffer is cut to the reply")
	require.Equal(t, 1<<20, cap(held.Body))
}

// Every budgeted reply stays charged while it is written, at least its
// bytes and at most the bound taken before encoding, whatever its
// buffer's capacity: charging the buffer, a reply whose buffer passed the
// bound (the allocator's size classes, a text payload in a buffer sized
// for base64) went out uncharged.
func TestEveryBudgetedReplyStaysCharged(t *testing.T) {
	api := NewHandler(&tableBackend{}, NewCodec(DefaultCodecConfig()), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)).(*front).routes
	for size := 100; size <= 1<<20; size = size*11/10 + 1 {
		for _, payload := range [][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte{0xff}, size)} {
			message := msg.Message{Topic: "t", Payload: payload, ReceiptHandle: "h"}
			for _, exchange := range []struct {
				request msg.Request
				reply   msg.Reply
			}{
				{msg.Consume{Topic: "t", Max: 1}, msg.Reply{Result: msg.ConsumeResult{Messages: []msg.Message{message}, Batch: true}}},
				{msg.Consume{Topic: "t"}, msg.Reply{Result: msg.ConsumeResult{Messages: []msg.Message{message}}}},
				{msg.Replay{Topic: "t"}, msg.Reply{Result: msg.ReplayResult{Message: &message}}},
			} {
				bound, _ := replyBytesBound(exchange.request, exchange.reply)
				response := api.budgetReply(exchange.request, exchange.reply)
				require.Equal(t, http.StatusOK, response.Status)
				require.GreaterOrEqual(t, response.held, int64(len(response.Body)), "%T of %d bytes", exchange.request, size)
				require.LessOrEqual(t, response.held, bound)
				require.Equal(t, response.held, api.replies.Held())
				api.replies.give(response.held)
			}
		}
	}
}
