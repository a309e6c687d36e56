package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testTimeout bounds every wait of these tests (loopback only).
const testTimeout = 5 * time.Second

// echoHandler answers with the method, path, query, host and the body it
// read.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.URL.RawQuery+" "+r.Host+" "+string(body))
}

// start serves handler on a loopback port until the test ends.
func start(t testing.TB, options Options) (*Server, string) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startOn(t, listener, options)
}

// startOn is start on a listener of the test's.
func startOn(t testing.TB, listener net.Listener, options Options) (*Server, string) {
	t.Helper()
	server := New(options)
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	t.Cleanup(func() {
		require.NoError(t, server.Close())
		require.ErrorIs(t, <-served, ErrServerClosed)
	})
	return server, listener.Addr().String()
}

// rawConn is a client connection that writes bytes as given.
type rawConn struct {
	net.Conn
	reader *bufio.Reader
}

func dial(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testTimeout)
	require.NoError(t, err)
	require.NoError(t, conn.SetDeadline(time.Now().Add(testTimeout)))
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{Conn: conn, reader: bufio.NewReader(conn)}
}

func (c *rawConn) send(t *testing.T, text string) {
	t.Helper()
	_, err := io.WriteString(c.Conn, text)
	require.NoError(t, err)
}

// response reads one reply.
func (c *rawConn) response(t *testing.T, method string) (*http.Response, string) {
	t.Helper()
	response, err := http.ReadResponse(c.reader, &http.Request{Method: method})
	require.NoError(t, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	return response, string(body)
}

// closed reports whether the server closed the connection: EOF next, or
// a reset when it closed with input unread; a timeout is no close.
func (c *rawConn) closed(t *testing.T) bool {
	t.Helper()
	_, err := c.reader.ReadByte()
	var netError net.Error
	return err != nil && !(errors.As(err, &netError) && netError.Timeout())
}

func TestNetHTTPClient(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	client := &http.Client{Timeout: testTimeout}
	defer client.CloseIdleConnections()
	for i := range 3 {
		response, err := client.Post("http://"+addr+"/v1/x?a=b", "text/plain", strings.NewReader(strings.Repeat("y", i*3000)))
		require.NoError(t, err)
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		require.NoError(t, response.Body.Close())
		require.Equal(t, http.StatusOK, response.StatusCode)
		require.Equal(t, "POST /v1/x a=b "+addr+" "+strings.Repeat("y", i*3000), string(body))
		require.NotEmpty(t, response.Header.Get("Date"))
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	conn.send(t, "GET /one HTTP/1.1\r\nHost: h\r\n\r\n"+
		"POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"+
		"POST /three HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n1;ext=1\r\nz\r\n0\r\nTrailer: t\r\n\r\n")
	for _, want := range []string{"GET /one  h ", "POST /two  h abc", "POST /three  h xyz"} {
		response, body := conn.response(t, "GET")
		require.Equal(t, http.StatusOK, response.StatusCode)
		require.Equal(t, want, body)
	}
}

func TestChunkedReplyWhenLarge(t *testing.T) {
	large := strings.Repeat("L", responseBufferBytesMax+10)
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pieces" {
			for piece := range slices.Chunk([]byte(large), 1000) {
				_, _ = w.Write(piece)
			}
			return
		}
		_, _ = io.WriteString(w, large)
	})})
	conn := dial(t, addr)
	conn.send(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /pieces HTTP/1.1\r\nHost: h\r\n\r\n")
	for range 2 {
		response, body := conn.response(t, "GET")
		require.Equal(t, []string{"chunked"}, response.TransferEncoding)
		require.Equal(t, large, body)
	}
	conn.send(t, "GET / HTTP/1.0\r\n\r\n")
	response, body := conn.response(t, "GET")
	require.Equal(t, int64(-1), response.ContentLength)
	require.Equal(t, large, body)
	require.True(t, conn.closed(t))
}

func TestExpectContinue(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	conn.send(t, "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	line, err := conn.reader.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	line, err = conn.reader.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", line)
	conn.send(t, "body")
	response, body := conn.response(t, "POST")
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, "POST /e  h body", body)
}

// A body-less request that expects 100-continue is served, with no 100
// (there is nothing to continue).
func TestExpectContinueWithoutABodyIsServed(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	conn.send(t, "GET /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n")
	response, _ := conn.response(t, "GET")
	require.Equal(t, http.StatusOK, response.StatusCode)
}

func TestExpectContinueUnreadClosesConnection(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	})})
	conn := dial(t, addr)
	conn.send(t, "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	response, _ := conn.response(t, "POST")
	require.Equal(t, http.StatusForbidden, response.StatusCode)
	require.True(t, response.Close)
	require.True(t, conn.closed(t))
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		name, request string
		status        int
		reason        Reason
	}{
		{"garbage", "HELLO\r\n\r\n", 400, ReasonMalformed},
		{"space in name", "GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", 400, ReasonMalformed},
		{"folded", "GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n c\r\n\r\n", 400, ReasonMalformed},
		{"control in value", "GET / HTTP/1.1\r\nHost: h\r\nA: b\x01c\r\n\r\n", 400, ReasonMalformed},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, ReasonMalformed},
		{"space in host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, ReasonMalformed},
		{"slash in host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, ReasonMalformed},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, ReasonMalformed},
		{"version 2", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, ReasonVersion},
		{"version 0.9", "GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505, ReasonVersion},
		{"version 1.10", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", 505, ReasonVersion},
		{"both framings", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, ReasonFraming},
		{"chunked in HTTP/1.0", "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", 400, ReasonFraming},
		{"gzip coding", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501, ReasonFraming},
		{"bad length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400, ReasonFraming},
		{"plus length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400, ReasonFraming},
		{"minus zero length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -0\r\n\r\n", 400, ReasonFraming},
		{"two lengths", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, ReasonFraming},
		{"expectation", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nExpect: magic\r\n\r\n", 417, ReasonExpectation},
		// Without a body too: such a DELETE was served (review finding).
		{"expectation without a body", "DELETE /v1/topics/orders HTTP/1.1\r\nHost: h\r\nExpect: magic\r\n\r\n", 417, ReasonExpectation},
		{"expectation in HTTP/1.0", "POST / HTTP/1.0\r\nContent-Length: 1\r\nExpect: magic\r\n\r\nx", 417, ReasonExpectation},
		{"header too large", "GET / HTTP/1.1\r\nHost: h\r\nA: " + strings.Repeat("a", headerBytesMax) + "\r\n\r\n", 431, ReasonHeaderTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var refused atomic.Value
			served := atomic.Bool{}
			_, addr := start(t, Options{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Store(true) }),
				Refused: func(reason Reason) { refused.Store(reason) }})
			conn := dial(t, addr)
			conn.send(t, tc.request)
			response, body := conn.response(t, "GET")
			require.Equal(t, tc.status, response.StatusCode)
			require.Contains(t, body, `{"error":`)
			require.NotEmpty(t, response.Header.Get("Date"), "a 4xx of an origin server carries Date (RFC 9110 6.6.1)")
			require.True(t, response.Close)
			require.True(t, conn.closed(t))
			require.Equal(t, tc.reason, refused.Load())
			require.False(t, served.Load())
		})
	}
}

func TestMalformedChunkedBody(t *testing.T) {
	var refused atomic.Value
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler), Refused: func(reason Reason) { refused.Store(reason) }})
	conn := dial(t, addr)
	conn.send(t, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
	response, _ := conn.response(t, "POST")
	require.Equal(t, http.StatusBadRequest, response.StatusCode)
	require.True(t, conn.closed(t))
	require.Equal(t, ReasonBody, refused.Load())
}

// TestLongChunkLineRefused: a chunk-size line longer than
// chunkLineBytesMax is refused even when it arrived whole in a buffer a
// large header had grown.
func TestLongChunkLineRefused(t *testing.T) {
	var refused atomic.Value
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler), Refused: func(reason Reason) { refused.Store(reason) }})
	conn := dial(t, addr)
	conn.send(t, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nA: "+strings.Repeat("a", 40<<10)+"\r\n\r\n"+
		"1;"+strings.Repeat("e", 2*chunkLineBytesMax)+"\r\nx\r\n0\r\n\r\n")
	response, _ := conn.response(t, "POST")
	require.Equal(t, http.StatusBadRequest, response.StatusCode)
	require.True(t, conn.closed(t))
	require.Equal(t, ReasonBody, refused.Load())
}

func TestHTTP10AndHead(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	conn.send(t, "HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n")
	response, body := conn.response(t, "HEAD")
	require.Equal(t, int64(len("HEAD /h  h ")), response.ContentLength)
	require.Empty(t, body)
	conn.send(t, "GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	response, body = conn.response(t, "GET")
	require.Equal(t, "GET /k   ", body)
	require.Equal(t, "keep-alive", response.Header.Get("Connection"))
	conn.send(t, "GET /c HTTP/1.0\r\n\r\n")
	response, body = conn.response(t, "GET")
	require.Equal(t, "GET /c   ", body)
	require.True(t, response.Close)
	require.True(t, conn.closed(t))
}

// TestLaterMinorVersionServedAs11: a client of HTTP/1.x, x > 1, is
// answered as an HTTP/1.1 one (and kept alive), not refused.
func TestLaterMinorVersionServedAs11(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	for range 2 {
		conn.send(t, "GET /v HTTP/1.2\r\nHost: h\r\n\r\n")
		response, body := conn.response(t, "GET")
		require.Equal(t, http.StatusOK, response.StatusCode)
		require.Equal(t, "GET /v  h ", body)
		require.False(t, response.Close)
	}
}

// TestHostForms: the forms a Host may take are served as given.
func TestHostForms(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	for _, host := range []string{"h", "broker-1.example:8080", "[::1]:80", "[fe80::1%25eth0]", "127.0.0.1"} {
		conn.send(t, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		response, body := conn.response(t, "GET")
		require.Equal(t, http.StatusOK, response.StatusCode)
		require.Equal(t, "GET /  "+host+" ", body)
	}
}

func TestConnectionClose(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	conn.send(t, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	response, _ := conn.response(t, "GET")
	require.True(t, response.Close)
	require.True(t, conn.closed(t))
}

func TestUnreadBodyDrainedOrClosed(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})})
	conn := dial(t, addr)
	conn.send(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n12345GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	for range 2 {
		response, _ := conn.response(t, "POST")
		require.Equal(t, http.StatusAccepted, response.StatusCode)
		require.False(t, response.Close)
	}
	conn.send(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: "+strconv.Itoa(unreadBodyDrainMax+1)+"\r\n\r\n")
	response, _ := conn.response(t, "POST")
	require.True(t, response.Close)
	require.True(t, conn.closed(t))
}

// TestIdleAndReadTimeouts: each timeout bounds its own wait. Each server
// has one timeout far beyond the client's patience (testTimeout), so a
// close the client sees is the other timeout's.
func TestIdleAndReadTimeouts(t *testing.T) {
	const short, long = 50 * time.Millisecond, 100 * testTimeout
	var idleRefused, readRefused atomic.Value
	_, idleAddr := start(t, Options{Handler: http.HandlerFunc(echoHandler), ReadTimeout: long,
		IdleTimeout: short, Refused: func(reason Reason) { idleRefused.Store(reason) }})
	idle := dial(t, idleAddr)
	idle.send(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	idle.response(t, "GET")
	require.True(t, idle.closed(t), "a kept-alive connection is closed after the idle timeout")
	fresh := dial(t, idleAddr)
	require.True(t, fresh.closed(t), "so is a new connection that sends nothing")
	require.Nil(t, idleRefused.Load(), "an idle close is no refusal")

	_, readAddr := start(t, Options{Handler: http.HandlerFunc(echoHandler), ReadTimeout: short,
		IdleTimeout: long, Refused: func(reason Reason) { readRefused.Store(reason) }})
	slow := dial(t, readAddr)
	slow.send(t, "GET / HTTP/1.1\r\n")
	require.True(t, slow.closed(t), "a request not finished within the read timeout closes its connection")
	require.Equal(t, ReasonReadTimeout, readRefused.Load())
}

// TestBodyReadTimeout: a body that stops coming fails the handler's read
// with an error that says it timed out (a net.Error, and
// os.ErrDeadlineExceeded), the handler's reply is sent with
// Connection: close, and the connection closes.
func TestBodyReadTimeout(t *testing.T) {
	var refused atomic.Value
	readErrors := make(chan error, 1)
	_, addr := start(t, Options{ReadTimeout: 50 * time.Millisecond, Refused: func(reason Reason) { refused.Store(reason) },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			readErrors <- err
			w.WriteHeader(http.StatusBadRequest)
		})})
	conn := dial(t, addr)
	conn.send(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nab")
	err := <-readErrors
	var netError net.Error
	require.True(t, errors.As(err, &netError) && netError.Timeout(), "%v", err)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	response, _ := conn.response(t, "POST")
	require.Equal(t, http.StatusBadRequest, response.StatusCode)
	require.True(t, response.Close)
	require.True(t, conn.closed(t))
	require.Equal(t, ReasonReadTimeout, refused.Load())
}

func TestPanicClosesOnlyTheConnection(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("handler bug")
		}
	})})
	conn := dial(t, addr)
	conn.send(t, "GET /panic HTTP/1.1\r\nHost: h\r\n\r\n")
	require.True(t, conn.closed(t))
	other := dial(t, addr)
	other.send(t, "GET /fine HTTP/1.1\r\nHost: h\r\n\r\n")
	response, _ := other.response(t, "GET")
	require.Equal(t, http.StatusOK, response.StatusCode)
}

// TestWatchCloseCancelsParkedRequest: a handler waiting on its context
// after WatchClose returns once the client closes, long before its own
// wait would end; without WatchClose it would not.
func TestWatchCloseCancelsParkedRequest(t *testing.T) {
	requireCancelledWhenTheClientLeaves(t, "GET /poll HTTP/1.1\r\nHost: h\r\n\r\n")
}

// requireCancelledWhenTheClientLeaves sends request to a handler that
// calls WatchClose and waits on its context, closes the connection, and
// requires the context cancelled.
func requireCancelledWhenTheClientLeaves(t *testing.T, request string) {
	t.Helper()
	returned, parked := make(chan error, 1), make(chan struct{})
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		WatchClose(r.Context())
		close(parked)
		select {
		case <-r.Context().Done():
			returned <- r.Context().Err()
		case <-time.After(testTimeout):
			returned <- nil
		}
	})})
	conn := dial(t, addr)
	conn.send(t, request)
	<-parked
	require.NoError(t, conn.Close())
	require.ErrorIs(t, <-returned, context.Canceled)
}

// TestWatchCloseWatchesARequestWithASmallBodyLeftUnread: a handler that
// parks without reading the request's body (a long poll sent with a
// body) is still told when the client leaves, when the body arrived
// whole with the request: WatchClose discards it and watches. Before, it
// watched only requests whose body was read to its end, and the poll
// waited out its whole wait after its client left.
func TestWatchCloseWatchesARequestWithASmallBodyLeftUnread(t *testing.T) {
	requireCancelledWhenTheClientLeaves(t, "GET /poll HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
}

// TestWatchCloseKeepsTheDrainBoundOfTheRequest: a chunked body longer
// than unreadBodyDrainMax, left unread, closes the connection after the
// reply whether or not the handler called WatchClose, whose drain counts
// toward the same bound (each drain counted from zero, the connection
// served the next request after two partial drains; found in review).
func TestWatchCloseKeepsTheDrainBoundOfTheRequest(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprint("watch=", watch), func(t *testing.T) {
			_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if watch {
					WatchClose(r.Context())
				}
				w.WriteHeader(http.StatusAccepted)
			})})
			conn := dial(t, addr)
			var request strings.Builder
			request.WriteString("POST /poll HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
			chunk := strings.Repeat("x", 4096)
			for total := 0; total < unreadBodyDrainMax+unreadBodyDrainMax/4; total += len(chunk) {
				fmt.Fprintf(&request, "%x\r\n%s\r\n", len(chunk), chunk)
			}
			request.WriteString("0\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n")
			go func() { _, _ = conn.Write([]byte(request.String())) }() // the server stops reading at the bound
			response, _ := conn.response(t, "POST")
			require.Equal(t, http.StatusAccepted, response.StatusCode)
			require.True(t, response.Close, "a body past unreadBodyDrainMax closes the connection")
			require.True(t, conn.closed(t))
		})
	}
}

// TestWatchCloseKeepsPipelinedRequest: bytes the watcher read while the
// handler waited are the next request.
func TestWatchCloseKeepsPipelinedRequest(t *testing.T) {
	release, parked := make(chan struct{}), make(chan struct{})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	reads := &readWatch{Listener: listener, marker: "/next", seen: make(chan struct{})}
	_, addr := startOn(t, reads, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/poll" {
			WatchClose(r.Context())
			close(parked)
			<-release
		}
		_, _ = io.WriteString(w, r.URL.Path)
	})})
	conn := dial(t, addr)
	conn.send(t, "GET /poll HTTP/1.1\r\nHost: h\r\n\r\n")
	<-parked
	conn.send(t, "GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
	<-reads.seen // read by the watcher: the handler has not returned
	close(release)
	for _, want := range []string{"/poll", "/next"} {
		_, body := conn.response(t, "GET")
		require.Equal(t, want, body)
	}
}

// readWatch is a listener whose connections close seen the first time a
// read returns bytes holding marker.
type readWatch struct {
	net.Listener
	marker string
	seen   chan struct{}
	once   sync.Once
}

func (l *readWatch) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readWatchConn{Conn: conn, watch: l}, nil
}

type readWatchConn struct {
	net.Conn
	watch *readWatch
}

func (c *readWatchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if strings.Contains(string(p[:n]), c.watch.marker) {
		c.watch.once.Do(func() { close(c.watch.seen) })
	}
	return n, err
}

func TestShutdownWaitsForActiveAndClosesIdle(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := New(Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, "done")
	})})
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	addr := listener.Addr().String()
	idle := dial(t, addr)
	idle.send(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	idle.response(t, "GET")
	active := dial(t, addr)
	active.send(t, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	<-entered
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		shutdown <- server.Shutdown(ctx)
	}()
	require.True(t, idle.closed(t))
	require.ErrorIs(t, <-served, ErrServerClosed)
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	default:
	}
	close(release)
	response, body := active.response(t, "GET")
	require.Equal(t, "done", body)
	require.True(t, response.Close)
	require.NoError(t, <-shutdown)
}

// TestCloseCancelsAndJoinsRequests: Close, and Shutdown whose context
// ended, cancel the context of a request in flight and return only once
// its handler did.
func TestCloseCancelsAndJoinsRequests(t *testing.T) {
	stops := map[string]func(*Server) error{
		"close": (*Server).Close,
		"shutdown expired": func(server *Server) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return server.Shutdown(ctx)
		},
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			entered, unblock := make(chan struct{}), make(chan struct{})
			defer close(unblock) // frees the handler if the server did not
			var returned atomic.Bool
			server, addr := start(t, Options{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				close(entered)
				select {
				case <-r.Context().Done():
				case <-unblock:
				}
				returned.Store(true)
			})})
			conn := dial(t, addr)
			conn.send(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
			<-entered
			_ = stop(server)
			require.True(t, returned.Load(), "the handler returned before the server stopped")
			require.True(t, conn.closed(t))
		})
	}
}

// TestRefusedLargeBodyReplyIsRead: a reply the handler gives without
// reading a body too large to drain reaches the client whole, and the
// client's sending ends, although the server never read the body. (On
// loopback a reset would not destroy a reply already delivered, so this
// does not show the linger itself: TestLingerClose does.)
func TestRefusedLargeBodyReplyIsRead(t *testing.T) {
	_, addr := start(t, Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})})
	for range 3 {
		conn := dial(t, addr)
		size := 2 * unreadBodyDrainMax
		sent := make(chan error, 1)
		go func() {
			_, err := io.WriteString(conn.Conn, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n"+strings.Repeat("b", size))
			sent <- err
		}()
		<-sent // the client reads only once it sent everything (or failed to)
		response, _ := conn.response(t, "POST")
		require.Equal(t, http.StatusRequestEntityTooLarge, response.StatusCode)
		require.True(t, response.Close)
	}
}
