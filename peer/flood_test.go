package peer

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Connections that never authenticate hold at most handshakesInFlightMax
// slots: a real peer arriving behind a flood of them sheds the oldest and
// gets through, the shed handshakes count as neither authentication
// failures nor handshake errors, and the dialer counts no failure.
func TestHandshakeFloodDoesNotStarveARealPeer(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	var flood []net.Conn
	for range handshakesInFlightMax + 10 {
		conn, err := net.DialTimeout("tcp", b.Addr(), waitMax)
		require.NoError(t, err)
		flood = append(flood, conn)
	}
	defer func() {
		for _, conn := range flood {
			conn.Close()
		}
	}()
	requireEventually(t, func() bool { return b.Stats().HandshakesShed >= 10 }, "the oldest handshakes not shed")

	a := startTransport(t, testConfig("a", map[string]string{"b": b.Addr()}))
	received := resendUntilDelivered(t, a, b.inbox, func(seq int) msg.Envelope {
		return msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "through"}}
	})
	require.Equal(t, "a", received.From)
	require.Zero(t, a.Stats().Peers["b"].AuthFailures)
	require.Zero(t, b.Stats().InboundAuthFailures, "shed handshakes are no authentication failures")
	require.GreaterOrEqual(t, b.Stats().HandshakesShed, uint64(11), "the real peer's connection shed one more")
}

// The failure warnings are limited per second; the next one let through
// says how many were suppressed.
func TestFailureLogsAreRateLimited(t *testing.T) {
	var output bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&output, nil))
	limiter := newLogLimiter(3)
	now := time.Unix(1_000, 0)
	limiter.now = func() time.Time { return now }
	for range 10 {
		limiter.warn(logger, "peer handshake failed")
	}
	require.Equal(t, 3, strings.Count(output.String(), "peer handshake failed"))
	now = now.Add(time.Second)
	limiter.warn(logger, "peer handshake failed")
	lines := strings.Split(strings.TrimSpace(output.String()), "\n")
	require.Len(t, lines, 4)
	require.Contains(t, lines[3], "suppressed=7")
}
