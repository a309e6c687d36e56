package peer

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire"
)

// The step doubles from min to max; each pause lies in [step/2, step];
// reset starts over.
func TestBackoffDoublesWithJitter(t *testing.T) {
	const minimum, maximum = 100 * time.Millisecond, 1600 * time.Millisecond
	b := newBackoff(minimum, maximum, rand.New(rand.NewPCG(1, 2)))
	steps := []time.Duration{100, 200, 400, 800, 1600, 1600, 1600}
	var pauses []time.Duration
	for round := range 3 {
		for _, step := range steps {
			step *= time.Millisecond
			pause := b.next()
			require.GreaterOrEqual(t, pause, step/2, "round %d", round)
			require.LessOrEqual(t, pause, step, "round %d", round)
			pauses = append(pauses, pause)
		}
		b.reset()
	}
	distinct := map[time.Duration]bool{}
	for _, pause := range pauses {
		distinct[pause] = true
	}
	require.Greater(t, len(distinct), len(steps), "the pauses are jittered, not the bare steps")
}

// The same seed and ids give the same pauses; other ids give others.
func TestBackoffJitterIsSeeded(t *testing.T) {
	draw := func(localID, peerID string) []time.Duration {
		b := newBackoff(time.Millisecond, time.Second, rand.New(rand.NewPCG(7, jitterStream(localID, peerID))))
		var pauses []time.Duration
		for range 10 {
			pauses = append(pauses, b.next())
		}
		return pauses
	}
	require.Equal(t, draw("a", "c"), draw("a", "c"))
	require.NotEqual(t, draw("a", "c"), draw("b", "c"), "two nodes reconnecting to c spread out")
}

// dialLog records the (fake) times of dial attempts.
type dialLog struct {
	mu       sync.Mutex
	attempts []time.Time
}

func (d *dialLog) refuse(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.attempts = append(d.attempts, time.Now())
	return nil, errors.New("connection refused (test)")
}

// Against a peer that refuses every connection, attempts are spaced by
// the backoff schedule, each failure drops what was queued, and nothing is
// lost without being counted. Runs on synctest's fake clock, so the
// schedule is checked exactly and without waiting.
func TestReconnectFollowsBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("a", map[string]string{"b": "127.0.0.1:9"})
		cfg.ReconnectBackoffMin, cfg.ReconnectBackoffMax = 100*time.Millisecond, 800*time.Millisecond
		cfg.SendQueueMax = 64
		transport, err := New(cfg, func(msg.Envelope) { t.Error("nothing can be delivered") }, nil)
		require.NoError(t, err)
		dials := &dialLog{}
		transport.dial = dials.refuse

		const sends, sendInterval = 5000, time.Millisecond
		for range sends {
			transport.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
			time.Sleep(sendInterval)
		}
		synctest.Wait()
		stats := transport.Stats().Peers["b"]
		require.Equal(t, uint64(sends), stats.Dropped+uint64(stats.Queued), "every envelope is dropped or still queued")
		require.Zero(t, stats.Sent)
		require.Equal(t, uint64(len(dials.attempts)), stats.DialFailures)
		require.NoError(t, transport.Close())

		steps := []time.Duration{100, 200, 400, 800}
		require.Greater(t, len(dials.attempts), len(steps)+2)
		for i := 1; i < len(dials.attempts); i++ {
			step := steps[min(i-1, len(steps)-1)] * time.Millisecond
			gap := dials.attempts[i].Sub(dials.attempts[i-1])
			require.GreaterOrEqual(t, gap, step/2, "gap %d", i)
			require.LessOrEqual(t, gap, step+sendInterval, "gap %d", i) // the writer redials on the next Send
		}
	})
}

// scriptedDialer refuses every attempt except the one numbered accept
// (from 1), which it answers with an in-memory connection to a listener
// that completes the handshake, reads one frame, waits hold and hangs up.
type scriptedDialer struct {
	dialLog
	accept   int
	hold     time.Duration
	frames   chan []byte
	listener sync.WaitGroup
}

func (d *scriptedDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.attempts = append(d.attempts, time.Now())
	attempt := len(d.attempts)
	d.mu.Unlock()
	if attempt != d.accept {
		return nil, errors.New("connection refused (test)")
	}
	dialerEnd, listenerEnd := net.Pipe()
	d.listener.Go(func() {
		defer listenerEnd.Close()
		if _, err := listenerHandshake(listenerEnd, keysOf("b", testSecret)); err != nil {
			return
		}
		if frame, err := wire.ReadFrame(listenerEnd, nil); err == nil {
			d.frames <- frame
		}
		time.Sleep(d.hold)
	})
	return dialerEnd, nil
}

// scriptedRun sends to peer b every sendInterval for sends messages
// (inside a synctest bubble) while b refuses every dial but the fourth,
// whose connection lasts hold after its first frame; it returns the
// dialer, once the transport is closed, and b's stats before the close.
func scriptedRun(t *testing.T, hold time.Duration) (*scriptedDialer, PeerStats, Config) {
	cfg := testConfig("a", map[string]string{"b": "127.0.0.1:9"})
	cfg.ReconnectBackoffMin, cfg.ReconnectBackoffMax = 100*time.Millisecond, 800*time.Millisecond
	transport, err := New(cfg, func(msg.Envelope) {}, nil)
	require.NoError(t, err)
	dialer := &scriptedDialer{accept: 4, hold: hold, frames: make(chan []byte, 1)}
	transport.dial = dialer.dial
	for range scriptedSends {
		transport.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
		time.Sleep(scriptedSendInterval)
	}
	synctest.Wait()
	stats := transport.Stats().Peers["b"]
	require.NoError(t, transport.Close())
	dialer.listener.Wait()
	return dialer, stats, cfg
}

const scriptedSends, scriptedSendInterval = 3000, time.Millisecond

// A connection that lasts connectionHealthyMin resets the backoff: after
// it breaks, the next failed attempt is followed by a pause of the
// minimum step again.
func TestBackoffResetsAfterConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dialer, stats, cfg := scriptedRun(t, connectionHealthyMin)
		require.Equal(t, uint64(1), stats.Connections)
		require.Zero(t, stats.ShortConnections)
		require.Equal(t, uint64(scriptedSends), stats.Sent+stats.Dropped+uint64(stats.Queued), "every envelope is accounted for")
		require.Len(t, dialer.frames, 1, "the accepted connection carried a frame")

		attempts := dialer.attempts
		require.Greater(t, len(attempts), 6)
		gapAfterFirstFailureSinceConnection := attempts[5].Sub(attempts[4])
		require.GreaterOrEqual(t, gapAfterFirstFailureSinceConnection, cfg.ReconnectBackoffMin/2)
		require.LessOrEqual(t, gapAfterFirstFailureSinceConnection, cfg.ReconnectBackoffMin+scriptedSendInterval)
		gapBeforeConnection := attempts[3].Sub(attempts[2])
		require.GreaterOrEqual(t, gapBeforeConnection, 2*cfg.ReconnectBackoffMin, "third failure waits the 400 ms step")
	})
}

// A connection the peer closes at once (as a receiver does on a frame it
// refuses) is a failed attempt: the writer waits its backoff before it
// dials and authenticates again, instead of redialing for every message.
func TestAConnectionClosedAtOnceKeepsBackingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dialer, stats, cfg := scriptedRun(t, 0)
		require.Equal(t, uint64(1), stats.Connections)
		require.Equal(t, uint64(1), stats.ShortConnections)

		attempts := dialer.attempts
		require.Greater(t, len(attempts), 4)
		gapAfterShortConnection := attempts[4].Sub(attempts[3])
		require.GreaterOrEqual(t, gapAfterShortConnection, cfg.ReconnectBackoffMax/2, "the short connection waits the next step, 800 ms")
	})
}

// While the writer waits out its backoff after a failed attempt, Stats
// says so (the host keeps the peer marked unreachable meanwhile: a
// message queued then waits for the next attempt); the flag clears when
// the pause ends.
func TestStatsReportTheBackoffAfterAFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("a", map[string]string{"b": "127.0.0.1:9"})
		cfg.ReconnectBackoffMin, cfg.ReconnectBackoffMax = 100*time.Millisecond, 100*time.Millisecond
		transport, err := New(cfg, func(msg.Envelope) { t.Error("nothing can be delivered") }, nil)
		require.NoError(t, err)
		defer transport.Close()
		dials := &dialLog{}
		transport.dial = dials.refuse
		require.False(t, transport.Stats().Peers["b"].BackingOff, "no attempt yet")

		transport.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
		synctest.Wait()
		stats := transport.Stats().Peers["b"]
		require.Equal(t, uint64(1), stats.DialFailures)
		require.True(t, stats.BackingOff, "the attempt failed: the writer waits out its backoff")
		time.Sleep(cfg.ReconnectBackoffMax)
		synctest.Wait()
		require.False(t, transport.Stats().Peers["b"].BackingOff, "the pause is over; the next Send dials at once")
	})
}

// The pause after a connection the peer closed at once is a backoff like
// the one after a failed attempt, and Stats says so: a peer that refuses
// every frame (one of another wire version closes at the first) was
// reported reachable through every pause, so the host kept forwarding
// into a queue that waited out the pause, and each forward timed out
// (peer review).
func TestStatsReportTheBackoffAfterAShortConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig("a", map[string]string{"b": "127.0.0.1:9"})
		cfg.ReconnectBackoffMin, cfg.ReconnectBackoffMax = 100*time.Millisecond, 100*time.Millisecond
		transport, err := New(cfg, func(msg.Envelope) {}, nil)
		require.NoError(t, err)
		defer transport.Close()
		dialer := &scriptedDialer{accept: 1, frames: make(chan []byte, 1)}
		transport.dial = dialer.dial
		defer dialer.listener.Wait()

		transport.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
		synctest.Wait()
		stats := transport.Stats().Peers["b"]
		require.Equal(t, uint64(1), stats.ShortConnections, "b closed the connection after its first frame")
		require.True(t, stats.BackingOff, "the writer waits out its backoff before it dials again")
		time.Sleep(cfg.ReconnectBackoffMax)
		synctest.Wait()
		require.False(t, transport.Stats().Peers["b"].BackingOff, "the pause is over; the next Send dials at once")
	})
}
