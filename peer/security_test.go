package peer

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire"
)

// A transport with another secret cannot reach its peer: the handshake
// fails on both sides, both count it, and nothing is delivered.
func TestWrongSecretFailsBothSidesAndDeliversNothing(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	cfg := testConfig("a", map[string]string{"b": b.Addr()})
	cfg.Secret = []byte("not the cluster secret")
	a := startTransport(t, cfg)
	requireEventually(t, func() bool {
		a.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
		return a.Stats().Peers["b"].AuthFailures >= 2 && b.Stats().InboundAuthFailures >= 2
	}, "handshake failures not counted on both sides")
	stats := a.Stats().Peers["b"]
	require.Zero(t, stats.Connections)
	require.Zero(t, stats.Sent)
	require.False(t, stats.Connected)
	require.Zero(t, b.Stats().Delivered)
	b.inbox.requireEmpty()
}

// recorder keeps a copy of everything written through it.
type recorder struct {
	io.ReadWriter
	written bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.written.Write(p)
	return r.ReadWriter.Write(p)
}

// dialAs connects to address and runs the dialer's handshake as id,
// returning the connection and the bytes the dialer sent.
func dialAs(t *testing.T, address string, keys handshakeKeys, expectedID string) (net.Conn, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", address, waitMax)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(waitMax)))
	recording := &recorder{ReadWriter: conn}
	require.NoError(t, dialerHandshake(recording, keys, expectedID))
	return conn, recording.written.Bytes()
}

// requireClosedByPeer reads from conn until the other side closes it,
// and fails if that does not happen or if it sent anything but its
// refusal (the listener's verdict on a wrong proof).
func requireClosedByPeer(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitMax)))
	received, err := io.ReadAll(conn)
	if err != nil {
		require.True(t, isConnectionReset(err), "connection not closed by the peer: %v", err)
	}
	if len(received) > 0 {
		require.Equal(t, []byte{verdictRefused}, received, "the peer sent bytes besides its refusal")
	}
}

// The recorded bytes of a good handshake, replayed on a new connection,
// are refused: the listener's fresh nonce makes the old proof worthless.
// A frame sent after the replayed handshake is never delivered.
func TestReplayedHandshakeIsRejected(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	good, transcript := dialAs(t, b.Addr(), keysOf("a", testSecret), "b")
	good.Close()

	replay, err := net.DialTimeout("tcp", b.Addr(), waitMax)
	require.NoError(t, err)
	defer replay.Close()
	require.NoError(t, replay.SetDeadline(time.Now().Add(waitMax)))
	_, err = readChallenge(replay) // the new challenge, ignored by the replayer
	require.NoError(t, err)
	frame := frameOf(t, msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "replayed"}})
	_, err = replay.Write(append(transcript, frame...))
	require.NoError(t, err)
	requireClosedByPeer(t, replay)

	requireEventually(t, func() bool { return b.Stats().InboundAuthFailures == 1 }, "replay not counted as a failed handshake")
	require.Zero(t, b.Stats().Delivered)
	b.inbox.requireEmpty()
}

// frameOf encodes env as one frame.
func frameOf(t *testing.T, env msg.Envelope) []byte {
	t.Helper()
	payload, err := wire.EncodeEnvelope(nil, env)
	require.NoError(t, err)
	return wire.AppendFrame(nil, payload)
}

// A listener that does not hold the secret (it answers with a made-up
// proof) is refused by the dialer, which then writes no frame to it.
func TestDialerRejectsListenerWithoutSecret(t *testing.T) {
	checkGoroutinesEnd(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	impostor := make(chan []byte, 1)
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			impostor <- nil
			return
		}
		defer conn.Close()
		impostor <- impersonate(conn)
	}()
	a := startTransport(t, testConfig("a", map[string]string{"b": listener.Addr().String()}))
	a.Send(msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "secret stuff"}})

	var afterProof []byte
	select {
	case afterProof = <-impostor:
	case <-time.After(waitMax):
		t.Fatal("the impostor saw no connection")
	}
	require.Empty(t, afterProof, "the dialer sent frames to a listener that did not prove the secret")
	requireEventually(t, func() bool { return a.Stats().Peers["b"].AuthFailures >= 1 }, "failure not counted")
	require.Zero(t, a.Stats().Peers["b"].Sent)
}

// impersonate plays a listener without the secret: challenge, read the
// dialer's hello and proof, accept it with a random proof, then return
// whatever the dialer sends until it hangs up.
func impersonate(conn net.Conn) []byte {
	conn.SetDeadline(time.Now().Add(waitMax))
	var nonce [nonceBytes]byte
	rand.Read(nonce[:])
	if _, err := conn.Write(appendChallenge(nil, nonce)); err != nil {
		return nil
	}
	if _, err := readHello(conn); err != nil {
		return nil
	}
	if _, err := readProof(conn); err != nil {
		return nil
	}
	fake := make([]byte, macBytes)
	rand.Read(fake)
	conn.Write(append([]byte{verdictAccepted}, fake...))
	rest, _ := io.ReadAll(conn)
	return rest
}

// An authenticated peer announcing a frame over wire.FrameBytesMax loses
// its connection, and the reader allocates nothing near the claimed size.
func TestOversizedFrameClosesConnectionWithoutAllocating(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	conn, _ := dialAs(t, b.Addr(), keysOf("a", testSecret), "b")
	const claimedBytes = 1<<32 - 1
	require.Greater(t, claimedBytes, wire.FrameBytesMax)
	header := []byte{'N', 'W', wire.Version}
	header = binary.BigEndian.AppendUint32(header, claimedBytes)
	header = binary.BigEndian.AppendUint32(header, 0)
	require.Len(t, header, wire.FrameHeaderBytes)

	before := totalAllocatedBytes()
	_, err := conn.Write(header)
	require.NoError(t, err)
	requireClosedByPeer(t, conn)
	requireEventually(t, func() bool { return b.Stats().InboundBroken == 1 }, "oversized frame not counted")
	require.Less(t, totalAllocatedBytes()-before, uint64(wire.FrameBytesMax),
		"the reader allocated on the scale of the claimed frame")
	b.inbox.requireEmpty()
}

func totalAllocatedBytes() uint64 {
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.TotalAlloc
}

// An authenticated peer may not speak for another node, nor address
// another node: such an envelope closes the connection undelivered.
func TestMisaddressedEnvelopeClosesConnection(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	for index, env := range []msg.Envelope{
		{From: "c", To: "b", Message: msg.Notify{Topic: "forged sender"}},
		{From: "a", To: "c", Message: msg.Notify{Topic: "wrong receiver"}},
	} {
		conn, _ := dialAs(t, b.Addr(), keysOf("a", testSecret), "b")
		_, err := conn.Write(frameOf(t, env))
		require.NoError(t, err)
		requireClosedByPeer(t, conn)
		requireEventually(t, func() bool { return b.Stats().InboundBroken == uint64(index+1) }, "not counted: %v", env)
	}
	b.inbox.requireEmpty()
}

// A frame whose checksum does not match closes the connection undelivered.
func TestCorruptFrameClosesConnection(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	conn, _ := dialAs(t, b.Addr(), keysOf("a", testSecret), "b")
	frame := frameOf(t, msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "t"}})
	frame[len(frame)-1] ^= 0xff
	_, err := conn.Write(frame)
	require.NoError(t, err)
	requireClosedByPeer(t, conn)
	requireEventually(t, func() bool { return b.Stats().InboundBroken == 1 }, "corrupt frame not counted")
	b.inbox.requireEmpty()
}

// A client that is silent after connecting is dropped at HandshakeTimeout.
func TestSilentDialerTimesOut(t *testing.T) {
	checkGoroutinesEnd(t)
	cfg := testConfig("b", nil)
	cfg.HandshakeTimeout = 50 * time.Millisecond
	b := startTransport(t, cfg)
	conn, err := net.DialTimeout("tcp", b.Addr(), waitMax)
	require.NoError(t, err)
	defer conn.Close()
	_, err = readChallenge(conn)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitMax)))
	_, err = conn.Read(make([]byte, 1))
	require.True(t, errors.Is(err, io.EOF) || isConnectionReset(err), "connection not closed: %v", err)
	requireEventually(t, func() bool { return b.Stats().InboundHandshakeErrors == 1 }, "timeout not counted")
	require.Zero(t, b.Stats().InboundAuthFailures, "a silent dialer proved nothing wrong: it is no authentication failure")
}
