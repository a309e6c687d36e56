package peer

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// The node relies on "from one peer, envelopes arrive in the order they
// were sent while a connection lasts" and the simulator models a reset as
// losing what was in flight. When the receiver's reader is slow (the
// loop's peer inbox is full, so deliver blocks), the sender's write times
// out and it redials: the old connection's reader must not deliver the
// frames it still holds after the new connection delivered newer ones.
func TestAReconnectNeverReordersEnvelopes(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []int64
	deliver := func(env msg.Envelope) {
		seq := int64(-1)
		if s, ok := env.Message.(msg.Subscribe); ok {
			seq = s.ForMs
		}
		if seq < 0 {
			return // filler
		}
		mu.Lock()
		order = append(order, seq)
		mu.Unlock()
		if seq == 0 {
			select { // the loop is busy: its inbox is full
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
	}
	b, err := New(testConfig("b", nil), deliver, testLogger())
	require.NoError(t, err)
	require.NoError(t, b.Start())
	defer b.Close()

	cfg := testConfig("a", map[string]string{"b": b.Addr()})
	cfg.WriteTimeout = 300 * time.Millisecond
	cfg.SendQueueBytesMax = 1 << 30
	a := startTransport(t, cfg)

	subscribe := func(seq int64) msg.Envelope {
		return msg.Envelope{From: "a", To: "b", Message: msg.Subscribe{Topic: "t", ForMs: seq}}
	}
	filler := func() msg.Envelope {
		record := msg.ProduceRecord{Partition: msg.PartitionNone, Payload: bytes.Repeat([]byte{'x'}, 512<<10)}
		return msg.Envelope{From: "a", To: "b", Message: msg.ForwardRequest{ID: 1, Request: msg.Produce{Topic: "t", Records: []msg.ProduceRecord{record}}}}
	}
	for seq := int64(0); seq < 50; seq++ {
		a.Send(subscribe(seq))
	}
	for range 64 { // 32 MiB: more than the socket buffers hold, so the write times out
		a.Send(filler())
	}
	// The write times out and the writer redials; the new connection
	// carries what is sent from now on.
	require.Eventually(t, func() bool { return a.Stats().Peers["b"].Connections >= 2 }, 20*time.Second, 5*time.Millisecond, "no reconnect")
	for seq := int64(1000); seq < 1010; seq++ {
		a.Send(subscribe(seq))
	}
	delivered := func(seq int64) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(order, seq)
		}
	}
	// Give the new connection time to deliver while the old reader is
	// still stuck in deliver (it does, at once, on the current code).
	deadline := time.Now().Add(3 * time.Second)
	for !delivered(1009)() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(release) // the loop catches up
	require.Eventually(t, delivered(1009), 20*time.Second, 5*time.Millisecond, "the new connection delivered nothing")
	time.Sleep(500 * time.Millisecond) // let the old reader deliver what it still holds
	mu.Lock()
	defer mu.Unlock()
	t.Logf("delivery order: %v", order)
	for i := 1; i < len(order); i++ {
		require.Greater(t, order[i], order[i-1], "envelope %d of a delivered after %d, which a sent later", order[i], order[i-1])
	}
}
