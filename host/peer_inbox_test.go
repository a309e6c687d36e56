package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// envelopeOf is a peer envelope carrying payload bytes of payload.
func envelopeOf(payload int) msg.Envelope {
	return msg.Envelope{From: "n2", To: "n1", Message: msg.ForwardRequest{ID: 1, Request: msg.Produce{Topic: "t", Batch: true,
		Records: []msg.ProduceRecord{{Partition: 0, Payload: make([]byte, payload)}}}}}
}

// The peer inbox holds at most its bytes bound: a message that would pass
// it waits (its connection's reader blocks) until the loop took enough;
// one message alone always fits, however large; stopping releases a
// waiting reader.
func TestThePeerInboxIsBoundedInBytes(t *testing.T) {
	l := &loop{peerInbox: make(chan msg.Envelope, peerInboxCapacity), peerRoom: make(chan struct{}, 1), done: make(chan struct{}),
		peerBytesMax: 1_000}
	l.fromPeer(envelopeOf(5_000)) // alone: fits
	require.Equal(t, int64(msg.PayloadBytes(envelopeOf(5_000))), l.peerInboxBytes.Load())

	queued := make(chan struct{})
	go func() {
		l.fromPeer(envelopeOf(10))
		close(queued)
	}()
	select {
	case <-queued:
		t.Fatal("a message past the bound was queued")
	case <-time.After(50 * time.Millisecond): // it waits; no assertion on how long
	}
	require.Len(t, l.peerInbox, 1)
	l.tookFromPeer(<-l.peerInbox)
	select {
	case <-queued:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting message was never queued once there was room")
	}
	require.Len(t, l.peerInbox, 1)
	require.Equal(t, int64(msg.PayloadBytes(envelopeOf(10))), l.peerInboxBytes.Load())

	l.fromPeer(envelopeOf(500)) // fits beside the small one
	stopped := make(chan struct{})
	go func() {
		l.fromPeer(envelopeOf(900))
		close(stopped)
	}()
	close(l.done)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("a reader waiting for room was not released by the stop")
	}
}
