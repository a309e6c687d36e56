package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"narad/client"
)

// Bounds of the bench's transport.
const (
	// leanBufferBytes sizes each connection's read and write buffers: a
	// single produce and its answer fit in one system call each.
	leanBufferBytes = 16 << 10
	// leanHeaderBytesMax bounds the head of an answer (status line and
	// header fields), as net/http's transport does.
	leanHeaderBytesMax = 1 << 20
	// leanDialTimeout bounds a connection's dial when the request's
	// context sets no earlier deadline.
	leanDialTimeout = 10 * time.Second
	// leanProbeAfter is how long a connection may sit idle before it is
	// checked, without blocking, for the server having closed it (its idle
	// timeout, 10 s for the ceiling server, 60 s by default for a node,
	// shorter behind some proxies). A connection in constant use is never
	// checked.
	leanProbeAfter = 50 * time.Millisecond
	// leanIdleMax is how long a connection stays pooled at most.
	leanIdleMax = 30 * time.Second
)

// leanTransport is the bench's HTTP/1.1 transport to a plain http://
// server. The goroutine that sends a request writes it and reads its
// answer itself, over a kept-alive connection taken from a pool.
// net/http's Transport hands every request from the caller to a writer
// goroutine and the answer from a reader goroutine back to the caller;
// on a two-core machine those hand-offs cost the bench about as much CPU
// per message as the node spent serving it, and the bench measured
// itself as much as the server.
//
// It speaks what the bench needs and no more: no proxies, no TLS (an
// https:// server gets net/http's Transport), no HTTP/2, no
// 100-continue (http.Client still follows redirects above it). Each
// connection serves one request at a time; idle connections stay pooled
// up to idleMax, for at most leanIdleMax. A connection idle for
// leanProbeAfter is checked for a close by the server before it is used
// (net/http's reader goroutine sees that close as it happens); should a
// request still meet a closed connection and get no byte of answer, it is
// sent once more on a new one if it may be repeated (replayable).
type leanTransport struct {
	dialer net.Dialer
	// idleMax bounds the pooled idle connections per server.
	idleMax int

	mu sync.Mutex
	// idle holds idle connections by server address, oldest first;
	// guarded by mu.
	idle map[string][]*leanConn
}

// leanConn is one connection with its buffers. Used by one request at a
// time: the pool hands it out, the request's body returns it.
type leanConn struct {
	address string
	conn    net.Conn
	// metered counts the bytes the reader may take while an answer's head
	// is read.
	metered *meteredConn
	reader  *bufio.Reader
	writer  *bufio.Writer
	// idleSince is when the connection was last pooled; zero until it has
	// served a request.
	idleSince time.Time
}

// reused reports whether c served a request before the one it carries.
func (c *leanConn) reused() bool { return !c.idleSince.IsZero() }

func newLeanTransport(idleMax int) *leanTransport {
	return &leanTransport{idleMax: max(idleMax, 1), idle: map[string][]*leanConn{}}
}

// dialAddress is where a request's connection goes: the URL's host and
// port, port 80 when the URL names none.
func dialAddress(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

// RoundTrip sends req and reads the head of its answer; the body is read
// from the connection as the caller reads it, and reading it to its end
// returns the connection to the pool (closing it before then closes the
// connection).
func (t *leanTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		closeRequestBody(req)
		return nil, fmt.Errorf("bench transport: %s is not an http:// URL", req.URL.Redacted())
	}
	address := dialAddress(req.URL)
	c, err := t.take(req.Context(), address)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	response, err := t.exchange(c, req)
	if err != nil && c.reused() && errors.Is(err, errNoAnswer) && replayable(req) {
		// The server closed the connection before this request reached
		// it: once more, on a new connection, with the body read anew
		// (the caller's request stays as it was).
		again := *req
		if req.GetBody != nil {
			if again.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		if c, err = t.dial(req.Context(), address); err != nil {
			closeRequestBody(&again)
			return nil, err
		}
		response, err = t.exchange(c, &again)
	}
	return response, err
}

// errNoAnswer marks a request whose connection ended before any byte of
// an answer.
var errNoAnswer = errors.New("connection closed before an answer")

// exchange writes req on c and reads the answer's head. On an error, c
// is closed.
func (t *leanTransport) exchange(c *leanConn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	deadline, _ := ctx.Deadline() // the zero time clears an earlier one
	if err := c.conn.SetDeadline(deadline); err != nil {
		closeRequestBody(req)
		c.conn.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.conn.Close()
		return nil, contextError(ctx, err)
	}
	writeErr := req.Write(c.writer)
	if writeErr == nil {
		writeErr = c.writer.Flush()
	}
	response, err := readAnswer(c, req)
	if err != nil {
		if writeErr != nil {
			err = fmt.Errorf("%w (the request's write failed: %w)", err, writeErr)
		}
		return fail(err)
	}
	keep := !response.Close && writeErr == nil && response.StatusCode != http.StatusSwitchingProtocols
	if response.Body == http.NoBody { // nothing more to read: released now
		t.release(c, stop, keep)
		return response, nil
	}
	response.Body = &leanBody{transport: t, ctx: ctx, conn: c, body: response.Body, stop: stop, keep: keep}
	return response, nil
}

// readAnswer reads the head of the answer to req, even after a failed
// write (a server may refuse a request, 413 say, and close before reading
// all of it), past any informational (1xx) answer before it, in at most
// leanHeaderBytesMax (and what the buffer reads of the body with it). An
// end of the connection before any byte is errNoAnswer.
func readAnswer(c *leanConn, req *http.Request) (*http.Response, error) {
	c.metered.budget = leanHeaderBytesMax
	// Unmetered again before the connection can be released to another
	// request (a deferred reset would race with it).
	response, err := readFinalResponse(c, req)
	c.metered.budget = unmetered
	return response, err
}

func readFinalResponse(c *leanConn, req *http.Request) (*http.Response, error) {
	if _, err := c.reader.Peek(1); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	for {
		response, err := http.ReadResponse(c.reader, req)
		if err != nil {
			if errors.Is(err, errHeadTooLarge) {
				return nil, fmt.Errorf("answer head larger than %d bytes: %w", leanHeaderBytesMax, err)
			}
			return nil, err
		}
		if response.StatusCode >= 200 || response.StatusCode == http.StatusSwitchingProtocols {
			return response, nil
		}
	}
}

// contextError is err, or the context's error once the context ended (a
// connection's deadline is its context's, and a cancel cuts it).
func contextError(ctx context.Context, err error) error {
	if _, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		<-ctx.Done() // the connection's deadline is the context's: it ends now
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

// take returns a pooled connection to address that is still open, or a
// new one.
func (t *leanTransport) take(ctx context.Context, address string) (*leanConn, error) {
	for {
		t.mu.Lock()
		pool := t.idle[address]
		n := len(pool)
		if n == 0 {
			t.mu.Unlock()
			return t.dial(ctx, address)
		}
		c := pool[n-1]
		pool[n-1] = nil
		t.idle[address] = pool[:n-1]
		t.mu.Unlock()
		idle := time.Since(c.idleSince)
		if idle < leanProbeAfter || (idle < leanIdleMax && stillOpen(c.conn)) {
			return c, nil
		}
		c.conn.Close()
	}
}

func (t *leanTransport) dial(ctx context.Context, address string) (*leanConn, error) {
	ctx, cancel := context.WithTimeout(ctx, leanDialTimeout)
	defer cancel()
	conn, err := t.dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	metered := &meteredConn{Conn: conn, budget: unmetered}
	return &leanConn{address: address, conn: conn, metered: metered, reader: bufio.NewReaderSize(metered, leanBufferBytes),
		writer: bufio.NewWriterSize(conn, leanBufferBytes)}, nil
}

// release ends a request's use of c: pooled when the answer was read to
// its end, the server keeps the connection alive, nothing else is on it
// and the request's context can no longer cut it (stop reports the
// context's callback will not run); closed otherwise.
func (t *leanTransport) release(c *leanConn, stop func() bool, keep bool) {
	if !stop() || !keep || c.reader.Buffered() > 0 {
		c.conn.Close()
		return
	}
	// The request's deadline would fail stillOpen's look once past; the
	// next request sets its own.
	if err := c.conn.SetDeadline(time.Time{}); err != nil {
		c.conn.Close()
		return
	}
	c.idleSince = time.Now()
	t.mu.Lock()
	pool := t.idle[c.address]
	var expired *leanConn
	if len(pool) > 0 && c.idleSince.Sub(pool[0].idleSince) >= leanIdleMax {
		expired, pool[0] = pool[0], nil // the oldest, at the bottom of the stack
		pool = pool[1:]
	}
	full := len(pool) >= t.idleMax
	if !full {
		pool = append(pool, c)
	}
	t.idle[c.address] = pool
	t.mu.Unlock()
	if expired != nil {
		expired.conn.Close()
	}
	if full {
		c.conn.Close()
	}
}

// CloseIdleConnections closes every pooled connection (http.Client calls
// it through its own CloseIdleConnections).
func (t *leanTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*leanConn{}
	t.mu.Unlock()
	for _, pool := range idle {
		for _, c := range pool {
			c.conn.Close()
		}
	}
}

// leanBody is an answer's body: read to its end, the connection goes back
// to the pool if the answer keeps it alive; closed before its end, the
// connection is closed (the rest of the answer is still on it), which
// also ends a read under way. A read after the end, an error or a Close
// returns that again.
type leanBody struct {
	transport *leanTransport
	ctx       context.Context
	conn      *leanConn
	body      io.ReadCloser
	stop      func() bool
	keep      bool

	mu sync.Mutex
	// err, once set, ends the body: io.EOF after its end, errBodyClosed
	// after a Close, else the read's error. Set once, by finish.
	err error
}

var errBodyClosed = errors.New("read of a closed answer body")

func (b *leanBody) Read(p []byte) (int, error) {
	if err := b.ended(); err != nil {
		return 0, err
	}
	n, err := b.body.Read(p) // one reader at a time, as for any io.Reader
	switch {
	case err == io.EOF:
		err = b.finish(io.EOF, b.keep)
	case err != nil:
		err = b.finish(contextError(b.ctx, err), false)
	}
	return n, err
}

// Close closes the connection unless the body was read to its end.
func (b *leanBody) Close() error {
	b.finish(errBodyClosed, false)
	return nil
}

func (b *leanBody) ended() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// finish ends the body with err and releases its connection, the first
// time only; it returns the error the body ended with.
func (b *leanBody) finish(err error, keep bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
		b.transport.release(b.conn, b.stop, keep)
	}
	return b.err
}

// meteredConn is a connection whose reads stop with errHeadTooLarge once
// budget bytes were read, while budget is not unmetered.
type meteredConn struct {
	net.Conn
	budget int
}

// unmetered is the budget of a connection whose reads are not counted.
const unmetered = -1

var errHeadTooLarge = errors.New("answer head too large")

func (m *meteredConn) Read(p []byte) (int, error) {
	if m.budget == unmetered {
		return m.Conn.Read(p)
	}
	if m.budget == 0 {
		return 0, errHeadTooLarge
	}
	if len(p) > m.budget {
		p = p[:m.budget]
	}
	n, err := m.Conn.Read(p)
	m.budget -= n
	return n, err
}

// replayable reports whether req may be sent again after a connection
// ended with no answer, by net/http's rule: the server may have handled
// it, so only a request that can be repeated is (a GET, HEAD, OPTIONS or
// TRACE, or one with an idempotency key), and only if its body can be
// read again.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, keyed := req.Header["Idempotency-Key"]
	_, xKeyed := req.Header["X-Idempotency-Key"]
	return keyed || xKeyed
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// benchTransport sends a request to a plain http:// server that no proxy
// stands in front of through the lean transport, and any other through
// net/http's.
type benchTransport struct {
	lean     *leanTransport
	standard *http.Transport
}

func (t *benchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.proxied(req) {
		return t.lean.RoundTrip(req)
	}
	return t.standard.RoundTrip(req)
}

// proxied reports whether the standard transport would send req through
// a proxy.
func (t *benchTransport) proxied(req *http.Request) bool {
	if t.standard.Proxy == nil {
		return false
	}
	proxy, err := t.standard.Proxy(req)
	return err != nil || proxy != nil
}

// CloseIdleConnections closes the idle connections of both transports.
func (t *benchTransport) CloseIdleConnections() {
	t.lean.CloseIdleConnections()
	t.standard.CloseIdleConnections()
}

// WithRootCAs returns a bench transport whose standard transport trusts
// only pool for https:// servers (--ca-file); the lean one, plain http://
// only, is shared.
func (t *benchTransport) WithRootCAs(pool *x509.CertPool) http.RoundTripper {
	return &benchTransport{lean: t.lean, standard: client.TransportWithRootCAs(t.standard, pool)}
}
