package host

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testHost starts a real host on a loopback port with its data in a
// temporary directory, and stops it when the test ends.
func testHost(t testing.TB) *Host {
	t.Helper()
	return testHostAt(t, t.TempDir())
}

func testHostAt(t testing.TB, dataDir string) *Host {
	t.Helper()
	opts := DefaultOptions(dataDir)
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Codec.ConsumeWaitMaxMs = 2_000
	opts.Node.ConsumeWaitMaxMs = 2_000
	h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	return h
}

type apiCall struct {
	method, path, contentType, body string
}

// call sends one request and returns the status and the body.
func call(t *testing.T, h *Host, c apiCall) (int, string) {
	t.Helper()
	req, err := http.NewRequest(c.method, "http://"+h.Addr()+c.path, strings.NewReader(c.body))
	require.NoError(t, err)
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// step is one request of a scripted conversation with the server and what
// must come back: the status, and a substring of the body ("" = any).
type step struct {
	name string
	apiCall
	status int
	want   string
}

func runSteps(t *testing.T, h *Host, steps []step) {
	t.Helper()
	for _, s := range steps {
		status, body := call(t, h, s.apiCall)
		require.Equal(t, s.status, status, "%s: %s %s -> %s", s.name, s.method, s.path, body)
		require.Contains(t, body, s.want, "%s: body", s.name)
	}
}

func get(path string) apiCall { return apiCall{method: http.MethodGet, path: path} }
func post(path, contentType, body string) apiCall {
	return apiCall{method: http.MethodPost, path: path, contentType: contentType, body: body}
}
func postJSON(path, body string) apiCall { return post(path, "application/json", body) }
func patch(path, body string) apiCall {
	return apiCall{method: http.MethodPatch, path: path, contentType: "application/json", body: body}
}
func del(path string) apiCall { return apiCall{method: http.MethodDelete, path: path} }
