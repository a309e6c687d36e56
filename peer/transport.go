package peer

import (
	"bytes"
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"narad/loglimit"
	"narad/msg"
)

// Transport carries msg.Envelopes between the nodes of a cluster over
// TCP (optionally TLS), one authenticated outbound connection per peer.
// All methods are safe for concurrent use.
type Transport struct {
	// cfg is validated by New and never changes. Its Peers is nil: the
	// peer table (mu.peers) replaces it.
	cfg Config
	// deliver receives every authenticated, well-addressed envelope, from
	// the reader goroutines.
	deliver func(msg.Envelope)
	logger  *slog.Logger
	keys    handshakeKeys
	// dial opens TCP connections: a net.Dialer's, replaced by tests.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	// ctx is canceled by Close; every peer context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the goroutines started by goFuncLocked; Close waits for it.
	wg sync.WaitGroup

	// Counters of events that belong to no configured peer.
	unroutable             atomic.Uint64 // Send to an unknown id, to ourselves, or after Close
	inboundRefused         atomic.Uint64 // accepted connections closed at once: inboundConnectionsMax reached
	inboundAuthFailures    atomic.Uint64 // accepted connections whose dialer failed to prove the secret
	inboundHandshakeErrors atomic.Uint64 // accepted connections whose handshake failed otherwise (timeout, garbage, wrong node)
	handshakesShed         atomic.Uint64 // handshakes closed to admit a newer connection: handshakesInFlightMax reached
	inboundBroken          atomic.Uint64 // authenticated connections closed for a bad frame or a misaddressed envelope
	delivered              atomic.Uint64 // envelopes handed to deliver

	// mu guards the fields of this struct. It is the only lock of the
	// package; nothing blocking is done while holding it.
	mu struct {
		sync.Mutex
		// closed is set once, by Close; afterwards no goroutine starts.
		closed bool
		// listener is set once, by Start.
		listener net.Listener
		// peers holds the peers to send to, by id. Never holds NodeID.
		peers map[string]*outbound
		// inbound holds every accepted connection still open, with the
		// dialer's id once authenticated ("" during the handshake).
		// Invariant: len(inbound) <= inboundConnectionsMax +
		// handshakesInFlightMax.
		inbound map[net.Conn]string
		// handshaking lists the connections of inbound still in their
		// handshake, oldest first. Invariant: len(handshaking) <=
		// handshakesInFlightMax.
		handshaking []net.Conn
		// shed marks the handshakes closed to admit newer connections, until
		// their reader ends.
		shed map[net.Conn]bool
		// current is, per dialer id, its newest authenticated connection:
		// only its reader delivers (an older one's reader drops what it
		// still holds). deliveries serializes each dialer's deliveries,
		// so the new reader's first envelope waits for a delivery the old
		// reader is in the middle of. Both have an entry exactly for the
		// dialers with a connection in inbound.
		current    map[string]net.Conn
		deliveries map[string]*sync.Mutex
	}
	// failureLogs rate-limits the warnings about failed inbound
	// connections.
	failureLogs failureWarnings
}

// New validates cfg and returns a transport that is not yet listening.
// deliver is called from reader goroutines, one per accepted connection:
// calls for one connection are sequential and in the sender's order,
// calls for different connections are concurrent. deliver must not block
// for long (it stalls that sender's connection) and must return once the
// caller is shutting down, or Close cannot finish. The logger may be nil.
func New(cfg Config, deliver func(msg.Envelope), logger *slog.Logger) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deliver == nil {
		return nil, fmt.Errorf("%w: deliver function is nil", ErrInvalidConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	peers := cfg.Peers
	cfg.Peers = nil // the peer table below is the one truth from here on
	cfg.Secret = bytes.Clone(cfg.Secret)
	t := &Transport{cfg: cfg, deliver: deliver, logger: logger.With("component", "peer", "node", cfg.NodeID)}
	if cfg.InsecureNoAuth {
		t.logger.Warn("peer transport runs without authentication: any process can join the cluster")
	}
	t.keys = handshakeKeys{secret: cfg.Secret, localID: cfg.NodeID, random: cryptorand.Reader}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout}
	t.dial = dialer.DialContext
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.mu.peers = map[string]*outbound{}
	t.mu.inbound = map[net.Conn]string{}
	t.mu.shed = map[net.Conn]bool{}
	t.mu.current = map[string]net.Conn{}
	t.mu.deliveries = map[string]*sync.Mutex{}
	t.failureLogs = failureWarnings{limiter: loglimit.New(inboundFailureLogsPerSecond)}
	for id, address := range peers {
		t.setPeerLocked(id, address)
	}
	return t, nil
}

// Start binds the listener and starts accepting peers' connections.
// Sending does not need it: outbound connections are dialed on demand.
func (t *Transport) Start() error {
	address, err := t.listen()
	if err != nil {
		return err
	}
	t.logger.Info("peer transport listening", "address", address)
	return nil
}

// listen binds the listener and starts the accept loop; it returns the
// bound address.
func (t *Transport) listen() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return "", ErrClosed
	}
	if t.mu.listener != nil {
		return "", ErrStarted
	}
	var listenConfig net.ListenConfig
	listener, err := listenConfig.Listen(t.ctx, "tcp", t.cfg.ListenAddr)
	if err != nil {
		return "", fmt.Errorf("peer: listen on %s: %w", t.cfg.ListenAddr, err)
	}
	t.mu.listener = listener
	t.goFuncLocked(func() { t.acceptLoop(listener) })
	return listener.Addr().String(), nil
}

// Addr returns the address the listener is bound to, "" before Start.
func (t *Transport) Addr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.listener == nil {
		return ""
	}
	return t.mu.listener.Addr().String()
}

// Close stops the listener, every writer and reader, closes every
// connection, drops whatever is queued, and waits for all goroutines of
// the transport to end. Calling it again only waits.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.mu.closed {
		t.mu.Unlock()
		t.wg.Wait()
		return nil
	}
	t.mu.closed = true
	t.cancel()
	var err error
	if t.mu.listener != nil {
		err = t.mu.listener.Close()
	}
	for conn := range t.mu.inbound {
		conn.Close()
	}
	for _, p := range t.mu.peers {
		p.stopLocked()
	}
	t.mu.Unlock()
	t.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// goFuncLocked starts f on a goroutine counted by wg, unless the transport
// is closed. Every goroutine of the package starts here, with mu held, so
// that none starts after Close began waiting.
func (t *Transport) goFuncLocked(f func()) bool {
	if t.mu.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}
