package peer

import (
	"bytes"
	"sync/atomic"
	"testing"

	"narad/msg"
)

// counter is a deliver function that counts and signals every window.
type counter struct {
	delivered atomic.Int64
	window    int64
	signal    chan struct{}
}

func (c *counter) deliver(msg.Envelope) {
	if c.delivered.Add(1)%c.window == 0 {
		c.signal <- struct{}{}
	}
}

// BenchmarkSendReceive measures one sender streaming to one receiver over
// loopback, keeping at most one window of messages outstanding so that
// nothing is dropped.
func BenchmarkSendReceive(b *testing.B) {
	payload := bytes.Repeat([]byte{'x'}, 64<<10)
	produce := msg.ForwardRequest{ID: 1, Request: msg.Produce{Topic: "t",
		Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: payload}}}}
	cases := []struct {
		name    string
		message msg.PeerMessage
		bytes   int64
	}{
		{"notify", msg.Notify{Topic: "orders"}, 0},
		{"produce-64KiB", produce, int64(len(payload))},
	}
	for _, tls := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if tls {
				name += "-tls"
			}
			b.Run(name, func(b *testing.B) { benchmarkStream(b, c.message, c.bytes, tls) })
		}
	}
}

func benchmarkStream(b *testing.B, message msg.PeerMessage, payloadBytes int64, useTLS bool) {
	const window = 512
	receiverConfig, senderConfig := testConfig("b", nil), testConfig("a", nil)
	senderConfig.SendQueueMax = 2 * window
	if useTLS {
		ca := newAuthority(b, "bench ca")
		certificateA, certificateB := ca.issue(b, "a"), ca.issue(b, "b")
		receiverConfig.TLS, senderConfig.TLS = mutualTLS(ca, &certificateB), mutualTLS(ca, &certificateA)
	}
	sink := &counter{window: window, signal: make(chan struct{}, 1)}
	receiver, err := New(receiverConfig, sink.deliver, nil)
	if err != nil || receiver.Start() != nil {
		b.Fatal(err)
	}
	defer receiver.Close()
	senderConfig.Peers = map[string]string{"b": receiver.Addr()}
	sender, err := New(senderConfig, func(msg.Envelope) {}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sender.Close()
	env := msg.Envelope{From: "a", To: "b", Message: message}
	b.SetBytes(payloadBytes)
	b.ResetTimer()
	for sent := 1; sent <= b.N; sent++ {
		sender.Send(env)
		if sent%window == 0 {
			<-sink.signal
		}
	}
	b.StopTimer()
	if dropped := sender.Stats().Peers["b"].Dropped; dropped != 0 {
		b.Fatalf("%d messages dropped", dropped)
	}
}
