package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Bounds of the bench's transport.
const (
	// leanBufferBytes sizes each connection's read and write buffers: a
	// single produce and its answer fit in one system call each.
	leanBufferBytes = 16 << 10
	// leanDialTimeout bounds a connection's dial when the request's
	// context sets no earlier deadline.
	leanDialTimeout = 10 * time.Second
	// leanIdleMax is how long a connection stays pooled: well below the
	// server's idle timeout (http.idle_timeout, 60 s by default), so that
	// a request seldom meets a connection the server just closed.
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
// https:// server gets net/http's Transport), no HTTP/2, no redirects.
// Each connection serves one request at a time; idle connections stay
// pooled up to idleMax (for at most leanIdleMax), and one the server
// closed is dropped when next used: a request that got no byte of answer
// on a reused connection is sent once more on a new one if it may be
// repeated (replayable), as net/http does.
type leanTransport struct {
	dialer net.Dialer
	// idleMax bounds the pooled idle connections.
	idleMax int

	mu sync.Mutex
	// idle holds idle connections by host:port; guarded by mu.
	idle map[string][]*leanConn
}

// leanConn is one connection with its buffers. Used by one request at a
// time: the pool hands it out, the request's body returns it.
type leanConn struct {
	host   string
	conn   net.Conn
	reader *bufio.Reader
	writer *bufio.Writer
	// reused is set once the connection has served a request; idleSince
	// is when it was last pooled.
	reused    bool
	idleSince time.Time
}

func newLeanTransport(idleMax int) *leanTransport {
	return &leanTransport{idleMax: max(idleMax, 1), idle: map[string][]*leanConn{}}
}

// RoundTrip sends req and reads the head of its answer; the body is read
// from the connection as the caller reads it, and closing it (or reading
// it to its end) returns the connection to the pool.
func (t *leanTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		closeRequestBody(req)
		return nil, fmt.Errorf("bench transport: %s is not an http:// URL", req.URL.Redacted())
	}
	c, err := t.take(req.Context(), req.URL.Host)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	response, err := t.exchange(c, req)
	if err != nil && c.reused && errors.Is(err, errNoAnswer) && replayable(req) {
		// The server most likely closed the idle connection before this
		// request reached it: once more, on a new connection.
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		if c, err = t.dial(req.Context(), req.URL.Host); err != nil {
			closeRequestBody(req)
			return nil, err
		}
		response, err = t.exchange(c, req)
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
		c.conn.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.conn.Close()
		if _, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
			<-ctx.Done() // the connection's deadline is the context's: it ends now
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	writeErr := req.Write(c.writer)
	if writeErr == nil {
		writeErr = c.writer.Flush()
	}
	if _, err := c.reader.Peek(1); err != nil {
		if writeErr != nil {
			err = writeErr
		}
		return fail(fmt.Errorf("%w: %w", errNoAnswer, err))
	}
	// An answer, even after a failed write: a server may refuse a
	// request (413, say) and close before reading all of it.
	response, err := http.ReadResponse(c.reader, req)
	if err != nil {
		return fail(err)
	}
	keep := !response.Close && writeErr == nil
	response.Body = &leanBody{transport: t, conn: c, body: response.Body, stop: stop, keep: keep}
	return response, nil
}

// take returns an idle connection to host, or a new one.
func (t *leanTransport) take(ctx context.Context, host string) (*leanConn, error) {
	for {
		t.mu.Lock()
		pool := t.idle[host]
		n := len(pool)
		if n == 0 {
			t.mu.Unlock()
			return t.dial(ctx, host)
		}
		c := pool[n-1]
		pool[n-1] = nil
		t.idle[host] = pool[:n-1]
		t.mu.Unlock()
		if time.Since(c.idleSince) < leanIdleMax {
			return c, nil
		}
		c.conn.Close()
	}
}

func (t *leanTransport) dial(ctx context.Context, host string) (*leanConn, error) {
	ctx, cancel := context.WithTimeout(ctx, leanDialTimeout)
	defer cancel()
	conn, err := t.dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	return &leanConn{host: host, conn: conn, reader: bufio.NewReaderSize(conn, leanBufferBytes),
		writer: bufio.NewWriterSize(conn, leanBufferBytes)}, nil
}

// put pools c, or closes it when the pool is full.
func (t *leanTransport) put(c *leanConn) {
	c.reused, c.idleSince = true, time.Now()
	t.mu.Lock()
	if pool := t.idle[c.host]; len(pool) < t.idleMax {
		t.idle[c.host] = append(pool, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.conn.Close()
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

// leanBody is an answer's body: at its end the connection goes back to
// the pool if the answer keeps it alive; closed before its end, the
// connection is closed (the rest of the answer is still on it).
type leanBody struct {
	transport *leanTransport
	conn      *leanConn
	body      io.ReadCloser
	stop      func() bool
	keep      bool
	done      bool
}

func (b *leanBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

func (b *leanBody) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

// finish releases the connection once: pooled when the whole answer was
// read and the server keeps it alive, closed otherwise.
func (b *leanBody) finish(complete bool) {
	b.done = true
	if b.stop() && complete && b.keep { // not stopped: the context's end may yet cut the connection

		b.transport.put(b.conn)
		return
	}
	b.conn.conn.Close()
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
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
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
	if req.URL.Scheme == "http" {
		if proxy, err := t.standard.Proxy(req); err == nil && proxy == nil {
			return t.lean.RoundTrip(req)
		}
	}
	return t.standard.RoundTrip(req)
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
	standard := t.standard.Clone()
	if standard.TLSClientConfig == nil {
		standard.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	standard.TLSClientConfig.RootCAs = pool
	return &benchTransport{lean: t.lean, standard: standard}
}
