package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Reason names why the server refused a request without calling the
// handler, or why it closed a connection in the middle of one.
type Reason string

// The reasons of Options.Refused.
const (
	// ReasonMalformed: the request line or a header field does not parse
	// (400).
	ReasonMalformed Reason = "malformed"
	// ReasonHeaderTooLarge: the line and header exceed headerBytesMax (431).
	ReasonHeaderTooLarge Reason = "header_too_large"
	// ReasonVersion: an HTTP version other than 1.x (505); a minor above
	// 1 is served as 1.1.
	ReasonVersion Reason = "version"
	// ReasonFraming: the body's length is ambiguous or unsupported: both
	// Content-Length and Transfer-Encoding, a bad Content-Length,
	// Transfer-Encoding in HTTP/1.0, a transfer coding other than chunked
	// (400 or 501).
	ReasonFraming Reason = "framing"
	// ReasonExpectation: an Expect other than 100-continue (417).
	ReasonExpectation Reason = "expectation"
	// ReasonBody: a chunked body that does not parse; the handler got a
	// read error and the connection closes after its reply.
	ReasonBody Reason = "body"
	// ReasonChunkOverhead: a chunked body whose framing (chunk extensions
	// above all) outweighs its data past chunkOverheadMax; the handler
	// got a read error and the connection closes after its reply.
	ReasonChunkOverhead Reason = "chunk_overhead"
	// ReasonReadTimeout: a request not read in full within ReadTimeout.
	// A header cut short closes the connection without an answer; a body
	// cut short fails the handler's read with a timeout error (a net.Error
	// wrapping os.ErrDeadlineExceeded), the handler's reply is sent with
	// Connection: close, and the connection closes.
	ReasonReadTimeout Reason = "read_timeout"
)

// Reasons lists every Reason, for metrics that declare their labels.
var Reasons = []Reason{ReasonMalformed, ReasonHeaderTooLarge, ReasonVersion, ReasonFraming,
	ReasonExpectation, ReasonBody, ReasonChunkOverhead, ReasonReadTimeout}

// Options configure a Server. Zero timeouts mean none.
type Options struct {
	// Handler serves every request; required.
	Handler http.Handler
	// ReadTimeout, WriteTimeout and IdleTimeout: see the package doc. An
	// IdleTimeout of 0 takes ReadTimeout's value, as net/http does.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Refused, if set, is called once per refusal or broken request, from
	// the connection's goroutine.
	Refused func(Reason)
	// Logger receives handler panics; nil discards them.
	Logger *slog.Logger
}

// ErrServerClosed is what Serve returns after Shutdown or Close.
var ErrServerClosed = http.ErrServerClosed

// Server serves connections to a handler. Safe for concurrent use.
type Server struct {
	// options are fixed at creation.
	options Options
	// closing is set once by Shutdown or Close and never cleared.
	closing atomic.Bool
	// dates caches the Date header of the current second.
	dates dateCache
	// mu guards listeners and conns. Invariant: conns holds every
	// connection whose goroutine has not ended.
	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	// serving counts the connection goroutines not yet ended; it is
	// incremented under mu while closing is unset, so that Close and
	// Shutdown, which set closing first, can wait for it.
	serving sync.WaitGroup
}

// New returns a server of options; it serves nothing until Serve.
func New(options Options) *Server {
	if options.IdleTimeout == 0 {
		options.IdleTimeout = options.ReadTimeout
	}
	if options.Logger == nil {
		options.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{options: options, listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}}
}

// Serve accepts connections on listener and serves each on a goroutine of
// its own until Shutdown or Close; it then returns ErrServerClosed, or
// the listener's error if it failed first. A server already shutting down
// closes the listener at once (Shutdown closes only the listeners Serve
// took before it).
func (s *Server) Serve(listener net.Listener) error {
	if !s.track(listener) {
		_ = listener.Close()
		return ErrServerClosed
	}
	defer s.untrack(listener)
	pause := time.Duration(0)
	for {
		netConn, err := listener.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var netError net.Error
			if !errors.As(err, &netError) || !netError.Timeout() && !isTemporary(err) {
				return err
			}
			pause = min(max(2*pause, acceptRetryFirst), acceptRetryMax)
			time.Sleep(pause)
			continue
		}
		pause = 0
		c := newConn(s, netConn)
		if !s.add(c) {
			_ = netConn.Close()
			return ErrServerClosed
		}
		go c.serve()
	}
}

// isTemporary reports an accept error worth retrying (descriptors
// exhausted), as net/http does.
func isTemporary(err error) bool {
	var temporary interface{ Temporary() bool }
	return errors.As(err, &temporary) && temporary.Temporary()
}

func (s *Server) track(listener net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.listeners[listener] = struct{}{}
	return true
}

func (s *Server) untrack(listener net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, listener)
}

func (s *Server) add(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	s.serving.Add(1)
	return true
}

// remove forgets c; its goroutine's last act.
func (s *Server) remove(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.serving.Done()
}

// Shutdown stops accepting, closes idle connections, lets the others
// finish their request (their reply says Connection: close) and returns
// once all have ended; when ctx ends first it does what Close does and
// returns ctx's error too.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.closeListeners()
	ticker := time.NewTicker(shutdownPollInterval)
	defer ticker.Stop()
	for {
		if s.closeIdle() == 0 {
			s.serving.Wait()
			return err
		}
		select {
		case <-ctx.Done():
			s.closeAll()
			return errors.Join(err, ctx.Err())
		case <-ticker.C:
		}
	}
}

// Close stops accepting, closes every connection and cancels its
// requests' context at once, then waits for the connections' goroutines
// to end (a handler returns once its context is cancelled or its writes
// fail).
func (s *Server) Close() error {
	err := s.closeListeners()
	s.closeAll()
	return err
}

func (s *Server) closeListeners() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	var err error
	for listener := range s.listeners {
		if closeErr := listener.Close(); closeErr != nil && !errors.Is(closeErr, net.ErrClosed) {
			err = errors.Join(err, closeErr)
		}
	}
	return err
}

// closeIdle closes the connections waiting for a request and returns how
// many connections remain.
func (s *Server) closeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			_ = c.netConn.Close()
		}
	}
	return len(s.conns)
}

// closeAll closes every connection's socket, then cancels its context
// (so that a handler woken by the cancel writes to a closed socket, not
// a reply the client could take for a whole answer), and waits for every
// connection goroutine to end.
func (s *Server) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		_ = c.netConn.Close()
		c.cancel()
	}
	s.mu.Unlock()
	s.serving.Wait()
}

// dateCache formats the Date header once per second. Safe for
// concurrent use.
type dateCache struct {
	// current is the formatted value of its second; never nil after the
	// first get.
	current atomic.Pointer[dateStamp]
}

type dateStamp struct {
	second int64
	value  []byte
}

// get returns the Date value for now; callers must not modify it.
func (d *dateCache) get(now time.Time) []byte {
	second := now.Unix()
	if stamp := d.current.Load(); stamp != nil && stamp.second == second {
		return stamp.value
	}
	stamp := &dateStamp{second: second, value: now.UTC().AppendFormat(nil, http.TimeFormat)}
	d.current.Store(stamp)
	return stamp.value
}
