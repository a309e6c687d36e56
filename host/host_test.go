package host

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/proc"
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

// A second node started on a data directory a running node holds is
// refused, saying why: it waited for the metastore's file lock for good,
// silently (review finding).
func TestASecondStartOnADataDirectoryInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	testHostAt(t, dir)
	opts := DefaultOptions(dir)
	opts.HTTPAddr = "127.0.0.1:0"
	done := make(chan error, 1)
	go func() {
		h, err := Start(opts, slog.New(slog.DiscardHandler))
		if err == nil {
			_ = h.Shutdown()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, meta.ErrStoreLocked)
		require.ErrorContains(t, err, "in use by another narad process")
	case <-time.After(30 * time.Second): // a bound on the test only: the refusal comes after metaStoreLockTimeout
		t.Fatal("the second start on the same data directory still waits")
	}
}

// A start that fails on the pprof listener holds no port: the API's
// listener, bound first, stayed bound and served (review finding).
func TestAStartFailingOnItsPprofListenerReleasesTheAPIPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	httpAddr, err := proc.FreeAddr()
	require.NoError(t, err)
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = httpAddr
	opts.PprofAddr = busy.Addr().String()
	_, err = Start(opts, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "pprof")
	again, err := net.Listen("tcp", httpAddr)
	require.NoError(t, err, "the failed start still holds the API's port %s", httpAddr)
	require.NoError(t, again.Close())
}
