package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"narad/msg"
)

// tableBackend answers from a small table keyed by request type; it is
// enough to test translation and middleware, not the node.
type tableBackend struct {
	mu           sync.Mutex // guards the fields below
	received     []msg.Request
	readyErr     error
	shuttingDown bool
	// block, when set, makes Do wait for its context; entered is closed
	// once Do is waiting and cancelled receives the context's error.
	block     bool
	entered   chan struct{}
	cancelled chan error
	// schemas is what TopicSchemas answers; onProduce, when set, answers
	// a produce instead of the table (it runs with mu held).
	schemas   map[string][]msg.SchemaVersion
	onProduce func(msg.Produce) msg.Reply
	// handedBack lists the replies HandBack was given.
	handedBack []msg.Reply
}

func (b *tableBackend) Do(ctx context.Context, req msg.Request) msg.Reply {
	b.mu.Lock()
	b.received = append(b.received, req)
	block := b.block
	if produce, ok := req.(msg.Produce); ok && b.onProduce != nil {
		defer b.mu.Unlock()
		return b.onProduce(produce)
	}
	b.mu.Unlock()
	if block {
		close(b.entered)
		<-ctx.Done()
		b.cancelled <- ctx.Err()
		return msg.Reply{Err: msg.Unavailable("request cancelled")}
	}
	return tableReply(req)
}

func tableReply(req msg.Request) msg.Reply {
	switch request := req.(type) {
	case msg.CreateTopic:
		return msg.Reply{Result: msg.TopicInfo{Name: request.Name, Partitions: 3}}
	case msg.Produce:
		return msg.Reply{Result: msg.ProduceResult{Records: []msg.Placement{{Partition: 1, Offset: 0}}}}
	case msg.Consume:
		return msg.Reply{Result: msg.ConsumeResult{}}
	case msg.GetTopic:
		return msg.Reply{Err: msg.NotFound("topic %s not found", request.Name)}
	case msg.ListMoves:
		panic("the node broke")
	}
	return msg.Reply{Err: msg.Internal("no table entry for %T", req)}
}

func (b *tableBackend) Ready() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readyErr
}

func (b *tableBackend) TopicSchemas(topic string) []msg.SchemaVersion {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.schemas[topic]
}

func (b *tableBackend) HandBack(reply msg.Reply) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handedBack = append(b.handedBack, reply)
}

func (b *tableBackend) ShuttingDown() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.shuttingDown
}

type handlerFixture struct {
	backend  *tableBackend
	registry *prometheus.Registry
	server   *httptest.Server
}

func newHandlerFixture(t *testing.T) *handlerFixture {
	t.Helper()
	fixture := &handlerFixture{backend: &tableBackend{}, registry: prometheus.NewRegistry()}
	logger := slog.New(slog.DiscardHandler)
	handler := NewHandler(fixture.backend, newTestCodec(), fixture.registry, logger)
	fixture.server = httptest.NewServer(handler)
	t.Cleanup(fixture.server.Close)
	return fixture
}

// call sends a request and returns the status, the content type and the
// body.
func (f *handlerFixture) call(t *testing.T, method, path, body string) (int, string, string) {
	t.Helper()
	request, err := http.NewRequest(method, f.server.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	response, err := f.server.Client().Do(request)
	require.NoError(t, err)
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	return response.StatusCode, response.Header.Get("Content-Type"), string(data)
}

func TestHandlerTranslates(t *testing.T) {
	fixture := newHandlerFixture(t)
	cases := []struct {
		method, path, body string
		status             int
		contentType        string
		response           string
	}{
		{"POST", "/v1/topics", `{"name":"orders"}`, 201, "application/json",
			`{"name":"orders","partitions":3,"retention_ms":0,"visibility_timeout_ms":0,` +
				`"max_in_flight_per_partition":0,"max_acked_ahead_per_partition":0,"created_at":0}` + "\n"},
		{"POST", "/v1/topics/orders/produce?key=k", "hello", 202, "application/json", `{"partition":1,"offset":0}` + "\n"},
		{"GET", "/v1/topics/orders/consume", "", 204, "", ""},
		{"GET", "/v1/topics/missing", "", 404, "application/json", `{"error":"topic missing not found"}` + "\n"},
		{"POST", "/v1/topics", `{"name":"a","bogus":1}`, 400, "application/json",
			`{"error":"invalid json: unknown field \"bogus\""}` + "\n"},
		{"GET", "/v1/nothing", "", 404, "text/plain; charset=utf-8", "404 page not found\n"},
		{"DELETE", "/v1/topics/orders/consume", "", 405, "text/plain; charset=utf-8", "Method Not Allowed\n"},
	}
	for _, tc := range cases {
		status, contentType, body := fixture.call(t, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, status, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.contentType, contentType, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.response, body, "%s %s", tc.method, tc.path)
	}
	want := []msg.Request{
		msg.CreateTopic{Name: "orders"},
		msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k"), Partition: msg.PartitionNone, Payload: []byte("hello")}}},
		msg.Consume{Topic: "orders", Partition: msg.PartitionNone},
		msg.GetTopic{Name: "missing", Partition: msg.PartitionNone},
	}
	require.Equal(t, want, fixture.backend.received, "only decoded requests reach the backend")
}

func TestHandlerMetrics(t *testing.T) {
	fixture := newHandlerFixture(t)
	fixture.call(t, "POST", "/v1/topics", `{"name":"orders"}`)
	fixture.call(t, "POST", "/v1/topics", `{"name":"orders"}`)
	fixture.call(t, "POST", "/v1/topics/orders/produce", "12345")
	fixture.call(t, "GET", "/v1/nothing", "")
	fixture.call(t, "PUT", "/v1/topics", "")
	fixture.call(t, "BREW", "/v1/topics", "")

	require.Equal(t, map[string]float64{
		`method="GET",route="unmatched",status="404"`:                        1,
		`method="OTHER",route="unmatched",status="405"`:                      1,
		`method="POST",route="POST /v1/topics",status="201"`:                 2,
		`method="POST",route="POST /v1/topics/{topic}/produce",status="202"`: 1,
		`method="PUT",route="unmatched",status="405"`:                        1,
	}, series(t, fixture.registry, "narad_http_requests_total"))
	require.Equal(t, map[string]float64{
		`method="GET",route="unmatched",status="404"`:                        1,
		`method="OTHER",route="unmatched",status="405"`:                      1,
		`method="POST",route="POST /v1/topics",status="201"`:                 2,
		`method="POST",route="POST /v1/topics/{topic}/produce",status="202"`: 1,
		`method="PUT",route="unmatched",status="405"`:                        1,
	}, series(t, fixture.registry, "narad_http_request_duration_seconds"), "one observation per request")
	require.Equal(t, map[string]float64{
		`route="POST /v1/topics"`:                 float64(2 * len(`{"name":"orders"}`)),
		`route="POST /v1/topics/{topic}/produce"`: 5,
		`route="unmatched"`:                       0,
	}, series(t, fixture.registry, "narad_http_request_bytes_in_total"))
	created := `{"name":"orders","partitions":3,"retention_ms":0,"visibility_timeout_ms":0,` +
		`"max_in_flight_per_partition":0,"max_acked_ahead_per_partition":0,"created_at":0}` + "\n"
	require.Equal(t, map[string]float64{
		`route="POST /v1/topics"`:                 float64(2 * len(created)),
		`route="POST /v1/topics/{topic}/produce"`: float64(len(`{"partition":1,"offset":0}` + "\n")),
		`route="unmatched"`:                       float64(len("404 page not found\n") + 2*len("Method Not Allowed\n")),
	}, series(t, fixture.registry, "narad_http_response_bytes_out_total"))
	require.Equal(t, map[string]float64{"": 0}, series(t, fixture.registry, "narad_http_requests_in_flight"))
}

// series returns every series of the metric family name, keyed by its
// labels as name="value" pairs in label order: counter and gauge values,
// or the sample count of a histogram.
func series(t *testing.T, registry *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := registry.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.GetMetric() {
			var pairs []string
			for _, label := range metric.GetLabel() {
				pairs = append(pairs, label.GetName()+"="+strconv.Quote(label.GetValue()))
			}
			values[strings.Join(pairs, ",")] = metricValue(metric)
		}
	}
	return values
}

func metricValue(metric *dto.Metric) float64 {
	switch {
	case metric.GetHistogram() != nil:
		return float64(metric.GetHistogram().GetSampleCount())
	case metric.GetGauge() != nil:
		return metric.GetGauge().GetValue()
	}
	return metric.GetCounter().GetValue()
}

func TestHandlerServesMetrics(t *testing.T) {
	fixture := newHandlerFixture(t)
	fixture.call(t, "GET", "/healthz", "")
	status, contentType, body := fixture.call(t, "GET", "/metrics", "")
	require.Equal(t, 200, status)
	require.True(t, strings.HasPrefix(contentType, "text/plain"), contentType)
	require.Contains(t, body, `narad_http_requests_total{method="GET",route="GET /healthz",status="200"} 1`)
}

// TestHandlerRefusesHeadOnConsume: the mux routes HEAD to GET patterns;
// a consume reserves records, and a HEAD's answer has no body to carry
// their receipt handles, so it is 405 and never reaches the node. HEAD
// on a GET route that only reads is served.
func TestHandlerRefusesHeadOnConsume(t *testing.T) {
	fixture := newHandlerFixture(t)
	for _, path := range []string{"/v1/topics/orders/consume", "/v1/topics/orders/consume?max=100", "/v1/topics/orders/consume?partition=0&offset=3"} {
		request, err := http.NewRequest(http.MethodHead, fixture.server.URL+path, nil)
		require.NoError(t, err)
		response, err := fixture.server.Client().Do(request)
		require.NoError(t, err)
		response.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, response.StatusCode, path)
		require.Equal(t, http.MethodGet, response.Header.Get("Allow"), path)
	}
	require.Empty(t, fixture.backend.received, "a HEAD reserves nothing")
	request, err := http.NewRequest(http.MethodHead, fixture.server.URL+"/healthz", nil)
	require.NoError(t, err)
	response, err := fixture.server.Client().Do(request)
	require.NoError(t, err)
	response.Body.Close()
	require.Equal(t, http.StatusOK, response.StatusCode, "HEAD of a read-only route")
}

// TestHandlerRefusesRepeatedParametersOnEveryRoute: a query parameter given
// twice is 400 on every route, also those whose decoder reads no query,
// and such a request changes nothing; /metrics takes repeated name[]
// filters (the Prometheus exposition's).
func TestHandlerRefusesRepeatedParametersOnEveryRoute(t *testing.T) {
	fixture := newHandlerFixture(t)
	for _, target := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/topics?x=1&x=2", `{"name":"orders"}`},
		{http.MethodPatch, "/v1/topics/orders?x=1&%78=2", `{"retention_ms":3600000}`},
		{http.MethodDelete, "/v1/topics/orders?x=1&x=2", ""},
		{http.MethodPost, "/v1/cluster/members/n1/decommission?x=1&x=2", ""},
		{http.MethodGet, "/v1/cluster/members?x=1&x=2", ""},
		{http.MethodGet, "/healthz?x=1&x=2", ""},
		{http.MethodPost, "/v1/topics?x=%zz", `{"name":"orders"}`},
	} {
		status, _, body := fixture.call(t, target.method, target.path, target.body)
		require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", target.method, target.path, body)
	}
	require.Empty(t, fixture.backend.received, "a refused request reaches no node")
	status, _, body := fixture.call(t, http.MethodGet, "/metrics?name[]=narad_http_requests_total&name[]=narad_http_requests_in_flight", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "narad_http_requests_total")
	require.NotContains(t, body, "narad_http_request_duration_seconds", "the filter applies")
}

func TestHandlerRecoversPanics(t *testing.T) {
	fixture := newHandlerFixture(t)
	status, contentType, body := fixture.call(t, "GET", "/v1/cluster/moves", "")
	require.Equal(t, 500, status)
	require.Equal(t, "application/json", contentType)
	require.Equal(t, `{"error":"internal server panic"}`+"\n", body)
	require.Equal(t, float64(1),
		series(t, fixture.registry, "narad_http_requests_total")[`method="GET",route="GET /v1/cluster/moves",status="500"`])

	status, _, _ = fixture.call(t, "GET", "/healthz", "")
	require.Equal(t, 200, status, "the server keeps serving after a panic")
}

func TestHandlerHealthAndReadiness(t *testing.T) {
	fixture := newHandlerFixture(t)
	expect := func(path string, status int, body string) {
		t.Helper()
		gotStatus, contentType, gotBody := fixture.call(t, "GET", path, "")
		require.Equal(t, status, gotStatus, path)
		require.Equal(t, "application/json", contentType, path)
		require.Equal(t, body+"\n", gotBody, path)
	}
	expect("/healthz", 200, `{"status":"ok"}`)
	expect("/readyz", 200, `{"status":"ready"}`)

	fixture.backend.mu.Lock()
	fixture.backend.readyErr = errors.New("lost contact with the raft leader")
	fixture.backend.mu.Unlock()
	expect("/readyz", 503, `{"error":"lost contact with the raft leader"}`)

	fixture.backend.mu.Lock()
	fixture.backend.readyErr = nil
	fixture.backend.shuttingDown = true
	fixture.backend.mu.Unlock()
	expect("/readyz", 200, `{"status":"ready"}`)
	expect("/healthz", 503, `{"status":"shutting down"}`)
}

// TestHandlerCancelledRequest: the request's context reaches Do, and the
// Unavailable reply of a cancelled Do is answered as 503.
func TestHandlerCancelledRequest(t *testing.T) {
	backend := &tableBackend{block: true, entered: make(chan struct{}), cancelled: make(chan error, 1)}
	handler := NewHandler(backend, newTestCodec(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	request := httptest.NewRequestWithContext(ctx, "GET", "/v1/topics/orders/consume?wait=10s", nil)
	go func() {
		<-backend.entered
		cancel()
	}()
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	require.ErrorIs(t, <-backend.cancelled, context.Canceled)
	require.Equal(t, 503, recorder.Code)
	require.Equal(t, `{"error":"request cancelled"}`+"\n", recorder.Body.String())
}

// TestHandlerClientGoesAway: a client that drops a long poll cancels the
// context Do waits on.
func TestHandlerClientGoesAway(t *testing.T) {
	fixture := newHandlerFixture(t)
	fixture.backend.block = true
	fixture.backend.entered = make(chan struct{})
	fixture.backend.cancelled = make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	request, err := http.NewRequestWithContext(ctx, "GET", fixture.server.URL+"/v1/topics/orders/consume?wait=10s", nil)
	require.NoError(t, err)
	go func() {
		<-fixture.backend.entered
		cancel()
	}()
	_, err = fixture.server.Client().Do(request)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, <-fixture.backend.cancelled, context.Canceled)
}

func TestNewHandlerNeedsEveryDependency(t *testing.T) {
	require.Panics(t, func() { NewHandler(nil, newTestCodec(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)) })
	require.Panics(t, func() { NewHandler(&tableBackend{}, newTestCodec(), prometheus.NewRegistry(), nil) })
}

// The handler routes, counts and budgets a copy of the request: the
// server's request keeps its body and gets no pattern or path values.
func TestHandlerLeavesTheServersRequestAsItWas(t *testing.T) {
	handler := NewHandler(&tableBackend{}, newTestCodec(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	produce := httptest.NewRequest(http.MethodPost, "/v1/topics/orders/produce", strings.NewReader("x"))
	body := produce.Body
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, produce)
	require.Equal(t, http.StatusAccepted, recorder.Code, recorder.Body.String())
	require.True(t, produce.Body == body, "the server's body was replaced")
	require.Empty(t, produce.Pattern)
	require.Empty(t, produce.PathValue("topic"))

	get := httptest.NewRequest(http.MethodGet, "/v1/topics/orders", nil)
	handler.ServeHTTP(httptest.NewRecorder(), get)
	require.Empty(t, get.Pattern)
	require.Empty(t, get.PathValue("topic"))
}

// TestHandlerAbandonedRequestIsNoAnswer: a request whose client left
// before the answer (its context cancelled while the backend worked) is
// counted in narad_http_requests_abandoned_total, not as an answered 503
// in narad_http_requests_total and the duration histogram, for every kind
// of request that waits on the backend.
func TestHandlerAbandonedRequestIsNoAnswer(t *testing.T) {
	cases := []struct{ method, path, body, route string }{
		{"GET", "/v1/topics/orders/consume?wait=10s", "", "GET /v1/topics/{topic}/consume"},
		{"POST", "/v1/topics/orders/produce", "hello", "POST /v1/topics/{topic}/produce"},
		{"POST", "/v1/topics", `{"name":"orders"}`, "POST /v1/topics"},
		{"GET", "/v1/topics/orders", "", "GET /v1/topics/{topic}"},
	}
	for _, tc := range cases {
		backend := &tableBackend{block: true, entered: make(chan struct{}), cancelled: make(chan error, 1)}
		registry := prometheus.NewRegistry()
		handler := NewHandler(backend, newTestCodec(), registry, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(context.Background())
		request := httptest.NewRequestWithContext(ctx, tc.method, tc.path, strings.NewReader(tc.body))
		go func() {
			<-backend.entered
			cancel()
		}()
		handler.ServeHTTP(httptest.NewRecorder(), request)
		require.ErrorIs(t, <-backend.cancelled, context.Canceled, tc.path)
		require.Empty(t, series(t, registry, "narad_http_requests_total"), "%s %s", tc.method, tc.path)
		require.Empty(t, series(t, registry, "narad_http_request_duration_seconds"), "%s %s", tc.method, tc.path)
		require.Equal(t, map[string]float64{`method="` + tc.method + `",route="` + tc.route + `"`: 1},
			series(t, registry, "narad_http_requests_abandoned_total"), "%s %s", tc.method, tc.path)
		require.Equal(t, map[string]float64{`route="` + tc.route + `"`: float64(len(tc.body))},
			series(t, registry, "narad_http_request_bytes_in_total"), "%s %s", tc.method, tc.path)
	}
}

// TestHandlerRefusesContentEncoding: a body sent with a content coding
// the server does not decode is 415, naming it, and reaches no backend
// (hostile-client audit: a gzipped produce was stored compressed);
// identity, and a coding on a request without a body, are served.
func TestHandlerRefusesContentEncoding(t *testing.T) {
	fixture := newHandlerFixture(t)
	send := func(method, path, body string, codings ...string) (int, string) {
		request, err := http.NewRequest(method, fixture.server.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		for _, coding := range codings {
			request.Header.Add("Content-Encoding", coding)
		}
		response, err := fixture.server.Client().Do(request)
		require.NoError(t, err)
		defer response.Body.Close()
		data, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		return response.StatusCode, string(data)
	}
	status, body := send("POST", "/v1/topics/orders/produce", "\x1f\x8b\x08\x00", "gzip")
	require.Equal(t, 415, status)
	require.Equal(t, `{"error":"request body has Content-Encoding \"gzip\": the server decodes no content coding; send the body as is (identity)"}`+"\n", body)
	status, body = send("POST", "/v1/topics", `{"name":"orders"}`, "identity, br")
	require.Equal(t, 415, status)
	require.Contains(t, body, `Content-Encoding \"br\"`)
	status, _ = send("POST", "/v1/topics", `{"name":"orders"}`, "Identity", "x-"+strings.Repeat("z", 1000))
	require.Equal(t, 415, status, "every field counts")
	require.Empty(t, fixture.backend.received, "a refused body reaches no backend")

	status, body = send("POST", "/v1/topics/orders/produce", "hello", "identity")
	require.Equal(t, 202, status, body)
	status, _ = send("GET", "/v1/topics/orders/consume", "", "gzip")
	require.Equal(t, 204, status, "no body, nothing to decode")
}
