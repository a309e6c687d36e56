package httpserve

import (
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// idleConn returns a connection of a server that serves nothing, on one
// end of a pipe whose other end discards what it reads, for tests of
// what a connection keeps.
func idleConn(t *testing.T) *conn {
	t.Helper()
	return pipeConn(t, func(server net.Conn) net.Conn { return server })
}

// pipeConn is idleConn with the server's end of the pipe wrapped.
func pipeConn(t *testing.T, wrap func(net.Conn) net.Conn) *conn {
	t.Helper()
	server, client := net.Pipe()
	discarded := make(chan struct{})
	go func() {
		defer close(discarded)
		_, _ = io.Copy(io.Discard, client)
	}()
	t.Cleanup(func() {
		_ = server.Close()
		_ = client.Close()
		<-discarded
	})
	return newConn(New(Options{Handler: http.NotFoundHandler()}), wrap(server))
}

// headerBlock is a request's header block of fields "A: b" lines.
func headerBlock(fields int) []byte {
	return []byte("GET /p?q HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("A: b\r\n", fields))
}

// TestIdleConnectionDropsLargeHeader: after a request of many fields the
// idle connection keeps neither the grown header map nor the value
// slice; after a small one it keeps them, emptied, with nothing in them
// still pointing into the last header.
func TestIdleConnectionDropsLargeHeader(t *testing.T) {
	c := idleConn(t)
	require.Nil(t, c.parseRequest(headerBlock(3*headerFieldsKeptMax)))
	largeMap := reflect.ValueOf(c.header).Pointer()
	c.releaseIdle()
	require.Zero(t, cap(c.values))
	require.Empty(t, c.header)
	require.NotEqual(t, largeMap, reflect.ValueOf(c.header).Pointer(), "the grown map is replaced")
	require.Empty(t, c.request.RequestURI)
	require.Empty(t, c.url.Path)

	require.Nil(t, c.parseRequest(headerBlock(4)))
	smallMap, values := reflect.ValueOf(c.header).Pointer(), c.values
	c.releaseIdle()
	require.Equal(t, smallMap, reflect.ValueOf(c.header).Pointer(), "a small map is kept")
	require.Empty(t, c.header)
	for _, value := range values[:cap(values)] {
		require.Empty(t, value, "the value slice's tail no longer holds the last header's text")
	}
}

func TestTooManyHeaderFields(t *testing.T) {
	c := idleConn(t)
	require.Nil(t, c.parseRequest(headerBlock(headerFieldsMax-1)))
	failure := c.parseRequest(headerBlock(headerFieldsMax))
	require.NotNil(t, failure)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, failure.status)
	require.Equal(t, ReasonHeaderTooLarge, failure.reason)
}

// TestIdleConnectionDropsLargeReplyBuffers: the buffers a large reply
// grew, whole or streamed, are not kept by the idle connection; those of
// a small one are.
func TestIdleConnectionDropsLargeReplyBuffers(t *testing.T) {
	c := idleConn(t)
	for _, size := range []int{responseBufferBytesMax, 3 * responseBufferBytesMax} {
		c.writer.begin(false, false)
		for range size / 1000 {
			_, err := c.writer.Write(make([]byte, 1000))
			require.NoError(t, err)
		}
		require.NoError(t, c.writer.end())
		require.Greater(t, max(cap(c.writer.body), cap(c.writer.out)), outputBufferKeptBytes, "size %d", size)
		c.releaseIdle()
		require.LessOrEqual(t, cap(c.writer.body), outputBufferKeptBytes, "size %d", size)
		require.LessOrEqual(t, cap(c.writer.out), outputBufferKeptBytes, "size %d", size)
	}
	c.writer.begin(false, false)
	_, err := c.writer.Write([]byte("small"))
	require.NoError(t, err)
	require.NoError(t, c.writer.end())
	out := cap(c.writer.out)
	c.releaseIdle()
	require.Equal(t, out, cap(c.writer.out), "a small reply's buffer is kept")
}

// writeSizes is a connection that records the size of each write.
type writeSizes struct {
	net.Conn
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Conn.Write(p)
}

// TestLargeStreamedWriteCarriesItsFraming: on a connection that is not
// Go's own TCP one, a large write of a streamed reply does not send the
// bytes buffered before it (a chunk-size line, a few data bytes) in a
// write of their own: every write but the last chunk's end is large.
func TestLargeStreamedWriteCarriesItsFraming(t *testing.T) {
	for _, http10 := range []bool{false, true} {
		recorder := &writeSizes{}
		c := pipeConn(t, func(server net.Conn) net.Conn { recorder.Conn = server; return recorder })
		c.writer.begin(false, http10)
		for _, size := range []int{100, 3 * responseBufferBytesMax, 10, 2 * responseBufferBytesMax} {
			_, err := c.writer.Write(make([]byte, size))
			require.NoError(t, err)
		}
		require.NoError(t, c.writer.end())
		sizes := recorder.sizes[:len(recorder.sizes)-1] // the end: the last chunk and whatever remained
		require.NotEmpty(t, sizes)
		for _, size := range sizes {
			require.GreaterOrEqual(t, size, responseBufferBytesMax/2, "http10 %v: writes %v", http10, recorder.sizes)
		}
	}
}

// lingerRecorder is a connection whose reads always give a full buffer
// until a read deadline was set, and then time out after budget more
// bytes; it records the order of the calls lingerClose should make.
type lingerRecorder struct {
	net.Conn
	calls    []string
	deadline time.Time
	budget   int
	read     int
}

func (l *lingerRecorder) CloseWrite() error {
	l.calls = append(l.calls, "closewrite")
	return nil
}

func (l *lingerRecorder) SetReadDeadline(deadline time.Time) error {
	l.calls = append(l.calls, "deadline")
	l.deadline = deadline
	return nil
}

func (l *lingerRecorder) Read(p []byte) (int, error) {
	if l.read >= l.budget {
		return 0, os.ErrDeadlineExceeded
	}
	l.read += len(p)
	return len(p), nil
}

func (l *lingerRecorder) Close() error {
	l.calls = append(l.calls, "close")
	return nil
}

// TestLingerClose: a connection closing with input unread half-closes
// first, then reads and discards what comes, under a read deadline, until
// the read fails or lingerBytesMax was discarded, and only then closes.
func TestLingerClose(t *testing.T) {
	for _, budget := range []int{3 * directReadMin, 4 * lingerBytesMax} {
		recorder := &lingerRecorder{budget: budget}
		c := pipeConn(t, func(server net.Conn) net.Conn { recorder.Conn = server; return recorder })
		require.True(t, c.server.add(c))
		c.linger = true
		c.finish()
		require.Equal(t, []string{"closewrite", "deadline", "close"}, recorder.calls)
		require.False(t, recorder.deadline.IsZero(), "the discarding reads have a deadline")
		require.Equal(t, min(budget, lingerBytesMax), recorder.read, "reads until the deadline or lingerBytesMax")
	}
}
