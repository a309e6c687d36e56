package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"
)

// The states of a connection, for Shutdown.
const (
	// stateActive: reading, serving or answering a request.
	stateActive int32 = iota
	// stateIdle: waiting for the first byte of a request, none buffered.
	stateIdle
	// stateClosed: Shutdown closed the connection while it was idle. Only
	// Shutdown moves a connection here, and only from stateIdle, so its
	// goroutine either turned active first (and serves the request it
	// read) or finds this state and drops what it read unserved.
	stateClosed
)

// connKey is the context key under which a request's context holds its
// connection (for WatchClose).
type connKey struct{}

// conn is one connection and everything it reuses from one request to
// the next. Only its goroutine touches it, except state (Shutdown), and
// the input buffer while a watcher runs (see watch.go).
type conn struct {
	server  *Server
	netConn net.Conn
	// state is stateActive, stateIdle or stateClosed; the goroutine moves
	// it between active and idle, Shutdown from idle to closed (by
	// compare-and-swap on both sides).
	state atomic.Int32
	// ctx is every request's context; cancel ends it when the connection
	// ends or its watcher sees the client leave.
	ctx    context.Context
	cancel context.CancelFunc
	// in buffers what was read and not yet parsed or given to a body.
	in input
	// readDeadlineSet: the current request's read deadline is armed (see
	// needMore). readDeadlineStale: the deadline in force was set for
	// something else (a watcher's stop) and must be replaced before the
	// next read.
	readDeadlineSet, readDeadlineStale bool
	// request, url and header are reused by every request; template is
	// the empty request carrying ctx, copied over request each time.
	request, template *http.Request
	url               url.URL
	header            http.Header
	// values backs the header's value slices; reset each request, and
	// its capacity at most headerFieldsKeptMax while idle.
	values []string
	// body reads the current request's body.
	body body
	// writer is the current request's ResponseWriter.
	writer responseWriter
	// remoteAddr is the peer's address, computed once.
	remoteAddr string
	// tlsState is set after the first read of a TLS connection.
	tlsState *tls.ConnectionState
	// watcher watches for the client's close during one request.
	watcher watcher
	// closeAfter: the current reply is the connection's last.
	closeAfter bool
	// linger: the connection closes with client input perhaps unread (a
	// refusal, a body not drained): finish half-closes it and reads what
	// comes before closing, so that the kernel does not answer that input
	// with a reset that could destroy the reply before the client read it.
	linger bool
}

func newConn(s *Server, netConn net.Conn) *conn {
	c := &conn{server: s, netConn: netConn, header: make(http.Header)}
	c.ctx, c.cancel = context.WithCancel(context.WithValue(context.Background(), connKey{}, c))
	c.template, c.request = (&http.Request{}).WithContext(c.ctx), new(http.Request)
	c.in.buf = make([]byte, inputBufferBytes)
	c.remoteAddr = netConn.RemoteAddr().String()
	c.body.c = c
	c.writer.c = c
	c.writer.header = make(http.Header)
	return c
}

// serve runs the connection's request loop until it must close.
func (c *conn) serve() {
	defer c.finish()
	for {
		if !c.waitForRequest() {
			return
		}
		if !c.serveOne() {
			return
		}
	}
}

// finish recovers a handler's panic, closes the connection and forgets it.
func (c *conn) finish() {
	if err := recover(); err != nil && err != http.ErrAbortHandler {
		c.server.options.Logger.Error("http handler panicked", "remote", c.remoteAddr, "panic", err)
	}
	c.watcher.stop(c)
	c.cancel()
	if c.linger {
		c.lingerClose()
	}
	_ = c.netConn.Close()
	c.server.remove(c)
}

// lingerClose sends the FIN and discards input until the client closes
// too, for at most lingerTimeout and lingerBytesMax.
func (c *conn) lingerClose() {
	closer, ok := c.netConn.(interface{ CloseWrite() error })
	if !ok || closer.CloseWrite() != nil {
		return
	}
	_ = c.netConn.SetReadDeadline(time.Now().Add(lingerTimeout))
	if c.body.scratch == nil {
		c.body.scratch = make([]byte, directReadMin)
	}
	for total := 0; total < lingerBytesMax; {
		n, err := c.netConn.Read(c.body.scratch)
		if err != nil {
			return
		}
		total += n
	}
}

// waitForRequest waits, as an idle connection, until input other than
// the blank lines a client may send between requests is buffered; false
// when the connection must close instead. Blank lines keep it idle (under
// the idle timeout, not the read timeout, and closable by Shutdown)
// without extending its idle deadline.
func (c *conn) waitForRequest() bool {
	c.readDeadlineSet = false
	c.in.skipBlankLines()
	if c.in.buffered() > 0 {
		return !c.server.closing.Load()
	}
	c.in.reset()
	c.releaseIdle()
	c.state.Store(stateIdle)
	if c.server.closing.Load() {
		return false
	}
	if timeout := c.server.options.IdleTimeout; timeout > 0 || c.readDeadlineStale {
		_ = c.netConn.SetReadDeadline(deadline(timeout))
		c.readDeadlineStale = false
	}
	err := c.fillIdle()
	if !c.state.CompareAndSwap(stateIdle, stateActive) {
		return false // Shutdown closed it: what was read is not served
	}
	if c.tlsState == nil {
		c.noteTLS()
	}
	if recordError := (tls.RecordHeaderError{}); errors.As(err, &recordError) && recordError.Conn != nil {
		c.answerPlainToTLS(recordError.Conn)
	}
	return err == nil || c.in.buffered() > 0
}

// fillIdle reads until something other than blank lines is buffered or
// the read fails.
func (c *conn) fillIdle() error {
	for {
		err := c.in.fill(c.netConn)
		c.in.skipBlankLines()
		if err != nil || c.in.buffered() > 0 {
			return err
		}
		c.in.reset()
	}
}

// releaseIdle lets go, as the connection turns idle, of what its last
// request grew past the normal size and of every reference to that
// request's header text, so that an idle connection holds about
// inputBufferBytes whatever came before.
func (c *conn) releaseIdle() {
	if len(c.in.buf) > inputBufferBytes {
		c.in.buf = make([]byte, inputBufferBytes)
	}
	if cap(c.values) > headerFieldsKeptMax {
		c.header, c.values = make(http.Header), nil // clear does not shrink a map
	} else {
		clear(c.header)
		clear(c.values[:cap(c.values)])
	}
	*c.request, c.url = http.Request{}, url.URL{}
	c.writer.release()
}

// plainToTLSAnswer is the answer to plain HTTP sent to a TLS listener.
const plainToTLSAnswer = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n" +
	"This server speaks HTTPS; the request was plain HTTP.\n"

// answerPlainToTLS tells a client that spoke plain HTTP to a TLS
// listener, on the raw connection, and counts it as malformed.
func (c *conn) answerPlainToTLS(raw net.Conn) {
	c.refused(ReasonMalformed)
	timeout := c.server.options.WriteTimeout
	if timeout <= 0 {
		timeout = refusalWriteTimeout
	}
	_ = raw.SetWriteDeadline(deadline(timeout))
	_, _ = io.WriteString(raw, plainToTLSAnswer)
}

// deadline is now plus timeout, or no deadline for 0.
func deadline(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

func (c *conn) noteTLS() {
	if tlsConn, ok := c.netConn.(*tls.Conn); ok {
		state := tlsConn.ConnectionState()
		if state.HandshakeComplete {
			c.tlsState = &state
		}
	}
}

// armReadDeadline arms the current request's read deadline the first
// time the server needs more of it than its first read gave.
func (c *conn) armReadDeadline() {
	if c.readDeadlineSet {
		return
	}
	options := c.server.options
	if options.ReadTimeout > 0 || options.IdleTimeout > 0 || c.readDeadlineStale {
		_ = c.netConn.SetReadDeadline(deadline(options.ReadTimeout))
	}
	c.readDeadlineSet, c.readDeadlineStale = true, false
}

// needMore reads more of the current request into the buffer;
// errRequestTimeout if its read deadline passed.
func (c *conn) needMore() error {
	c.armReadDeadline()
	if err := c.in.fill(c.netConn); err != nil {
		if errors.Is(err, errInputFull) {
			return err
		}
		return c.readError(err)
	}
	return nil
}

// errRequestTimeout is the error of a read of the current request past
// its read timeout. It is a net.Error that timed out and wraps
// os.ErrDeadlineExceeded, so that a handler reading the body tells a
// slow client from a broken one.
var errRequestTimeout error = requestTimeout{}

type requestTimeout struct{}

func (requestTimeout) Error() string   { return "httpserve: request not read within the read timeout" }
func (requestTimeout) Timeout() bool   { return true }
func (requestTimeout) Temporary() bool { return false }
func (requestTimeout) Unwrap() error   { return os.ErrDeadlineExceeded }

func (c *conn) refused(reason Reason) {
	if c.server.options.Refused != nil {
		c.server.options.Refused(reason)
	}
}

// serveOne reads, serves and answers one request; false when the
// connection must close.
func (c *conn) serveOne() bool {
	header, err := c.readHeader()
	if err != nil {
		c.answerRefusal(err)
		return false
	}
	if failure := c.parseRequest(header); failure != nil {
		c.answerRefusal(failure)
		return false
	}
	if timeout := c.server.options.WriteTimeout; timeout > 0 {
		_ = c.netConn.SetWriteDeadline(deadline(timeout))
	}
	c.writer.begin(c.request.Method == http.MethodHead, c.request.ProtoMinor == 0)
	c.server.options.Handler.ServeHTTP(&c.writer, c.request)
	c.watcher.stop(c)
	c.afterHandler()
	if err := c.writer.end(); err != nil {
		return false
	}
	return !c.closeAfter
}

// afterHandler settles the body the handler left, deciding whether the
// connection survives this request. The body is drained only to keep the
// connection: one that closes after this answer answers at once and
// discards the body after its FIN (linger), so a client that waits for an
// early answer (a 401, a 413) before sending its body is not kept waiting
// for the read timeout.
func (c *conn) afterHandler() {
	if c.watcher.peerGone || c.mustClose() {
		c.closeAfter = true
	}
	if c.body.mode == bodyDone {
		return
	}
	switch {
	case c.closeAfter:
		c.linger = true
	case c.body.expectContinue && !c.body.continueSent:
		c.closeAfter, c.linger = true, true // the client may or may not send the body now
	case !c.body.drain():
		c.closeAfter, c.linger = true, true
	}
}

// closesAfterStream decides, as a reply's header is about to stream out
// before the handler returned, whether the connection closes after it, so
// that the header says so: a client told nothing reuses a connection that
// is going away. Besides what closes any connection (mustClose), a body
// the client has not been asked for yet (100 Continue), a body that has
// failed, or a Content-Length body left past the drain bound closes it.
// It may close one that afterHandler would have kept (the handler may
// still read the body), never the reverse.
func (c *conn) closesAfterStream() bool {
	body := &c.body
	return c.closeAfter || c.mustClose() || body.err != nil ||
		(body.mode != bodyDone && body.expectContinue && !body.continueSent) ||
		(body.mode == bodyLength && body.drained+body.remaining > unreadBodyDrainMax)
}

// mustClose reports what closes the connection after any reply: the
// handler asked for it (Connection: close) or the server is shutting
// down.
func (c *conn) mustClose() bool {
	return hasToken(c.writer.header.Get("Connection"), "close") || c.server.closing.Load()
}
