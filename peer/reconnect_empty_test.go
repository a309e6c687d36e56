package peer

import (
	cryptorand "crypto/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire"
)

// dialAsForTest opens a raw connection to b's listener and authenticates as id.
func dialAsForTest(t *testing.T, b *Transport, id string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, dialerHandshake(conn, handshakeKeys{secret: testSecret, localID: id, random: cryptorand.Reader}, "b"))
	require.NoError(t, conn.SetDeadline(time.Time{}))
	return conn
}

// sendSeq writes one envelope from "a" to "b" carrying seq.
func sendSeq(t *testing.T, conn net.Conn, seq int64) {
	t.Helper()
	payload, err := wire.EncodeEnvelope(nil, msg.Envelope{From: "a", To: "b", Message: msg.Subscribe{Topic: "t", ForMs: seq}})
	require.NoError(t, err)
	_, err = conn.Write(wire.AppendFrame(nil, payload))
	require.NoError(t, err)
}

// A connection of the dialer that ends before delivering anything while an
// older connection's reader is still in the middle of a delivery: the
// next connection waits for that delivery, never lands its newer envelope
// first.
func TestAReaderInADeliveryIsNotOvertakenAfterAnEmptyConnection(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan int64, 16)
	var mu sync.Mutex
	var completed []int64
	deliver := func(env msg.Envelope) {
		seq := env.Message.(msg.Subscribe).ForMs
		entered <- seq
		if seq == 1 {
			select { // the loop is busy
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
		mu.Lock()
		completed = append(completed, seq)
		mu.Unlock()
	}
	b, err := New(testConfig("b", nil), deliver, testLogger())
	require.NoError(t, err)
	require.NoError(t, b.Start())
	defer b.Close()

	connA := dialAsForTest(t, b, "a")
	defer connA.Close()
	sendSeq(t, connA, 1)
	select {
	case seq := <-entered:
		require.Equal(t, int64(1), seq)
	case <-time.After(10 * time.Second):
		t.Fatal("envelope 1 never delivered")
	}

	// The dialer reconnects (B replaces A) and B ends at once.
	connB := dialAsForTest(t, b, "a")
	connB.Close()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, id := range b.mu.inbound {
			if id == "a" && len(b.mu.current) == 0 {
				return true // only A (still delivering) is left
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "B's reader never ended")

	connC := dialAsForTest(t, b, "a")
	defer connC.Close()
	sendSeq(t, connC, 3)
	time.Sleep(1500 * time.Millisecond) // C's reader may deliver now
	close(release)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completed) == 2
	}, 20*time.Second, 5*time.Millisecond, "not both delivered")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int64{1, 3}, completed, "envelope 3, sent on a newer connection, landed before envelope 1")
}
