package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"narad/msg"
)

// outbound is one peer we send to: its bounded queue, the context that
// stops its writer, and its counters. The writer goroutine (runWriter)
// starts on the first Send and owns the connection it dials.
type outbound struct {
	// id is the peer's node id. Immutable.
	id string
	// queue holds envelopes for the writer, of both classes in the order
	// Send took them. Capacity Config.SendQueueMax + controlQueueMax, the
	// sum of the classes' bounds in envelopes, so that it has room for
	// every envelope its class admits: Send never blocks on it, it drops
	// instead.
	queue chan msg.Envelope
	// ctx is canceled, under Transport.mu, by RemovePeer or Close; the
	// writer then ends.
	ctx    context.Context
	cancel context.CancelFunc
	// random draws the backoff jitter. Only the writer goroutine uses it.
	random *rand.Rand

	// classes counts, per queueClass, the envelopes in queue (and one the
	// writer carries to its next connection) and their msg.PayloadBytes:
	// Send adds within the class's bounds (Transport.bounds), the writer
	// takes off as it encodes or drops them.
	classes [queueClasses]classQueue

	// Counters, written by Send and the writer, read by Stats.
	offered atomic.Uint64 // envelopes handed to Send: each ends sent or dropped, or is still queued
	sent    atomic.Uint64 // envelopes written to a connection
	// dropped counts, per queueClass, the envelopes discarded: queue full,
	// peer unreachable, write failed, not encodable.
	dropped      [queueClasses]atomic.Uint64
	connections  atomic.Uint64 // authenticated connections established
	dialFailures atomic.Uint64 // TCP connects that failed
	authFailures atomic.Uint64 // handshakes (TLS or secret) that failed after connecting
	// shortConnections: authenticated connections that ended within
	// connectionHealthyMin, each followed by a backoff pause.
	shortConnections atomic.Uint64
	connected        atomic.Bool // an authenticated connection is up now
	// backingOff is set while the writer waits out its backoff after a
	// failed connection attempt or a short connection: what is queued
	// meanwhile waits for the next attempt, so the peer is unreachable
	// for now.
	backingOff atomic.Bool

	// locked fields are guarded by Transport.mu.
	locked struct {
		// address is where the peer is dialed; SetPeer may change it,
		// which closes conn so that the writer redials.
		address string
		// conn is the writer's current TCP connection, dialing or up, nil
		// between connections. Others only ever Close it, to interrupt the
		// writer; the writer clears it.
		conn net.Conn
		// writerStarted is set once the writer goroutine runs.
		writerStarted bool
	}
}

// newOutboundLocked creates the peer entry for id; the caller holds
// Transport.mu.
func (t *Transport) newOutboundLocked(id, address string) *outbound {
	p := &outbound{id: id, queue: make(chan msg.Envelope, t.cfg.SendQueueMax+controlQueueMax)}
	p.ctx, p.cancel = context.WithCancel(t.ctx)
	p.random = rand.New(rand.NewPCG(t.cfg.BackoffSeed, jitterStream(t.cfg.NodeID, id)))
	p.locked.address = address
	return p
}

// jitterStream derives a generator stream from the pair of node ids, so
// that peers dialing the same node draw different backoffs.
func jitterStream(localID, peerID string) uint64 {
	hash := fnv.New64a()
	hash.Write([]byte(localID))
	hash.Write([]byte{0})
	hash.Write([]byte(peerID))
	return hash.Sum64()
}

// stopLocked ends the peer's writer: cancels its context and interrupts
// its connection. The caller holds Transport.mu.
func (p *outbound) stopLocked() {
	p.cancel()
	if p.locked.conn != nil {
		p.locked.conn.Close()
	}
}

// Send queues env for the peer env.To and returns at once. The envelope is
// dropped and counted when the peer is unknown or its class's share of the
// queue is full (in envelopes, or in payload bytes: classOf, bounds), so
// that client data never crowds out Raft messages and heartbeats;
// delivery is never guaranteed (a connection can break with messages in
// flight). env.From must be this node's id.
func (t *Transport) Send(env msg.Envelope) {
	assert(env.From == t.cfg.NodeID, "envelope from %q sent on the transport of %q", env.From, t.cfg.NodeID)
	p := t.writerFor(env.To)
	if p == nil {
		t.unroutable.Add(1)
		return
	}
	p.offered.Add(1)
	class, size := classOf(env), msg.PayloadBytes(env)
	if !p.classes[class].admit(size, t.bounds(class)) {
		p.dropped[class].Add(1)
		return
	}
	select {
	case p.queue <- env:
	default: // never: the channel holds every envelope the classes admit
		p.classes[class].settle(size)
		p.dropped[class].Add(1)
	}
}

// bounds returns the bounds of class in one peer's queue.
func (t *Transport) bounds(class queueClass) classBounds {
	if class == classControl {
		return classBounds{envelopes: controlQueueMax, bytes: controlQueueBytesMax}
	}
	return classBounds{envelopes: int64(t.cfg.SendQueueMax), bytes: t.cfg.SendQueueBytesMax}
}

// settle takes env, which the writer encoded or drops, off its class's
// counts.
func (p *outbound) settle(env msg.Envelope) {
	p.classes[classOf(env)].settle(msg.PayloadBytes(env))
}

// drop settles env and counts it dropped.
func (p *outbound) drop(env msg.Envelope) {
	p.settle(env)
	p.dropped[classOf(env)].Add(1)
}

// droppedTotal sums the drops of every class.
func (p *outbound) droppedTotal() uint64 {
	total := uint64(0)
	for class := range queueClasses {
		total += p.dropped[class].Load()
	}
	return total
}

// unsettled is how many envelopes Send took for p that were neither
// written nor dropped yet.
func (p *outbound) unsettled() uint64 {
	// dropped and sent are read before offered, so a Send between the
	// loads can only make the difference larger, never wrap it.
	settled := p.droppedTotal() + p.sent.Load()
	return p.offered.Load() - settled
}

// Drain waits, up to timeout, until every envelope Send took has been
// written to its connection or dropped (its peer unreachable), and
// reports whether all were. A node stopping calls it before Close, so
// that the answers of its last round (a forwarded produce made durable,
// say) reach their peers instead of being thrown away with the queues:
// a lost answer is a client's retry, and a duplicate.
func (t *Transport) Drain(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if t.unsettled() == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(drainPoll)
	}
}

// drainPoll is how often Drain looks at the queues.
const drainPoll = 2 * time.Millisecond

// unsettled sums the unsettled envelopes of every peer.
func (t *Transport) unsettled() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var total uint64
	for _, p := range t.mu.peers {
		total += p.unsettled()
	}
	return total
}

// writerFor returns the peer id with its writer running, or nil when id is
// not a peer or the transport is closed.
func (t *Transport) writerFor(id string) *outbound {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.mu.peers[id]
	if p == nil || t.mu.closed {
		return nil
	}
	if !p.locked.writerStarted {
		p.locked.writerStarted = t.goFuncLocked(func() { t.runWriter(p) })
	}
	return p
}

// SetPeer adds the peer id at address, or moves it there. A move closes
// the current connection; the writer redials the new address. An entry
// for this node's own id is ignored.
func (t *Transport) SetPeer(id, address string) error {
	if err := checkPeer(id, address); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return ErrClosed
	}
	t.setPeerLocked(id, address)
	return nil
}

func (t *Transport) setPeerLocked(id, address string) {
	if id == t.cfg.NodeID {
		return
	}
	p, known := t.mu.peers[id]
	if !known {
		t.mu.peers[id] = t.newOutboundLocked(id, address)
		return
	}
	if p.locked.address != address {
		p.locked.address = address
		if p.locked.conn != nil {
			p.locked.conn.Close()
		}
	}
}

// RemovePeer forgets the peer id: its writer ends, its connection closes
// and what was queued for it is dropped. Unknown ids are ignored.
func (t *Transport) RemovePeer(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, known := t.mu.peers[id]; known {
		delete(t.mu.peers, id)
		p.stopLocked()
	}
}

// wait blocks until an envelope is queued or the peer is stopped.
func (p *outbound) wait() (msg.Envelope, bool) {
	select {
	case env := <-p.queue:
		return env, true
	case <-p.ctx.Done():
		return msg.Envelope{}, false
	}
}

// dropQueued empties the queue (at most its capacity, as Sends may keep
// coming), counting each envelope dropped.
func (p *outbound) dropQueued() {
	for range cap(p.queue) {
		select {
		case env := <-p.queue:
			p.drop(env)
		default:
			return
		}
	}
}

// addressOf returns where p is dialed now.
func (t *Transport) addressOf(p *outbound) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return p.locked.address
}

// adopt records raw as p's connection, so that Close, RemovePeer and
// SetPeer can interrupt it. It reports false when p is already stopped;
// the caller then closes raw.
func (t *Transport) adopt(p *outbound, raw net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.locked.conn = raw
	return true
}

// disconnect closes raw and forgets it as p's connection.
func (t *Transport) disconnect(p *outbound, raw net.Conn) {
	t.mu.Lock()
	if p.locked.conn == raw {
		p.locked.conn = nil
	}
	t.mu.Unlock()
	p.connected.Store(false)
	raw.Close()
}

// handshakeAsDialer runs TLS (if configured) and the secret handshake on a
// dialed connection, within HandshakeTimeout. It returns the connection to
// write frames to (the TLS one, or raw).
func (t *Transport) handshakeAsDialer(p *outbound, raw net.Conn, address string) (net.Conn, error) {
	if err := raw.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	conn := raw
	if t.cfg.TLS != nil {
		client := tls.Client(raw, t.clientTLS(address))
		if err := client.HandshakeContext(p.ctx); err != nil {
			return nil, tlsFailure(err)
		}
		conn = client
	}
	if err := dialerHandshake(conn, t.keys, p.id); err != nil {
		if t.cfg.TLS != nil && isRemoteTLSAlert(err) {
			// TLS 1.3 tells a client its certificate was refused at its
			// first read, which is the challenge's.
			return nil, fmt.Errorf("%w: %v", ErrAuthentication, err)
		}
		return nil, err
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	return conn, nil
}

// tlsFailure classifies a failed TLS handshake (either side): a peer that
// hung up (busy or stopping) or a timeout is a handshake error; any other
// failure (a certificate refused, a protocol alert) is an authentication
// failure.
func tlsFailure(err error) error {
	var netError net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnectionReset(err) || (errors.As(err, &netError) && netError.Timeout()) {
		return fmt.Errorf("%w: tls: %v", ErrHandshake, err)
	}
	return fmt.Errorf("%w: tls: %v", ErrAuthentication, err)
}

// isRemoteTLSAlert reports an alert the other side of a TLS connection
// sent (crypto/tls returns those as "remote error" operations).
func isRemoteTLSAlert(err error) bool {
	var opError *net.OpError
	return errors.As(err, &opError) && opError.Op == "remote error"
}

// clientTLS returns the TLS config for dialing address: the configured
// one, with ServerName set to the address's host when it is empty.
func (t *Transport) clientTLS(address string) *tls.Config {
	if t.cfg.TLS.ServerName != "" {
		return t.cfg.TLS
	}
	host, _, err := net.SplitHostPort(address)
	assert(err == nil, "peer address %q passed validation but does not split: %v", address, err)
	config := t.cfg.TLS.Clone()
	config.ServerName = host
	return config
}

// sleepUnlessStopped waits for d and reports true, or reports false as
// soon as ctx is canceled.
func sleepUnlessStopped(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
