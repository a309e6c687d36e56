package httpserve

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// sendChunked writes, from a goroutine, a chunked POST whose body is count
// times chunk, then tail; the channel gets the write's error (the server
// may close before it read everything). The connection's deadline bounds
// the write.
func sendChunked(conn *rawConn, chunk string, count int, tail string) <-chan error {
	done := make(chan error, 1)
	go func() {
		writer := bufio.NewWriterSize(conn.Conn, 64<<10)
		_, err := io.WriteString(writer, "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
		for i := 0; i < count && err == nil; i++ {
			_, err = io.WriteString(writer, chunk)
		}
		if err == nil {
			_, err = io.WriteString(writer, tail)
		}
		if err == nil {
			err = writer.Flush()
		}
		done <- err
	}()
	return done
}

// startRecording is start, recording the last refusal's reason.
func startRecording(t *testing.T, handler http.HandlerFunc) (string, *atomic.Value) {
	t.Helper()
	refused := new(atomic.Value)
	_, addr := start(t, Options{Handler: handler, ReadTimeout: testTimeout, WriteTimeout: testTimeout,
		Refused: func(reason Reason) { refused.Store(reason) }})
	return addr, refused
}

// ignoreBody answers without reading the body.
func ignoreBody(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

// TestUnreadChunkExtensionsNotDrained: an unread body of 1-byte chunks
// each with chunkLineBytesMax of extension is not drained to keep the
// connection (it was: 8 MB parsed for 2000 bytes of data, 31 times
// unreadBodyDrainMax): its framing passes chunkOverheadMax at once and
// the connection closes after the reply.
func TestUnreadChunkExtensionsNotDrained(t *testing.T) {
	addr, refused := startRecording(t, ignoreBody)
	conn := dial(t, addr)
	chunk := "1;e=" + strings.Repeat("a", chunkLineBytesMax-10) + "\r\nx\r\n"
	const chunks = 2000
	require.Greater(t, chunks*len(chunk), unreadBodyDrainMax)
	sent := sendChunked(conn, chunk, chunks, "0\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n")
	response, body := conn.response(t, "POST")
	require.Equal(t, "ok", body)
	require.True(t, response.Close, "Connection: close")
	require.True(t, conn.closed(t))
	<-sent // an error or not: the server closed before reading it all
	require.Equal(t, ReasonChunkOverhead, refused.Load())
}

// TestUnreadChunkedBodyDrainCountsFraming: the drain of an unread body
// counts its framing with its data. Chunks whose extensions are within
// chunkFramingPerChunk pass the overhead bound, but past
// unreadBodyDrainMax bytes on the wire the connection closes although
// the data is a tenth of it.
func TestUnreadChunkedBodyDrainCountsFraming(t *testing.T) {
	addr, refused := startRecording(t, ignoreBody)
	conn := dial(t, addr)
	chunk := "1;e=" + strings.Repeat("a", 20) + "\r\nx\r\n"
	require.LessOrEqual(t, len(chunk)-1, chunkFramingPerChunk+chunkFramingPerDataByte)
	chunks := unreadBodyDrainMax/len(chunk) + 1000
	sent := sendChunked(conn, chunk, chunks, "0\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n")
	response, _ := conn.response(t, "POST")
	require.True(t, response.Close, "Connection: close after %d bytes on the wire, %d of data", chunks*len(chunk), chunks)
	require.True(t, conn.closed(t))
	<-sent
	require.Nil(t, refused.Load(), "a body too long to drain is no refusal")
}

// TestChunkOverheadFailsHandlerRead: a handler reading a body of tiny
// chunks with large extensions gets an error once the framing passes
// chunkOverheadMax, long before the body ends; its 400 is sent with
// Connection: close and the connection closes.
func TestChunkOverheadFailsHandlerRead(t *testing.T) {
	readErrors, readBytes := make(chan error, 1), make(chan int, 1)
	addr, refused := startRecording(t, func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		readErrors <- err
		readBytes <- len(data)
		w.WriteHeader(http.StatusBadRequest)
	})
	conn := dial(t, addr)
	chunk := "1;e=" + strings.Repeat("a", 1<<10) + "\r\nx\r\n"
	const chunks = 1000
	sent := sendChunked(conn, chunk, chunks, "0\r\n\r\n")
	response, _ := conn.response(t, "POST")
	require.Equal(t, http.StatusBadRequest, response.StatusCode)
	require.True(t, response.Close)
	require.True(t, conn.closed(t))
	<-sent
	require.ErrorIs(t, <-readErrors, errChunkOverhead)
	require.Less(t, <-readBytes, chunkOverheadMax>>10+2, "the read fails once the overhead passes its bound")
	require.Equal(t, ReasonChunkOverhead, refused.Load())
}

// TestOrdinaryChunkedBodiesServed: chunked bodies as clients send them
// pass the overhead bound, read or drained, and keep the connection:
// many 1-byte chunks with a short extension, chunks of mixed sizes, a
// long extension within the slack, and an unread body of small chunks
// within unreadBodyDrainMax on the wire.
func TestOrdinaryChunkedBodiesServed(t *testing.T) {
	addr, refused := startRecording(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ignore" {
			ignoreBody(w, r)
			return
		}
		echoHandler(w, r)
	})
	conn := dial(t, addr)
	tiny := strings.Repeat("1;name=value\r\nx\r\n", 20000)
	conn.send(t, "POST /tiny HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+tiny+"0\r\n\r\n")
	response, body := conn.response(t, "POST")
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, "POST /tiny  h "+strings.Repeat("x", 20000), body)
	require.False(t, response.Close)

	var mixed, want strings.Builder
	for size := 1; size < 5000; size = size*3 + 1 {
		data := strings.Repeat("m", size)
		mixed.WriteString(strconv.FormatInt(int64(size), 16) + ";a=b;c=\"d\"\r\n" + data + "\r\n")
		want.WriteString(data)
	}
	mixed.WriteString("2;e=" + strings.Repeat("l", chunkLineBytesMax-10) + "\r\nzz\r\n")
	conn.send(t, "POST /mixed HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+mixed.String()+"0;end\r\nTrailer: t\r\n\r\n")
	response, body = conn.response(t, "POST")
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, "POST /mixed  h "+want.String()+"zz", body)
	require.False(t, response.Close)

	unread := strings.Repeat("64;n=v\r\n"+strings.Repeat("u", 100)+"\r\n", 1000)
	require.Less(t, len(unread), unreadBodyDrainMax)
	conn.send(t, "POST /ignore HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+unread+"0\r\n\r\n")
	response, body = conn.response(t, "POST")
	require.Equal(t, "ok", body)
	require.False(t, response.Close)
	conn.send(t, "GET /after HTTP/1.1\r\nHost: h\r\n\r\n")
	response, body = conn.response(t, "GET")
	require.Equal(t, "GET /after  h ", body)
	require.False(t, response.Close)
	require.Nil(t, refused.Load())
}
