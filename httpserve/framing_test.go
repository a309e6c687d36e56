package httpserve

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A handler answers without reading the body of a request that asked for
// Connection: close (or of an HTTP/1.0 request): the connection closes
// after the answer anyway, so the answer goes at once, not after the body
// arrived or the read timeout passed.
func TestAClosingConnectionAnswersWithoutWaitingForTheBody(t *testing.T) {
	for _, request := range []string{
		"POST / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 10\r\n\r\n",
		"POST / HTTP/1.0\r\nContent-Length: 10\r\n\r\n",
	} {
		_, addr := start(t, Options{ReadTimeout: 25 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusUnauthorized) // refuses without reading the body
			})})
		conn := dial(t, addr) // its deadline: testTimeout (5 s)
		conn.send(t, request) // the body is not sent: the client waits for the answer first
		response, _ := conn.response(t, "POST")
		require.Equal(t, http.StatusUnauthorized, response.StatusCode)
		require.True(t, response.Close)
	}
}

// A chunk-size line is chunk-size [ BWS ";" chunk-ext ] (RFC 9112 7.1):
// "1 garbage here" is not one, and the body is refused.
func TestAChunkSizeLineWithTextAfterTheSizeIsRefused(t *testing.T) {
	var refused atomic.Value
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler), Refused: func(reason Reason) { refused.Store(reason) }})
	conn := dial(t, addr)
	conn.send(t, "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1 garbage here\r\nx\r\n0\r\n\r\n")
	response, body := conn.response(t, "POST")
	require.Equal(t, http.StatusBadRequest, response.StatusCode, "body read as %q", body)
	require.Equal(t, ReasonBody, refused.Load())
}

// The trailer of a chunked body is field lines (RFC 9112 7.1.2): a body
// whose last chunk lacks its final CR LF is refused rather than swallowing
// the next pipelined request ("GET /smuggled") as its trailer, which would
// leave a front end that ended the body at "0\r\n" out of step with this
// server.
func TestTrailerLinesMustBeFieldLines(t *testing.T) {
	var refused atomic.Value
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler), Refused: func(reason Reason) { refused.Store(reason) }})
	conn := dial(t, addr)
	conn.send(t, "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"+
		"GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n")
	response, body := conn.response(t, "POST")
	require.Equal(t, http.StatusBadRequest, response.StatusCode, "body read as %q", body)
	require.Equal(t, ReasonBody, refused.Load())
}

// The lines of a chunked body end in CR LF. A bare LF ends no framing
// line (net/http refuses it too): a front proxy that reads "1\nx\n0\n\n"
// as one chunk-size line with an extension would see another body. A
// chunk extension holds no control byte but HTAB, as a bare CR is the
// other way to make a line read as two.
func TestChunkedFramingLinesEndInCRLF(t *testing.T) {
	for name, body := range map[string]string{
		"bare LF everywhere":           "1\nx\n0\n\n",
		"bare LF after the chunk data": "1\r\nx\n0\r\n\r\n",
		"bare LF after the last chunk": "1\r\nx\r\n0\n\r\n",
		"bare LF ending the trailer":   "1\r\nx\r\n0\r\n\n",
		"bare CR in an extension":      "1;a\rb\r\nx\r\n0\r\n\r\n",
		"NUL in an extension":          "1;a\x00b\r\nx\r\n0\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			var refused atomic.Value
			_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler), Refused: func(reason Reason) { refused.Store(reason) }})
			conn := dial(t, addr)
			conn.send(t, "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
			response, read := conn.response(t, "POST")
			require.Equal(t, http.StatusBadRequest, response.StatusCode, "body read as %q", read)
			require.True(t, conn.closed(t))
			require.Equal(t, ReasonBody, refused.Load())
		})
	}
	_, addr := start(t, Options{Handler: http.HandlerFunc(echoHandler)})
	conn := dial(t, addr)
	conn.send(t, "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;a=\"b\tc\"\r\nx\r\n0\r\n\r\n")
	response, read := conn.response(t, "POST")
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, "POST /a  h x", read)
}
