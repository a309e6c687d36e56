package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/config"
)

// seenRequest is what the fake broker saw of one request.
type seenRequest struct {
	Method string
	Path   string // escaped
	Query  string
	Body   string
	Header http.Header
}

// reply is one canned answer of the fake broker.
type reply struct {
	status int
	body   string
}

// fakeBroker is an httptest server answering per docs/api.md from canned
// replies keyed by "METHOD /path"; each key's last reply repeats. It
// records every request. Unknown routes get 404 {"error":"not found"}.
type fakeBroker struct {
	t        *testing.T
	server   *httptest.Server
	mu       sync.Mutex
	routes   map[string][]reply // guarded by mu
	requests []seenRequest      // guarded by mu
	// onRequest, when set before the first request, is called with the
	// number of requests seen so far (including this one).
	onRequest func(count int)
}

func newFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	broker := &fakeBroker{t: t, routes: map[string][]reply{}}
	broker.server = httptest.NewServer(http.HandlerFunc(broker.serve))
	t.Cleanup(broker.server.Close)
	return broker
}

// on sets the replies of a route such as "GET /v1/topics", replacing any
// earlier ones.
func (b *fakeBroker) on(route string, replies ...reply) *fakeBroker {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.routes[route] = replies
	return b
}

func (b *fakeBroker) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + r.URL.EscapedPath()
	b.mu.Lock()
	b.requests = append(b.requests, seenRequest{Method: r.Method, Path: r.URL.EscapedPath(),
		Query: r.URL.RawQuery, Body: string(body), Header: r.Header.Clone()})
	answer := reply{status: http.StatusNotFound, body: `{"error":"not found"}`}
	if queued := b.routes[route]; len(queued) > 0 {
		answer = queued[0]
		if len(queued) > 1 {
			b.routes[route] = queued[1:]
		}
	}
	count := len(b.requests)
	b.mu.Unlock()
	if b.onRequest != nil {
		b.onRequest(count)
	}
	if answer.body != "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(answer.status)
	_, _ = io.WriteString(w, answer.body)
}

// seen returns the recorded requests, optionally only those of one route.
func (b *fakeBroker) seen(route string) []seenRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	var matching []seenRequest
	for _, request := range b.requests {
		if route == "" || request.Method+" "+request.Path == route {
			matching = append(matching, request)
		}
	}
	return matching
}

// harness runs the narad root command in-process.
type harness struct {
	t      *testing.T
	app    *app
	stdout *bytes.Buffer
	stderr *bytes.Buffer
	env    map[string]string
	// hostConfig records what serve passed to runHost.
	hostConfig *config.Config
	configDir  string
	homeDir    string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{},
		configDir: filepath.Join(t.TempDir(), "narad-config"), homeDir: t.TempDir()}
	h.env = map[string]string{"NARAD_CONFIG_DIR": h.configDir}
	h.app = &app{
		stdin: strings.NewReader(""), stdout: h.stdout, stderr: h.stderr,
		getenv: func(name string) string { return h.env[name] },
		environ: func() []string {
			var entries []string
			for name, value := range h.env {
				entries = append(entries, name+"="+value)
			}
			return entries
		},
		location:      time.UTC,
		userConfigDir: func() (string, error) { return filepath.Join(h.homeDir, ".config"), nil },
		userHomeDir:   func() (string, error) { return h.homeDir, nil },
		runHost: func(_ context.Context, cfg config.Config, _ *slog.Logger, started func()) error {
			h.hostConfig = &cfg
			started()
			return nil
		},
		startCeiling: func() (string, func() error, error) {
			server := httptest.NewServer(http.HandlerFunc(answerCeiling))
			return server.URL, func() error { server.Close(); return nil }, nil
		},
	}
	return h
}

// run executes narad with args and returns the exit code.
func (h *harness) run(args ...string) int {
	h.t.Helper()
	h.stdout.Reset()
	h.stderr.Reset()
	return run(context.Background(), h.app, args)
}

// runContext executes narad with args under ctx and returns the exit code.
func (h *harness) runContext(ctx context.Context, args ...string) int {
	h.t.Helper()
	h.stdout.Reset()
	h.stderr.Reset()
	return run(ctx, h.app, args)
}

// runOK executes narad and requires exit code 0.
func (h *harness) runOK(args ...string) {
	h.t.Helper()
	code := h.run(args...)
	require.Equal(h.t, 0, code, "narad %v\nstdout:\n%s\nstderr:\n%s", args, h.stdout, h.stderr)
}

// against runs narad against broker with -s prepended.
func (h *harness) against(broker *fakeBroker, args ...string) int {
	h.t.Helper()
	return h.run(append([]string{"-s", broker.server.URL}, args...)...)
}

func (h *harness) againstOK(broker *fakeBroker, args ...string) {
	h.t.Helper()
	h.runOK(append([]string{"-s", broker.server.URL}, args...)...)
}
