package peer

import (
	"bytes"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// stalledPeer is a listener for node "b" that never reads what it is sent:
// with handshake set it first completes the handshake (so the dialer gets
// as far as writing frames), otherwise it never even accepts.
func stalledPeer(t *testing.T, handshake bool) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan struct{})
	t.Cleanup(func() {
		listener.Close()
		if handshake {
			<-accepted
		}
	})
	if handshake {
		go func() {
			defer close(accepted)
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			listenerHandshake(conn, keysOf("b", testSecret))
			t.Cleanup(func() { conn.Close() })
		}()
	}
	return listener.Addr().String()
}

// bigEnvelope is a forwarded produce of 512 KiB, to fill socket buffers
// quickly.
func bigEnvelope() msg.Envelope {
	record := msg.ProduceRecord{Partition: msg.PartitionNone, Payload: bytes.Repeat([]byte{'x'}, 512<<10)}
	request := msg.Produce{Topic: "t", Records: []msg.ProduceRecord{record}}
	return msg.Envelope{From: "a", To: "b", Message: msg.ForwardRequest{ID: 1, Request: request}}
}

// A peer that does not read makes Send drop once the queue is full; Send
// never blocks, and Close still ends the writer stuck in its write.
func TestSendDropsWhenQueueFullOfStalledPeer(t *testing.T) {
	for name, handshake := range map[string]bool{"stalled after handshake": true, "never accepts": false} {
		t.Run(name, func(t *testing.T) {
			checkGoroutinesEnd(t)
			cfg := testConfig("a", map[string]string{"b": stalledPeer(t, handshake)})
			cfg.SendQueueMax = 16
			cfg.WriteTimeout = time.Minute
			cfg.HandshakeTimeout = time.Minute
			a := startTransport(t, cfg)
			env := bigEnvelope()
			if handshake {
				a.Send(env)
				requireEventually(t, func() bool { return a.Stats().Peers["b"].Connected }, "never connected")
			}
			const sendsMax = 100_000
			sends := 0
			for ; sends < sendsMax && a.Stats().Peers["b"].Dropped == 0; sends++ {
				a.Send(env)
			}
			stats := a.Stats().Peers["b"]
			require.NotZero(t, stats.Dropped, "no drop after %d sends to a stalled peer", sends)
			require.LessOrEqual(t, stats.Queued, cfg.SendQueueMax)
			require.Equal(t, handshake, stats.Connected)
			for range cfg.SendQueueMax {
				a.Send(env)
			}
			require.Greater(t, a.Stats().Peers["b"].Dropped, stats.Dropped, "a full queue keeps dropping")
			require.NoError(t, a.Close())
		})
	}
}

// goroutinesRunning counts the live goroutines whose stack mentions
// function.
func goroutinesRunning(function string) int {
	count := 0
	for _, stack := range packageGoroutines() {
		if strings.Contains(stack, function) {
			count++
		}
	}
	return count
}

// RemovePeer ends the peer's writer (even one stuck in a handshake) and
// makes the id unroutable.
func TestRemovePeerStopsItsWriter(t *testing.T) {
	checkGoroutinesEnd(t)
	cfg := testConfig("a", map[string]string{"b": stalledPeer(t, false)})
	cfg.HandshakeTimeout = time.Minute
	a := startTransport(t, cfg)
	a.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
	requireEventually(t, func() bool { return goroutinesRunning("(*Transport).runWriter") == 1 }, "writer not started")
	a.RemovePeer("b")
	requireEventually(t, func() bool { return goroutinesRunning("(*Transport).runWriter") == 0 }, "writer still running")
	a.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
	require.Equal(t, uint64(1), a.Stats().Unroutable)
	require.NotContains(t, a.Stats().Peers, "b")
	a.RemovePeer("b") // unknown ids are ignored
}

// SetPeer with a new address moves the peer: the writer drops the old
// connection and dials the new address.
func TestSetPeerMovesToNewAddress(t *testing.T) {
	checkGoroutinesEnd(t)
	old, moved := startTransport(t, testConfig("b", nil)), startTransport(t, testConfig("b", nil))
	a := startTransport(t, testConfig("a", map[string]string{"b": old.Addr()}))
	notify := func(seq int) msg.Envelope {
		return msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}}
	}
	a.Send(notify(0))
	old.inbox.next()
	require.NoError(t, a.SetPeer("b", moved.Addr()))
	require.Equal(t, moved.Addr(), a.Stats().Peers["b"].Address)
	resendUntilDelivered(t, a, moved.inbox, notify)
	require.ErrorIs(t, a.SetPeer("", "127.0.0.1:1"), ErrInvalidConfig)
	require.ErrorIs(t, a.SetPeer("c", "no port"), ErrInvalidConfig)
}

// Close returns with a connection in every state (up, stalled in a write,
// in a handshake, and accepted by a listener), and every goroutine of the
// package ends; the number of goroutines returns to where it was.
func TestCloseEndsEveryGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	cluster := startCluster(t, "a", "b", "c")
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, cluster[id].SetPeer("stalled", stalledPeer(t, false)))
		cluster[id].Send(msg.Envelope{From: id, To: "stalled", Message: msg.Notify{Topic: "t"}})
		for _, to := range []string{"a", "b", "c"} {
			cluster[id].Send(msg.Envelope{From: id, To: to, Message: msg.Notify{Topic: "t"}})
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		receiveFrom(t, cluster[id].inbox, 2)
	}
	require.NotEmpty(t, packageGoroutines())
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, cluster[id].Close())
	}
	// Close waited for every goroutine to finish its work; a goroutine may
	// still be on its way out of the runtime, so this polls.
	require.True(t, eventually(func() bool { return len(packageGoroutines()) == 0 }), "goroutines left: %v", packageGoroutines())
	if !eventually(func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("goroutines before %d, after %d:\n%s", before, runtime.NumGoroutine(), buf[:n])
	}
}

// eventually reports whether condition came to hold within waitMax.
func eventually(condition func() bool) bool {
	deadline := time.Now().Add(waitMax)
	for !condition() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// payloadEnvelope is a forwarded produce of one record of size bytes.
func payloadEnvelope(size int) msg.Envelope {
	record := msg.ProduceRecord{Partition: msg.PartitionNone, Payload: bytes.Repeat([]byte{'y'}, size)}
	return msg.Envelope{From: "a", To: "b", Message: msg.ForwardRequest{ID: 2, Request: msg.Produce{Topic: "t", Records: []msg.ProduceRecord{record}}}}
}

// The queue of a peer that does not read is bounded in payload bytes as
// well as in envelopes: behind a stalled peer, large envelopes stop being
// queued at SendQueueBytesMax, far below SendQueueMax of them, and the
// bytes queued are in Stats. A single envelope over the bound is still
// queued when nothing else is.
func TestSendQueueIsBoundedInBytesBehindAStalledPeer(t *testing.T) {
	checkGoroutinesEnd(t)
	cfg := testConfig("a", map[string]string{"b": stalledPeer(t, false)})
	cfg.SendQueueBytesMax = 1 << 20
	cfg.HandshakeTimeout = time.Minute
	a := startTransport(t, cfg)
	a.Send(payloadEnvelope(2 << 20))
	require.Zero(t, a.Stats().Peers["b"].Dropped, "one envelope over the bound, alone, is queued")
	a.Send(payloadEnvelope(2 << 20))
	require.Equal(t, uint64(1), a.Stats().Peers["b"].Dropped, "a second one is not")

	small := testConfig("a", map[string]string{"b": stalledPeer(t, false)})
	small.SendQueueBytesMax = 1 << 20
	small.HandshakeTimeout = time.Minute
	b := startTransport(t, small)
	for range 64 {
		b.Send(payloadEnvelope(64 << 10))
	}
	stats := b.Stats().Peers["b"]
	require.LessOrEqual(t, stats.QueuedBytes, small.SendQueueBytesMax)
	require.Less(t, stats.Queued, 64, "envelopes past the byte bound are dropped")
	sent := int(stats.Dropped) + stats.Queued // and one the writer may hold
	require.True(t, sent == 64 || sent == 63, "each envelope is queued, dropped and counted, or with the writer: %+v", stats)
}
