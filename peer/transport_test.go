package peer

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// sendStream sends count rounds of sampleMessages from one transport to
// another and returns what the receiver must see, in order.
func sendStream(t *testing.T, from started, fromID, toID string, count int) []msg.Envelope {
	var expected []msg.Envelope
	for seq := range count {
		for _, message := range sampleMessages(seq) {
			env := msg.Envelope{From: fromID, To: toID, Message: message}
			from.Send(env)
			expected = append(expected, canonical(t, env))
		}
	}
	return expected
}

// receiveFrom takes count deliveries and splits them by sender.
func receiveFrom(t *testing.T, in *inbox, count int) map[string][]msg.Envelope {
	t.Helper()
	bySender := map[string][]msg.Envelope{}
	for range count {
		env := in.next()
		bySender[env.From] = append(bySender[env.From], env)
	}
	return bySender
}

// Two transports exchange every message type in both directions at once;
// each receiver sees the sender's stream complete and in order.
func TestTwoTransportsExchangeInOrder(t *testing.T) {
	checkGoroutinesEnd(t)
	cluster := startCluster(t, "a", "b")
	const rounds = 200
	toB := sendStream(t, cluster["a"], "a", "b", rounds)
	toA := sendStream(t, cluster["b"], "b", "a", rounds)

	require.Equal(t, toB, receiveFrom(t, cluster["b"].inbox, len(toB))["a"])
	require.Equal(t, toA, receiveFrom(t, cluster["a"].inbox, len(toA))["b"])
	cluster["a"].inbox.requireEmpty()
	cluster["b"].inbox.requireEmpty()

	// Sent is counted when a write returns, which may be after delivery.
	requireEventually(t, func() bool { return cluster["a"].Stats().Peers["b"].Sent == uint64(len(toB)) }, "sends not counted")
	stats := cluster["a"].Stats()
	require.Zero(t, stats.Peers["b"].Dropped)
	require.True(t, stats.Peers["b"].Connected)
	require.Equal(t, uint64(1), stats.Peers["b"].Connections, "one connection per peer, kept")
	require.Equal(t, uint64(len(toA)), stats.Delivered)
}

// Three transports all send to each other at the same time; per sender
// and receiver, order is preserved.
func TestThreeTransportsExchangeInOrder(t *testing.T) {
	checkGoroutinesEnd(t)
	ids := []string{"a", "b", "c"}
	cluster := startCluster(t, ids...)
	const rounds = 100
	expected := map[string]map[string][]msg.Envelope{} // receiver -> sender -> stream
	outgoing := map[string][]msg.Envelope{}            // sender -> what it sends, in order
	for _, to := range ids {
		expected[to] = map[string][]msg.Envelope{}
		for _, from := range ids {
			if from == to {
				continue
			}
			for seq := range rounds {
				for _, message := range sampleMessages(seq) {
					env := msg.Envelope{From: from, To: to, Message: message}
					outgoing[from] = append(outgoing[from], env)
					expected[to][from] = append(expected[to][from], canonical(t, env))
				}
			}
		}
	}
	var senders sync.WaitGroup
	for _, from := range ids {
		senders.Go(func() {
			for _, env := range outgoing[from] {
				cluster[from].Send(env)
			}
		})
	}
	senders.Wait()
	for _, to := range ids {
		count := len(expected[to][ids[0]]) + len(expected[to][ids[1]]) + len(expected[to][ids[2]])
		require.Equal(t, expected[to], receiveFrom(t, cluster[to].inbox, count), "deliveries to %s", to)
		cluster[to].inbox.requireEmpty()
	}
}

// Sending to an unknown id, to ourselves, or after Close counts the
// envelope as unroutable and returns.
func TestSendUnroutable(t *testing.T) {
	checkGoroutinesEnd(t)
	a := startTransport(t, testConfig("a", map[string]string{"a": "127.0.0.1:1"}))
	a.Send(msg.Envelope{From: "a", To: "nobody", Message: msg.Notify{Topic: "t"}})
	a.Send(msg.Envelope{From: "a", To: "a", Message: msg.Notify{Topic: "t"}})
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "Close is idempotent")
	a.Send(msg.Envelope{From: "a", To: "nobody", Message: msg.Notify{Topic: "t"}})
	stats := a.Stats()
	require.Equal(t, uint64(3), stats.Unroutable)
	require.Empty(t, stats.Peers, "an entry for the node itself is ignored")
	require.ErrorIs(t, a.SetPeer("b", "127.0.0.1:2"), ErrClosed)
	require.ErrorIs(t, a.Start(), ErrClosed)
}

// An envelope claiming another sender is a bug of the caller.
func TestSendFromAnotherNodePanics(t *testing.T) {
	checkGoroutinesEnd(t)
	a := startTransport(t, testConfig("a", nil))
	require.Panics(t, func() { a.Send(msg.Envelope{From: "b", To: "c", Message: msg.Notify{}}) })
}

// A peer that restarts on the same address is reconnected to and messages
// flow again; while it is down, Send never blocks and drops are counted.
func TestPeerRestartReconnects(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	address := b.Addr()
	cfg := testConfig("a", map[string]string{"b": address})
	cfg.SendQueueMax = 8
	a := startTransport(t, cfg)
	notify := func(seq int) msg.Envelope {
		return msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: fmt.Sprint(seq)}}
	}
	a.Send(notify(0))
	require.Equal(t, canonical(t, notify(0)), b.inbox.next())

	require.NoError(t, b.Close())
	for seq := 1; seq <= 1000; seq++ {
		a.Send(notify(seq))
	}
	requireEventually(t, func() bool { return a.Stats().Peers["b"].Dropped > 0 }, "no drop counted while the peer is down")
	requireEventually(t, func() bool { return !a.Stats().Peers["b"].Connected }, "still connected to a closed peer")

	restartedConfig := testConfig("b", nil)
	restartedConfig.ListenAddr = address
	restarted := startTransport(t, restartedConfig)
	received := resendUntilDelivered(t, a, restarted.inbox, notify)
	require.Equal(t, "a", received.From)
	stats := a.Stats().Peers["b"]
	require.GreaterOrEqual(t, stats.Reconnects, uint64(1))
	require.True(t, stats.Connected)
}

// resendUntilDelivered sends fresh envelopes until one arrives: after a
// restart the first ones may be written into the dead connection.
func resendUntilDelivered(t *testing.T, from started, in *inbox, envelope func(int) msg.Envelope) msg.Envelope {
	t.Helper()
	deadline := time.Now().Add(waitMax)
	for seq := 1_000_000; time.Now().Before(deadline); seq++ {
		from.Send(envelope(seq))
		if env, ok := in.nextWithin(20 * time.Millisecond); ok {
			return env
		}
	}
	t.Fatalf("nothing delivered within %v after the restart", waitMax)
	return msg.Envelope{}
}

// A writer idle on a connection whose peer hangs up notices at once: the
// first message after the peer restarts goes over a new connection and
// arrives, instead of vanishing into the dead one.
func TestIdleWriterNoticesHangUp(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	address := b.Addr()
	a := startTransport(t, testConfig("a", map[string]string{"b": address}))
	first := msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "before"}}
	a.Send(first)
	require.Equal(t, canonical(t, first), b.inbox.next())

	require.NoError(t, b.Close())
	requireEventually(t, func() bool { return !a.Stats().Peers["b"].Connected }, "hang-up not noticed")
	restartedConfig := testConfig("b", nil)
	restartedConfig.ListenAddr = address
	restarted := startTransport(t, restartedConfig)
	after := msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "after"}}
	a.Send(after)
	require.Equal(t, canonical(t, after), restarted.inbox.next())
	// Sent is counted when the write returns, which may be after delivery.
	requireEventually(t, func() bool { return a.Stats().Peers["b"].Sent == 2 }, "sends not counted")
	stats := a.Stats().Peers["b"]
	require.Zero(t, stats.Dropped)
	require.Equal(t, uint64(1), stats.Reconnects)
}
