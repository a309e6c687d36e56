package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordedRequest is what the test server saw of one request.
type recordedRequest struct {
	Method      string
	Path        string // escaped path as sent on the wire
	Query       string // raw query as sent on the wire
	Body        string
	ContentType string
	Header      http.Header
}

// cannedReply is what the test server answers.
type cannedReply struct {
	Status      int
	ContentType string
	Body        string
}

// recorder is an httptest server that records requests and answers from a
// queue of canned replies (the last reply repeats).
type recorder struct {
	t        *testing.T
	server   *httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
	replies  []cannedReply
}

func newRecorder(t *testing.T, replies ...cannedReply) *recorder {
	t.Helper()
	r := &recorder{t: t, replies: replies}
	r.server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.server.Close)
	return r
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	require.NoError(r.t, err)
	r.mu.Lock()
	r.requests = append(r.requests, recordedRequest{
		Method: req.Method, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery,
		Body: string(body), ContentType: req.Header.Get("Content-Type"), Header: req.Header.Clone(),
	})
	reply := r.replies[0]
	if len(r.replies) > 1 {
		r.replies = r.replies[1:]
	}
	r.mu.Unlock()
	if reply.ContentType == "" {
		reply.ContentType = "application/json"
	}
	w.Header().Set("Content-Type", reply.ContentType)
	w.WriteHeader(reply.Status)
	_, _ = io.WriteString(w, reply.Body)
}

func (r *recorder) client(options ...Option) *Client {
	return New(r.server.URL, options...)
}

// only returns the single request the server saw.
func (r *recorder) only() recordedRequest {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(r.t, r.requests, 1)
	return r.requests[0]
}

func (r *recorder) all() []recordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedRequest(nil), r.requests...)
}

func TestNewNormalizesBaseURL(t *testing.T) {
	cases := map[string]string{
		"http://127.0.0.1:7942":    "http://127.0.0.1:7942",
		"http://127.0.0.1:7942//":  "http://127.0.0.1:7942",
		"localhost:7942":           "http://localhost:7942",
		" https://broker.example ": "https://broker.example",
	}
	for input, want := range cases {
		assert.Equal(t, want, New(input).BaseURL(), input)
	}
}

func TestBasicAuthAndAcceptHeaders(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"status":"ok"}`})
	_, err := server.client(WithBasicAuth("alice", "s3cret")).Healthz(context.Background())
	require.NoError(t, err)
	seen := server.only()
	user, password, ok := (&http.Request{Header: seen.Header}).BasicAuth()
	require.True(t, ok, "basic auth header missing")
	assert.Equal(t, "alice", user)
	assert.Equal(t, "s3cret", password)
	assert.Equal(t, "application/json", seen.Header.Get("Accept"))
}

func TestNoAuthHeaderWithoutUser(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"status":"ok"}`})
	_, err := server.client().Healthz(context.Background())
	require.NoError(t, err)
	assert.Empty(t, server.only().Header.Get("Authorization"))
}

func TestWithHTTPClientIsUsed(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"status":"ok"}`})
	counting := &countingTransport{next: http.DefaultTransport}
	c := server.client(WithHTTPClient(&http.Client{Transport: counting}))
	_, err := c.Readyz(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, counting.count)
}

type countingTransport struct {
	next  http.RoundTripper
	count int
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.count++
	return t.next.RoundTrip(req)
}

func TestTimeoutCancelsRequest(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers before the client gives up
	}))
	defer server.Close()
	_, err := New(server.URL, WithTimeout(20*time.Millisecond)).Healthz(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestErrorReplies(t *testing.T) {
	cases := []struct {
		name        string
		reply       cannedReply
		wantStatus  int
		wantMessage string
	}{
		{"json error", cannedReply{Status: 404, Body: `{"error":"topic not found"}` + "\n"}, 404, "topic not found"},
		{"text plain", cannedReply{Status: 502, ContentType: "text/plain", Body: "peer transport failure\n"}, 502, "peer transport failure"},
		{"empty body", cannedReply{Status: 503}, 503, "service unavailable"},
		{"status body", cannedReply{Status: 503, Body: `{"status":"shutting down"}`}, 503, "shutting down"},
		{"go 404 page", cannedReply{Status: 404, ContentType: "text/plain", Body: "404 page not found\n"}, 404, "404 page not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			server := newRecorder(t, tc.reply)
			_, err := server.client().GetTopic(context.Background(), "orders", nil)
			var replyError *Error
			require.ErrorAs(t, err, &replyError)
			assert.Equal(t, tc.wantStatus, replyError.Status)
			assert.Equal(t, tc.wantMessage, replyError.Message)
			assert.True(t, IsStatus(err, tc.wantStatus))
			assert.False(t, IsStatus(err, 200))
		})
	}
}

func TestErrorStringAndIsStatusWrapping(t *testing.T) {
	err := &Error{Status: 410, Message: "lease lapsed"}
	assert.Equal(t, "http 410: lease lapsed", err.Error())
	wrapped := errors.Join(errors.New("context"), err)
	assert.True(t, IsStatus(wrapped, 410))
	assert.False(t, IsStatus(errors.New("plain"), 410))
	assert.False(t, IsStatus(nil, 410))
}

func TestUndecodableReplyIsAnError(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"topics": 7}`})
	_, err := server.client().ListTopics(context.Background(), 0, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decode reply")
}

func TestPtr(t *testing.T) {
	p := Ptr(3)
	require.NotNil(t, p)
	assert.Equal(t, 3, *p)
	*p = 4
	assert.Equal(t, 4, *Ptr(4))
}

// decodeJSON decodes a recorded JSON body into a generic map.
func decodeJSON(t *testing.T, body string) map[string]any {
	t.Helper()
	var decoded map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &decoded), body)
	return decoded
}
