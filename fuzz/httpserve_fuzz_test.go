package fuzz

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"narad/httpserve"
)

// scriptedConn is a connection whose client sent script and then closed
// its end; what the server writes is kept.
type scriptedConn struct {
	reader  io.Reader
	written bytes.Buffer
	// closed is closed by the server's Close.
	closed chan struct{}
	once   sync.Once
}

func (c *scriptedConn) Read(p []byte) (int, error)  { return c.reader.Read(p) }
func (c *scriptedConn) Write(p []byte) (int, error) { return c.written.Write(p) }
func (c *scriptedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *scriptedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener accepts conn once, then waits until it is closed.
type oneConnListener struct {
	conn   net.Conn
	accept chan net.Conn
	done   chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.accept:
		return conn, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// echoRequest answers 200 with the method, target and body it read (an
// empty body to HEAD, so that every reply parses as one to GET).
func echoRequest(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.WriteString(w, r.Method+" "+r.RequestURI+" "+string(body))
}

func FuzzServeRequests(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /p?q=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /n HTTP/1.0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: v\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"HEAD / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"\r\n\nGET /%41 HTTP/1.1\nHost: h\n\n",
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(3))
	}
	f.Fuzz(func(t *testing.T, script []byte, readSize uint8) {
		var reader io.Reader = bytes.NewReader(script)
		if readSize > 0 {
			reader = &shortReader{data: script, readBytesMax: int(readSize)}
		}
		conn := &scriptedConn{reader: reader, closed: make(chan struct{})}
		listener := &oneConnListener{accept: make(chan net.Conn, 1), done: make(chan struct{})}
		listener.accept <- conn
		server := httpserve.New(httpserve.Options{Handler: http.HandlerFunc(echoRequest)})
		served := make(chan error, 1)
		go func() { served <- server.Serve(listener) }()
		<-conn.closed
		if err := server.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-served; !errors.Is(err, httpserve.ErrServerClosed) {
			t.Fatal(err)
		}
		checkReplies(t, conn.written.Bytes())
	})
}

// checkReplies parses every reply the server wrote: 100 Continue lines
// aside, whole replies, a refusal only as the last.
func checkReplies(t *testing.T, written []byte) {
	reader := bufio.NewReader(bytes.NewReader(written))
	for refused := false; ; {
		if _, err := reader.Peek(1); err == io.EOF {
			return
		}
		if refused {
			t.Fatalf("a reply after a refusal: %q", written)
		}
		response, err := http.ReadResponse(reader, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatalf("unparsable reply (%v): %q", err, written)
		}
		body, err := io.ReadAll(response.Body)
		if err != nil {
			t.Fatalf("reply body (%v): %q", err, written)
		}
		switch {
		case response.StatusCode == http.StatusContinue:
		case response.StatusCode == http.StatusOK || response.StatusCode == http.StatusBadRequest && len(body) == 0:
		case response.StatusCode >= 400 && strings.HasPrefix(string(body), `{"error":`) && response.Close:
			refused = true
		default:
			t.Fatalf("unexpected reply %d %q: %q", response.StatusCode, body, written)
		}
	}
}
