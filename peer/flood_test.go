package peer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/loglimit"
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
	now := time.Unix(1_000, 0)
	limiter := failureWarnings{limiter: loglimit.NewWithClock(3, func() time.Time { return now })}
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

// A flood of connections that never authenticate, from one address, sheds
// its own handshakes, not one from another address in progress: the
// shed handshake is the oldest of the address that holds the most. The
// oldest overall was shed before, so a flood from one host could keep a
// real peer's handshake from ever completing.
func TestAHandshakeFloodFromOneAddressShedsItsOwnHandshakes(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	dialFrom := func(ip string) net.Conn {
		dialer := net.Dialer{Timeout: waitMax, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		conn, err := dialer.Dial("tcp", b.Addr())
		require.NoError(t, err)
		return conn
	}
	inProgress := dialFrom("127.0.0.1") // a peer's handshake, not yet complete
	defer inProgress.Close()
	var flood []net.Conn
	defer func() {
		for _, conn := range flood {
			conn.Close()
		}
	}()
	for range handshakesInFlightMax + 10 {
		flood = append(flood, dialFrom("127.0.0.2"))
	}
	requireEventually(t, func() bool { return b.Stats().HandshakesShed >= 11 }, "the flood's handshakes not shed")
	require.NoError(t, inProgress.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err := io.Copy(io.Discard, inProgress) // what the listener sent of its handshake, then the end or the deadline
	var netError net.Error
	require.True(t, errors.As(err, &netError) && netError.Timeout(), "the handshake from the other address is still open: %v", err)
}

// addressedConn is a connection that only reports its remote address.
type addressedConn struct {
	net.Conn
	remote net.Addr
}

func (c addressedConn) RemoteAddr() net.Addr { return c.remote }

// Under a flood from many addresses, one handshake each, the oldest
// handshake is shed, not those of two peers on one machine that began
// just now: shedding by host applies only to a host holding
// floodHandshakesMin or more (shed by host alone, the pair lived one
// arrival instead of 62; found in review).
func TestAFloodFromManyAddressesShedsTheOldestHandshake(t *testing.T) {
	from := func(ip string, port int) net.Conn {
		return addressedConn{remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}}
	}
	var handshaking []net.Conn
	for i := range handshakesInFlightMax - 2 {
		handshaking = append(handshaking, from(fmt.Sprintf("192.0.2.%d", i+1), 40000))
	}
	handshaking = append(handshaking, from("10.0.0.1", 50001), from("10.0.0.1", 50002))
	require.Equal(t, 0, shedIndex(handshaking), "the flood's oldest")
	for i := range floodHandshakesMin {
		handshaking[10+i] = from("198.51.100.1", 40000+i)
	}
	require.Equal(t, 10, shedIndex(handshaking), "the oldest of a host holding floodHandshakesMin")
}

// Stats show what the peer port holds now: the authenticated connections
// and the handshakes in flight, which anyone who reaches the port can fill
// up to their bound (only counters of refusals and sheds were visible).
func TestStatsShowWhatThePeerPortHolds(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	a := startTransport(t, testConfig("a", map[string]string{"b": b.Addr()}))
	a.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
	b.inbox.next()
	require.Equal(t, 1, b.Stats().InboundConnections)
	require.Zero(t, b.Stats().HandshakesInFlight)

	var silent []net.Conn
	closeSilent := func() {
		for _, conn := range silent {
			conn.Close()
		}
	}
	defer closeSilent()
	for range handshakesInFlightMax + 5 {
		conn, err := net.DialTimeout("tcp", b.Addr(), waitMax)
		require.NoError(t, err)
		silent = append(silent, conn)
	}
	requireEventually(t, func() bool { return b.Stats().HandshakesShed == 5 }, "the oldest handshakes not shed")
	stats := b.Stats()
	require.Equal(t, handshakesInFlightMax, stats.HandshakesInFlight, "the silent connections fill the bound")
	require.Equal(t, 1, stats.InboundConnections, "a shed handshake is no authenticated connection")
	closeSilent()
	requireEventually(t, func() bool { return b.Stats().HandshakesInFlight == 0 }, "closed handshakes still counted")
}
