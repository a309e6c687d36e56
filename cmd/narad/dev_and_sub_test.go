package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --dev serves without authentication, so it refuses an address that is
// not loopback instead of opening the broker to the network.
func TestADevServerRefusesAnAddressThatIsNotLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7942", ":7942", "192.0.2.1:7942"} {
		h := newHarness(t)
		code := h.run("server", "start", "--dev", "--addr", addr, "--data-dir", t.TempDir())
		require.Equal(t, exitUsage, code, "--addr %s: %s", addr, h.stderr.String())
		require.Contains(t, h.stderr.String(), "loopback")
		require.Nil(t, h.hostConfig, "no server was started")
	}
	h := newHarness(t)
	h.runOK("server", "start", "--dev", "--addr", "127.0.0.1:7950", "--data-dir", t.TempDir())
	require.Equal(t, "127.0.0.1:7950", h.hostConfig.HTTP.Addr)
}

// The dev banner's example commands name the dev server when it is not at
// the commands' default address.
func TestTheDevBannerCommandsReachTheDevServer(t *testing.T) {
	h := newHarness(t)
	h.runOK("server", "start", "--dev", "--port", "8000", "--data-dir", t.TempDir())
	lines := 0
	for line := range strings.Lines(h.stderr.String()) {
		if strings.HasPrefix(line, "  narad ") {
			lines++
			assert.Contains(t, line, "-s http://127.0.0.1:8000 ", "banner line %q", strings.TrimSpace(line))
		}
	}
	require.Equal(t, 3, lines)
	h = newHarness(t)
	h.runOK("server", "start", "--dev", "--data-dir", t.TempDir())
	require.Contains(t, h.stderr.String(), "  narad topic add orders\n", "at the default address, no -s")
}

// `narad sub` ends with a non-zero exit when an ack failed for good (the
// message will be delivered again), after printing it and going on.
func TestSubExitsNonZeroWhenAnAckFails(t *testing.T) {
	for _, refusal := range []reply{
		{http.StatusForbidden, `{"error":"user alice may not consume orders"}`},
		{http.StatusServiceUnavailable, `{"error":"partition owner is down"}`},
	} {
		h := newHarness(t)
		broker := newFakeBroker(t).on(consumeRoute, reply{200, jsonMessage}).on(ackRoute, refusal)
		code := h.against(broker, "sub", "orders", "--max", "1")
		require.NotEmpty(t, broker.seen(ackRoute))
		require.NotEqual(t, 0, code, "ack answered %d; stderr:\n%s", refusal.status, h.stderr.String())
		require.Contains(t, h.stderr.String(), "1 ack(s) failed")
		require.Contains(t, h.stdout.String(), `{"id":7}`, "the message was printed before the ack")
	}
}

// A server URL that does not parse is not printed with its password (it
// is a usage error, refused before any request).
func TestAServerURLThatDoesNotParseHidesItsPassword(t *testing.T) {
	h := newHarness(t)
	h.env["NARAD_ADDR"] = "http://admin:s3cret-pw@127.0.0.1:79x2"
	code := h.run("topic", "ls")
	require.Equal(t, exitUsage, code)
	require.NotContains(t, h.stderr.String(), "s3cret-pw")
	require.Contains(t, h.stderr.String(), "admin:xxxxx@127.0.0.1:79x2")
}

// Durations the API cannot carry (a fraction of a millisecond, dropped
// silently before) and a rate that is not a number are usage errors, and
// nothing is sent.
func TestDurationsAndRatesTheAPICannotCarryAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"topic", "add", "later", "--parent", "orders", "--delay", "500us"},
		{"topic", "add", "later", "--parent", "orders", "--delay", "-1s"},
		{"topic", "add", "orders", "--visibility", "1500us"},
		{"topic", "alter", "orders", "--retention", "1h0m0.5s"},
		{"topic", "attach", "orders", "later", "--delay", "1.5ms"},
		{"pub", "orders", "x", "--count", "2", "--rate", "NaN"},
		{"pub", "orders", "x", "--count", "2", "--rate", "+Inf"},
	} {
		h := newHarness(t)
		broker := newFakeBroker(t)
		require.Equal(t, exitUsage, h.against(broker, args...), "%v: %s", args, h.stderr.String())
		require.Empty(t, broker.seen(""), "%v sent a request", args)
	}
}

// `narad sub` stopped while no broker answered ends non-zero: an interrupt
// is a clean end only when the consumer was being answered.
func TestSubInterruptedWhileTheBrokerIsUnreachableFails(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := listener.Addr().String()
	require.NoError(t, listener.Close()) // nothing listens there now
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	code := h.runContext(ctx, "-s", "http://"+address, "sub", "orders")
	require.NotEqual(t, 0, code, "stderr:\n%s", h.stderr.String())
	require.Contains(t, h.stderr.String(), "consume failed")
	require.Contains(t, h.stderr.String(), "stopped while consumes were failing")
}
