package peer

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"narad/msg"
	"narad/wire"
)

// writer is the state of one peer's writer goroutine. Only that goroutine
// touches it.
type writer struct {
	t       *Transport
	p       *outbound
	backoff backoff
	// carried is an envelope taken from the queue just as the connection
	// turned out to be gone; the next connection sends it first. Valid
	// when hasCarried.
	carried    msg.Envelope
	hasCarried bool
	// payload is the scratch buffer one envelope is encoded into.
	payload []byte
	// batch holds the frames of the next write; batchMessages counts them,
	// and batchClasses counts them by queueClass.
	// Invariant: batchMessages <= writeBatchMessagesMax.
	batch         []byte
	batchMessages int
	batchClasses  [queueClasses]uint64
	// failing is set after a failed connection attempt and cleared by a
	// successful one: repeated failures are logged at debug level only.
	failing bool
}

// link is one authenticated outbound connection.
type link struct {
	// raw is the TCP connection; closing it ends everything on top.
	raw net.Conn
	// conn is where frames are written: raw, or the TLS connection on it.
	conn net.Conn
	// hungUp is closed by the connection's watcher when the peer closed
	// the connection (or sent bytes, which it never may).
	hungUp <-chan struct{}
}

// runWriter is the writer goroutine of p: it waits for a message, dials and
// authenticates, streams until the connection breaks, and starts over. A
// failed attempt drops what is queued (the peer is unreachable; Raft and
// forwarded requests retry on their own) and backs off. It returns when p
// is stopped.
func (t *Transport) runWriter(p *outbound) {
	w := &writer{t: t, p: p, backoff: newBackoff(t.cfg.ReconnectBackoffMin, t.cfg.ReconnectBackoffMax, p.random)}
	for {
		first, ok := w.next()
		if !ok {
			return
		}
		connection, err := w.connect()
		if err != nil {
			p.drop(first)
			p.dropQueued()
			if !w.pause() {
				return
			}
			continue
		}
		started := time.Now()
		w.stream(connection, first)
		t.disconnect(p, connection.raw)
		if !w.settleBackoff(time.Since(started)) {
			return
		}
	}
}

// settleBackoff ends a connection's life: one that lasted
// connectionHealthyMin starts the next attempt afresh; one the peer
// closed sooner (a receiver that refuses what it is sent closes at the
// first frame) counts as a failed attempt and waits its backoff, so that
// the writer does not redial and authenticate again for every message.
// It reports false when p is stopped.
func (w *writer) settleBackoff(lasted time.Duration) bool {
	if lasted >= connectionHealthyMin {
		w.backoff.reset()
		return true
	}
	w.p.shortConnections.Add(1)
	return w.pause()
}

// pause waits out the next backoff step, flagged in backingOff so that
// Stats shows the peer unreachable for as long as what is queued must
// wait. It reports false when p is stopped.
func (w *writer) pause() bool {
	w.p.backingOff.Store(true)
	defer w.p.backingOff.Store(false)
	return sleepUnlessStopped(w.p.ctx, w.backoff.next())
}

// next returns the carried envelope, else waits for one to be queued. It
// reports false when the peer is stopped.
func (w *writer) next() (msg.Envelope, bool) {
	if w.hasCarried {
		w.hasCarried = false
		return w.carried, true
	}
	return w.p.wait()
}

// connect dials the peer, runs the handshake and starts the connection's
// watcher.
func (w *writer) connect() (link, error) {
	address := w.t.addressOf(w.p)
	raw, err := w.t.dial(w.p.ctx, "tcp", address)
	if err != nil {
		w.countFailure(&w.p.dialFailures, "dial failed", address, err)
		return link{}, err
	}
	if !w.t.adopt(w.p, raw) {
		raw.Close()
		return link{}, ErrClosed
	}
	conn, err := w.t.handshakeAsDialer(w.p, raw, address)
	if err != nil {
		w.t.disconnect(w.p, raw)
		counter := &w.p.dialFailures // the listener hung up before its verdict: busy or stopping, not a refusal
		if errors.Is(err, ErrAuthentication) || errors.Is(err, ErrWrongPeer) {
			counter = &w.p.authFailures
		}
		w.countFailure(counter, "handshake failed", address, err)
		return link{}, err
	}
	hungUp, watching := w.t.watch(w.p, conn)
	if !watching {
		w.t.disconnect(w.p, raw)
		return link{}, ErrClosed
	}
	w.p.connections.Add(1)
	w.p.connected.Store(true)
	w.failing = false
	w.t.logger.Info("connected to peer", "peer", w.p.id, "address", address)
	return link{raw: raw, conn: conn, hungUp: hungUp}, nil
}

// countFailure counts and logs a failed attempt, unless the peer was
// stopped meanwhile (then the failure is the stop itself).
func (w *writer) countFailure(counter *atomic.Uint64, message, address string, err error) {
	if w.p.ctx.Err() != nil {
		return
	}
	counter.Add(1)
	log := w.t.logger.Warn
	if w.failing {
		log = w.t.logger.Debug
	}
	w.failing = true
	log(message, "peer", w.p.id, "address", address, "err", err)
}

// watch starts the watcher of an authenticated connection: the peer never
// writes after the handshake, so a read returns only when it hung up. The
// watcher lets an idle writer learn of it before it writes the next
// message into a dead connection. It reports false when p is stopped.
func (t *Transport) watch(p *outbound, conn net.Conn) (<-chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.ctx.Err() != nil {
		return nil, false
	}
	hungUp := make(chan struct{})
	started := t.goFuncLocked(func() {
		defer close(hungUp)
		var probe [1]byte
		conn.Read(probe[:]) // returns at hang-up, at close, or on a byte the peer may not send
	})
	return hungUp, started
}

// stream writes first and everything queued after it to the connection,
// in batches, until a write fails, the peer hangs up or is stopped.
func (w *writer) stream(connection link, first msg.Envelope) {
	w.add(first)
	for {
		w.gather()
		if err := w.flush(connection.conn); err != nil {
			w.logLost(err)
			return
		}
		select {
		case env := <-w.p.queue:
			if w.carryIfHungUp(connection, env) {
				return
			}
			w.add(env)
		case <-connection.hungUp:
			w.logLost(errHungUp)
			return
		case <-w.p.ctx.Done():
			return
		}
	}
}

// errHungUp: the peer closed the connection while the writer was idle.
var errHungUp = errors.New("the peer closed the connection")

// carryIfHungUp keeps env for the next connection when this one is known
// to be gone, and reports whether it did.
func (w *writer) carryIfHungUp(connection link, env msg.Envelope) bool {
	select {
	case <-connection.hungUp:
		w.carried, w.hasCarried = env, true
		w.logLost(errHungUp)
		return true
	default:
		return false
	}
}

// logLost logs a connection that ended, unless the peer was stopped.
func (w *writer) logLost(err error) {
	if w.p.ctx.Err() == nil {
		w.t.logger.Info("peer connection lost", "peer", w.p.id, "err", err)
	}
}

// gather adds the envelopes already queued to the batch, without waiting,
// up to the batch bounds.
func (w *writer) gather() {
	for range writeBatchMessagesMax {
		if w.batchMessages >= writeBatchMessagesMax || len(w.batch) >= writeBatchBytesMax {
			return
		}
		select {
		case env := <-w.p.queue:
			w.add(env)
		default:
			return
		}
	}
}

// add encodes env as one frame of the batch. An envelope of a type the
// codec does not know is dropped and logged. (One over a bound of the
// codec, wire.FrameBytesMax included, makes wire panic: the node
// validates what it sends.)
func (w *writer) add(env msg.Envelope) {
	assert(w.batchMessages < writeBatchMessagesMax, "batch of %d messages is full", w.batchMessages)
	payload, err := wire.EncodeEnvelope(w.payload[:0], env)
	if err != nil {
		w.p.drop(env)
		w.t.logger.Error("cannot send message", "peer", w.p.id, "type", messageType(env), "err", err)
		return
	}
	w.p.settle(env)
	w.payload = keepBuffer(payload)
	w.batch = wire.AppendFrame(w.batch, payload)
	w.batchMessages++
	w.batchClasses[classOf(env)]++
}

// flush writes the batch within WriteTimeout. The batch's envelopes count
// as sent when the write succeeds and as dropped when it fails.
func (w *writer) flush(conn net.Conn) error {
	if w.batchMessages == 0 {
		return nil
	}
	messages := uint64(w.batchMessages)
	err := conn.SetWriteDeadline(time.Now().Add(w.t.cfg.WriteTimeout))
	if err == nil {
		_, err = conn.Write(w.batch)
	}
	classes := w.batchClasses
	w.batch, w.batchMessages, w.batchClasses = keepBuffer(w.batch[:0]), 0, [queueClasses]uint64{}
	if err != nil {
		for class, count := range classes {
			w.p.dropped[class].Add(count)
		}
		return err
	}
	w.p.sent.Add(messages)
	return nil
}

// keepBuffer returns buffer emptied for reuse, or nil when it grew past
// bufferKeepBytesMax (one huge message must not pin its memory).
func keepBuffer(buffer []byte) []byte {
	if cap(buffer) > bufferKeepBytesMax {
		return nil
	}
	return buffer[:0]
}

// messageType names the Go type of an envelope's message, for logs.
func messageType(env msg.Envelope) string {
	return fmt.Sprintf("%T", env.Message)
}
