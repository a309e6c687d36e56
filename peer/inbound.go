package peer

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"narad/msg"
	"narad/wire"
)

// acceptLoop is the listener goroutine: it admits connections until the
// listener is closed.
func (t *Transport) acceptLoop(listener net.Listener) {
	for {
		conn, err := listener.Accept()
		if err == nil {
			t.admit(conn)
			continue
		}
		if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
			return
		}
		t.failureLogs.warn(t.logger, "accepting a peer connection failed", "err", err) // at every retry while descriptors run out
		if !sleepUnlessStopped(t.ctx, acceptRetryDelay) {
			return
		}
	}
}

// admit starts a reader for conn, or closes it when the transport is
// closed or inboundConnectionsMax authenticated connections are open.
func (t *Transport) admit(conn net.Conn) {
	if t.admitted(conn) {
		return
	}
	conn.Close()
	if t.ctx.Err() == nil {
		t.inboundRefused.Add(1)
		t.failureLogs.warn(t.logger, "too many peer connections; refusing one", "remote", conn.RemoteAddr().String(), "open", inboundConnectionsMax)
	}
}

// admitted registers conn and starts its reader, unless the transport is
// closed or full. At handshakesInFlightMax handshakes it closes one to
// make room (shedIndexLocked).
func (t *Transport) admitted(conn net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed || len(t.mu.inbound)-len(t.mu.handshaking) >= inboundConnectionsMax {
		return false
	}
	if len(t.mu.handshaking) >= handshakesInFlightMax {
		index := shedIndex(t.mu.handshaking)
		victim := t.mu.handshaking[index]
		t.mu.handshaking = slices.Delete(t.mu.handshaking, index, index+1)
		t.mu.shed[victim] = true
		t.handshakesShed.Add(1)
		victim.Close() // its reader fails its handshake and forgets it
	}
	t.mu.inbound[conn] = ""
	t.mu.handshaking = append(t.mu.handshaking, conn)
	t.goFuncLocked(func() { t.serveInbound(conn) })
	assert(len(t.mu.handshaking) <= handshakesInFlightMax, "%d handshakes in flight, bound %d", len(t.mu.handshaking), handshakesInFlightMax)
	return true
}

// shedIndex picks the handshake to shed from those in flight, oldest
// first. When one remote host holds at least floodHandshakesMin of them
// (more than any peer host would: a node dials each peer once, a machine
// runs a few nodes), it is the oldest of that host (on a tie, the host
// that reached the count first), so that a flood from one address sheds
// its own handshakes and not a peer's from another address. Otherwise,
// a flood from many addresses, it is the oldest overall, so that the
// handshakes of peers sharing a machine are not the ones shed first.
func shedIndex(handshaking []net.Conn) int {
	counts := make(map[string]int, len(handshaking))
	busiest := ""
	for _, conn := range handshaking {
		host := remoteHost(conn)
		counts[host]++
		if counts[host] > counts[busiest] {
			busiest = host
		}
	}
	if counts[busiest] < floodHandshakesMin {
		return 0
	}
	return slices.IndexFunc(handshaking, func(conn net.Conn) bool { return remoteHost(conn) == busiest })
}

// remoteHost is the host part of a connection's remote address.
func remoteHost(conn net.Conn) string {
	address := conn.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(address); err == nil {
		return host
	}
	return address
}

// stopHandshakingLocked drops conn from the handshakes in flight. t.mu is held.
func (t *Transport) stopHandshakingLocked(conn net.Conn) {
	if index := slices.Index(t.mu.handshaking, conn); index >= 0 {
		t.mu.handshaking = slices.Delete(t.mu.handshaking, index, index+1)
	}
}

// serveInbound is the reader goroutine of one accepted connection: it
// authenticates the dialer, then delivers its frames until the
// connection ends.
func (t *Transport) serveInbound(raw net.Conn) {
	defer t.forgetInbound(raw)
	conn, dialerID, err := t.handshakeAsListener(raw)
	if err != nil {
		t.countHandshakeFailure(raw, err)
		return
	}
	t.authenticated(raw, dialerID)
	err = t.readFrames(raw, conn, dialerID)
	t.logReadEnd(dialerID, err)
}

// countHandshakeFailure counts and logs (rate-limited) a failed inbound
// handshake: a dialer that failed to prove the secret is an
// authentication failure; one this node shed is not a failure at all.
func (t *Transport) countHandshakeFailure(raw net.Conn, err error) {
	t.mu.Lock()
	shed := t.mu.shed[raw]
	t.mu.Unlock()
	switch {
	case t.ctx.Err() != nil || shed:
	case errors.Is(err, ErrAuthentication):
		t.inboundAuthFailures.Add(1)
		t.failureLogs.warn(t.logger, "peer handshake failed", "remote", raw.RemoteAddr().String(), "err", err)
	default:
		t.inboundHandshakeErrors.Add(1)
		t.failureLogs.warn(t.logger, "peer handshake failed", "remote", raw.RemoteAddr().String(), "err", err)
	}
}

// handshakeAsListener runs TLS (if configured) and the secret handshake on
// an accepted connection, within HandshakeTimeout. It returns the
// connection to read frames from and the dialer's authenticated id.
func (t *Transport) handshakeAsListener(raw net.Conn) (net.Conn, string, error) {
	if err := raw.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	conn := raw
	if t.cfg.TLS != nil {
		server := tls.Server(raw, t.cfg.TLS)
		if err := server.HandshakeContext(t.ctx); err != nil {
			return nil, "", tlsFailure(err)
		}
		conn = server
	}
	dialerID, err := listenerHandshake(conn, t.keys)
	if err != nil {
		return nil, "", err
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	return conn, dialerID, nil
}

// authenticated records raw as the connection of dialerID and closes any
// older connection of the same dialer: it redialed, so the old one is dead
// or half-open.
func (t *Transport) authenticated(raw net.Conn, dialerID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for conn, id := range t.mu.inbound {
		if id == dialerID && conn != raw {
			conn.Close()
		}
	}
	t.stopHandshakingLocked(raw)
	t.mu.inbound[raw] = dialerID
	t.mu.current[dialerID] = raw
	if t.mu.deliveries[dialerID] == nil {
		t.mu.deliveries[dialerID] = &sync.Mutex{}
	}
}

// forgetInbound closes raw and drops it from the open connections.
func (t *Transport) forgetInbound(raw net.Conn) {
	t.mu.Lock()
	id := t.mu.inbound[raw]
	delete(t.mu.inbound, raw)
	if id != "" && t.mu.current[id] == raw {
		delete(t.mu.current, id)
	}
	if id != "" && !t.hasInboundLocked(id) {
		// The last connection of the dialer: an older reader still in a
		// delivery holds this mutex, and the next connection must wait
		// for it, so it goes only with the dialer's last connection.
		delete(t.mu.deliveries, id)
	}
	delete(t.mu.shed, raw)
	t.stopHandshakingLocked(raw)
	t.mu.Unlock()
	raw.Close()
}

// hasInboundLocked reports whether a connection of dialer id is open.
// t.mu is held.
func (t *Transport) hasInboundLocked(id string) bool {
	for _, other := range t.mu.inbound {
		if other == id {
			return true
		}
	}
	return false
}

// errMisaddressed: an envelope's From or To does not match its connection.
var errMisaddressed = errors.New("envelope misaddressed")

// errReplaced ends the reader of a connection its dialer replaced.
var errReplaced = errors.New("peer connection replaced by a newer one")

// readFrames delivers the envelopes arriving on conn (raw, under any TLS)
// from dialerID until an error, which it returns. Each frame's length is
// checked against wire.FrameBytesMax (by wire.ReadFrame) before its
// payload is read.
func (t *Transport) readFrames(raw, conn net.Conn, dialerID string) error {
	reader := bufio.NewReaderSize(conn, readBufferBytes)
	var buffer []byte
	for {
		payload, err := wire.ReadFrame(reader, buffer)
		if isBadInput(err) {
			return &brokenError{err}
		}
		if err != nil {
			return err
		}
		env, err := wire.DecodeEnvelope(payload)
		if err != nil {
			return &brokenError{err}
		}
		if env.From != dialerID || env.To != t.cfg.NodeID {
			return &brokenError{fmt.Errorf("%w: from %q to %q on the connection of %q", errMisaddressed, env.From, env.To, dialerID)}
		}
		if !t.deliverIfCurrent(raw, dialerID, env) {
			return errReplaced
		}
		buffer = keepBuffer(payload)
	}
}

// deliverIfCurrent delivers env if raw is still its dialer's newest
// connection, and reports whether it was. Frames an old connection still
// holds once the dialer reconnected are dropped, never delivered after
// the new connection's: a reconnect loses envelopes, never reorders them.
func (t *Transport) deliverIfCurrent(raw net.Conn, dialerID string, env msg.Envelope) bool {
	t.mu.Lock()
	deliveries := t.mu.deliveries[dialerID]
	t.mu.Unlock()
	if deliveries == nil {
		return false
	}
	deliveries.Lock()
	defer deliveries.Unlock()
	t.mu.Lock()
	current := t.mu.current[dialerID] == raw
	t.mu.Unlock()
	if !current {
		return false
	}
	t.delivered.Add(1)
	t.deliver(env)
	return true
}

// isBadInput reports a read that failed on what the peer sent (a frame
// over the bound, bad framing, another version) rather than on the
// connection.
func isBadInput(err error) bool {
	return errors.Is(err, wire.ErrTooLarge) || errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrVersion)
}

// brokenError marks a connection ended by what the peer sent, as opposed
// to the connection failing.
type brokenError struct{ err error }

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// logReadEnd counts and logs why an authenticated connection ended.
func (t *Transport) logReadEnd(dialerID string, err error) {
	var broken *brokenError
	switch {
	case t.ctx.Err() != nil:
	case errors.As(err, &broken):
		t.inboundBroken.Add(1)
		t.failureLogs.warn(t.logger, "closing peer connection: bad message", "peer", dialerID, "err", err)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, errReplaced), isConnectionReset(err):
		t.logger.Debug("peer connection closed", "peer", dialerID, "err", err)
	default:
		t.logger.Info("peer connection ended", "peer", dialerID, "err", err)
	}
}
