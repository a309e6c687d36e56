package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pausingListener hands out connections whose first read that returns
// bytes signals got and then waits until the connection is closed, so a
// test can run Shutdown between the arrival of a request and the
// connection turning active.
type pausingListener struct {
	net.Listener
	accepted chan *pausingConn
}

func (l *pausingListener) Accept() (net.Conn, error) {
	inner, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	conn := &pausingConn{Conn: inner, got: make(chan struct{}), closed: make(chan struct{})}
	l.accepted <- conn
	return conn, nil
}

type pausingConn struct {
	net.Conn
	got, closed         chan struct{}
	gotOnce, closedOnce sync.Once
}

func (c *pausingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.gotOnce.Do(func() {
			close(c.got)
			select {
			case <-c.closed:
			case <-time.After(testTimeout):
			}
		})
	}
	return n, err
}

func (c *pausingConn) Close() error {
	c.closedOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// Shutdown closes an idle connection whose request arrived just before:
// the request is dropped, never served, so a client that sees the close
// and no reply may send it again without its being done twice (a produce
// committed and its 202 lost would be a duplicate).
func TestShutdownNeverServesARequestOfAConnectionItClosed(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listener := &pausingListener{Listener: inner, accepted: make(chan *pausingConn, 1)}
	var served atomic.Bool
	server := New(Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Store(true)
		_, _ = io.WriteString(w, "ok")
	})})
	done := make(chan error, 1)
	go func() { done <- server.Serve(listener) }()
	client := dial(t, inner.Addr().String())
	conn := <-listener.accepted
	client.send(t, "POST /produce HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
	<-conn.got // read by the server; the connection is still idle
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, server.Shutdown(ctx))
	require.ErrorIs(t, <-done, ErrServerClosed)
	require.True(t, client.closed(t))
	require.False(t, served.Load(), "the request of a connection Shutdown closed was served")
}

// A reply that streams (its header leaves before the handler returns)
// says Connection: close whenever the connection closes after it: a
// client told nothing would send its next request into a closing
// connection.
func TestAStreamedReplyAnnouncesTheClose(t *testing.T) {
	large := strings.Repeat("b", responseBufferBytesMax+1)
	cases := map[string]struct {
		request string
		handler http.HandlerFunc
	}{
		"the handler asks for it": {"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Connection", "close")
				_, _ = io.WriteString(w, large)
			}},
		"the body was never asked for (100 Continue)": {
			"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
			func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, large) }},
		"a body past the drain bound is left unread": {
			"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: " + strconv.Itoa(unreadBodyDrainMax+1) + "\r\n\r\nabc",
			func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, large) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, addr := start(t, Options{Handler: c.handler})
			conn := dial(t, addr)
			conn.send(t, c.request)
			response, body := conn.response(t, strings.Fields(c.request)[0])
			require.Equal(t, large, body)
			require.True(t, response.Close, "the reply did not say Connection: close")
			require.True(t, conn.closed(t))
		})
	}
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, large)
	})})
	conn := dial(t, addr)
	for range 2 { // a streamed reply to a request read whole keeps the connection
		conn.send(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
		response, body := conn.response(t, "POST")
		require.Equal(t, large, body)
		require.False(t, response.Close)
	}
}

// Blank lines after a request (old clients send a CR LF after a POST's
// body) leave the connection idle: under the idle timeout, not closed at
// the read timeout and counted as a slow request.
func TestBlankLinesBetweenRequestsKeepTheConnectionIdle(t *testing.T) {
	var refused atomic.Value
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler), ReadTimeout: 100 * time.Millisecond,
		IdleTimeout: time.Minute, Refused: func(reason Reason) { refused.Store(reason) }})
	conn := dial(t, addr)
	conn.send(t, "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\r\n")
	_, body := conn.response(t, "POST")
	require.Equal(t, "POST /a  h x", body)
	conn.send(t, "\r\n\n")
	time.Sleep(300 * time.Millisecond) // three read timeouts; far within the idle timeout
	conn.send(t, "GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
	response, body := conn.response(t, "GET")
	require.Equal(t, "GET /b  h ", body)
	require.False(t, response.Close)
	require.Nil(t, refused.Load())
}

// A 204 or 304 carries no body, so a Content-Length its handler set (the
// length a GET would have) is no promise broken: the connection stays,
// and a pipelined request after it is answered.
func TestNoBodyStatusWithALengthKeepsTheConnection(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusNotModified} {
		_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/n" {
				w.Header().Set("Content-Length", "10")
				w.WriteHeader(status)
				return
			}
			echoHandler(w, r)
		})})
		conn := dial(t, addr)
		conn.send(t, "GET /n HTTP/1.1\r\nHost: h\r\n\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n")
		response, _ := conn.response(t, "GET")
		require.Equal(t, status, response.StatusCode)
		require.False(t, response.Close)
		_, body := conn.response(t, "GET")
		require.Equal(t, "GET /after  h ", body)
	}
}

// A HEAD whose handler wrote nothing and declared no length is answered
// without a Content-Length, which would misstate the GET's.
func TestHeadWithNothingWrittenHasNoLength(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})})
	conn := dial(t, addr)
	conn.send(t, "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
	response, _ := conn.response(t, "HEAD")
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Empty(t, response.Header.Get("Content-Length"))
	require.False(t, response.Close)
}
