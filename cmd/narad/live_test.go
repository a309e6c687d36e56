package main

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/host"
)

// liveServer starts a real node (host) on a loopback port for the CLI to
// talk to: these tests check the verbs against the real broker, not a
// recording.
func liveServer(t *testing.T) string {
	t.Helper()
	opts := host.DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	h, err := host.Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	return "http://" + h.Addr()
}

func TestLiveTopicVerbs(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "topic", "add", "orders", "--partitions", "4", "--visibility", "5s")
	require.Contains(t, h.stdout.String(), `"visibility_timeout_ms": 5000`)
	h.runOK("-s", server, "topic", "ls")
	require.Regexp(t, `orders\s+4`, h.stdout.String())
	h.runOK("-s", server, "topic", "edit", "orders", "--visibility", "7s", "--partitions", "5")
	h.runOK("-s", server, "topic", "info", "orders")
	require.Contains(t, h.stdout.String(), `"visibility_timeout_ms": 7000`)
	require.Contains(t, h.stdout.String(), `"partitions": 5`)
	require.Equal(t, 1, h.run("-s", server, "topic", "add", "orders"))
	require.Contains(t, h.stderr.String(), "http 409: topic already exists")
	h.runOK("-s", server, "topic", "rm", "orders", "-f")
	require.Equal(t, 1, h.run("-s", server, "topic", "info", "orders"))
	require.Contains(t, h.stderr.String(), "http 404")
}

func TestLivePubSubReplay(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "topic", "add", "events")
	h.runOK("-s", server, "pub", "events", "hello", "--partition", "1", "--key", "k1")
	require.Contains(t, h.stderr.String(), "accepted")
	h.runOK("-s", server, "pub", "events", `{"n":2}`, "--partition", "1")
	h.runOK("-s", server, "pub", "events", "many", "--count", "5", "--partition", "2")

	h.runOK("-s", server, "replay", "events", "--partition", "1")
	out := h.stdout.String() + h.stderr.String()
	require.Contains(t, out, "hello")
	require.Contains(t, out, `{"n":2}`)
	require.Contains(t, out, "2 message(s) replayed from p1 [0, 2)")

	h.runOK("-s", server, "sub", "events", "--max", "7", "--wait", "1s")
	consumed := h.stdout.String()
	require.Equal(t, 7, strings.Count(consumed, "[p"), consumed)
	require.Contains(t, consumed, "key=k1")

	resp, err := http.Get(server + "/v1/topics/events/consume")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "sub acked everything: nothing comes back")

	h.runOK("-s", server, "sub", "events", "--peek", "--partition", "2", "--from", "0", "--max", "5")
	require.Equal(t, 5, strings.Count(h.stdout.String(), "many"), "peek reads without reserving")
}

func TestLiveBench(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "bench", "b", "--create", "--count", "200", "--workers", "4", "--size", "64", "--consume")
	out := h.stdout.String() + h.stderr.String()
	require.Regexp(t, `produce: 200 ok, 0 failed`, out)
	require.Regexp(t, `consume\+ack: 20[0-9] ok, 0 failed in`, out)
	// The node's own counters explain both phases: 200 records made
	// durable in rounds of at least one, and every request timed.
	match := regexp.MustCompile(`(?m)^server \(produce\): (\d+) sync rounds of (\S+) records, \S+ fsyncs each, \d+ group syncs; \d+ persists of \S+ ms; the loop waited to gather \d+ times; time in the handler per request: produce \S+ ms$`).FindStringSubmatch(out)
	require.NotNil(t, match, out)
	rounds, err := strconv.Atoi(match[1])
	require.NoError(t, err)
	perRound, err := strconv.ParseFloat(match[2], 64)
	require.NoError(t, err)
	require.Positive(t, rounds)
	require.InDelta(t, 200, float64(rounds)*perRound, float64(rounds)*0.05, "the rounds made the 200 records durable (rounded to 0.1 a round)")
	require.Regexp(t, `(?m)^server \(consume\+ack\): time in the handler per request: consume \S+ ms, ack \S+ ms$`, out)
}

func TestLiveClusterMembers(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "cluster", "members")
	require.Contains(t, h.stdout.String(), "alive")
	h.runOK("-s", server, "cluster", "moves")
}
