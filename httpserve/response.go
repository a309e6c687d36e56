package httpserve

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// responseWriter is the current request's http.ResponseWriter. It keeps
// a reply body of up to responseBufferBytesMax and sends it with its
// header in one write when the handler returns; a larger one streams.
type responseWriter struct {
	c *conn
	// header is the reply's header, cleared for each request.
	header http.Header
	// status is 0 until WriteHeader (or the first Write) fixes it.
	status int
	// head: a HEAD request (no body sent); http10: an HTTP/1.0 client.
	head, http10 bool
	// declared is the Content-Length the handler set when it fixed the
	// status, -1 for none; written counts the body bytes it wrote.
	declared, written int64
	// body holds the body while it fits; out is the bytes to write.
	body, out []byte
	// headerSent: the reply streams (its header went out); chunked: as
	// chunks.
	headerSent, chunked bool
	// keys is scratch for sorting header names.
	keys []string
	// err is the first write error; sticky.
	err error
}

func (w *responseWriter) begin(head, http10 bool) {
	clear(w.header)
	w.status, w.head, w.http10, w.declared, w.written = 0, head, http10, -1, 0
	w.body, w.out, w.headerSent, w.chunked, w.err = w.body[:0], w.out[:0], false, false, nil
}

// Header implements http.ResponseWriter.
func (w *responseWriter) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter; informational codes are
// ignored, and only the first call counts.
func (w *responseWriter) WriteHeader(status int) {
	if w.status != 0 || status < 200 {
		return
	}
	if status > 999 {
		status = http.StatusInternalServerError
	}
	w.status = status
	if lengths := w.header["Content-Length"]; len(lengths) == 1 {
		if length, err := strconv.ParseInt(lengths[0], 10, 64); err == nil && length >= 0 {
			w.declared = length
		}
	}
}

// Write implements http.ResponseWriter.
func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case !bodyAllowed(w.status):
		return 0, http.ErrBodyNotAllowed
	case w.err != nil:
		return 0, w.err
	case w.declared >= 0 && w.written+int64(len(p)) > w.declared:
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.head {
		return len(p), nil
	}
	if !w.headerSent && len(w.body)+len(p) <= responseBufferBytesMax {
		w.body = append(w.body, p...)
		return len(p), nil
	}
	if !w.headerSent {
		w.startStream()
	}
	w.streamWrite(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// WriteString writes s without converting it first.
func (w *responseWriter) WriteString(s string) (int, error) {
	if !w.headerSent && !w.head && w.status != 0 && bodyAllowed(w.status) && w.err == nil &&
		(w.declared < 0 || w.written+int64(len(s)) <= w.declared) && len(w.body)+len(s) <= responseBufferBytesMax {
		w.body = append(w.body, s...)
		w.written += int64(len(s))
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// startStream sends the header now: with the declared length, chunked
// for HTTP/1.1, or delimited by the close for HTTP/1.0.
func (w *responseWriter) startStream() {
	w.headerSent = true
	if w.c.closesAfterStream() {
		w.c.closeAfter = true
	}
	length := w.declared
	if length < 0 {
		if w.http10 {
			w.c.closeAfter = true
		} else {
			w.chunked = true
		}
	}
	w.out = w.appendHeader(w.out[:0], length, w.body)
	body := w.body
	w.body = w.body[:0]
	w.appendChunk(body)
}

// streamWrite sends p as part of a streamed body: copied into out while
// out stays within responseBufferBytesMax, else written from where it is
// along with out, so that out never grows past the bound.
func (w *responseWriter) streamWrite(p []byte) {
	if len(w.out)+len(p) <= responseBufferBytesMax {
		w.appendChunk(p)
		return
	}
	if w.chunked {
		w.out = strconv.AppendInt(w.out, int64(len(p)), 16)
		w.out = append(w.out, "\r\n"...)
	}
	if w.err == nil {
		w.writeAlong(p)
	}
	w.out = w.out[:0]
	if w.chunked {
		w.out = append(w.out, "\r\n"...)
	}
}

// writeAlong writes out followed by p. A TCP connection takes both in
// one writev; on any other (TLS, a wrapper), where net.Buffers would
// write each apart and send out, perhaps only a chunk-size line, in a
// segment of its own, out is first filled up to responseBufferBytesMax
// with p's start, so that two large writes leave instead.
func (w *responseWriter) writeAlong(p []byte) {
	if _, vectored := w.c.netConn.(*net.TCPConn); vectored {
		buffers := net.Buffers{w.out, p}
		_, w.err = buffers.WriteTo(w.c.netConn)
		return
	}
	along := min(len(p), max(responseBufferBytesMax-len(w.out), 0))
	w.out = append(w.out, p[:along]...)
	if _, w.err = w.c.netConn.Write(w.out); w.err == nil && along < len(p) {
		_, w.err = w.c.netConn.Write(p[along:])
	}
}

func (w *responseWriter) appendChunk(p []byte) {
	if len(p) == 0 {
		return
	}
	if w.chunked {
		w.out = strconv.AppendInt(w.out, int64(len(p)), 16)
		w.out = append(w.out, "\r\n"...)
	}
	w.out = append(w.out, p...)
	if w.chunked {
		w.out = append(w.out, "\r\n"...)
	}
}

func (w *responseWriter) flush() {
	if w.err == nil && len(w.out) > 0 {
		_, w.err = w.c.netConn.Write(w.out)
	}
	w.out = w.out[:0]
}

// end finishes the reply after the handler returned (and after the
// connection decided whether it closes).
func (w *responseWriter) end() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.headerSent {
		if w.chunked {
			w.out = append(w.out, "0\r\n\r\n"...)
		} else if w.declared >= 0 && w.written < w.declared {
			w.c.closeAfter = true
		}
		w.flush()
		return w.err
	}
	length := int64(len(w.body))
	switch {
	case w.head && w.written == 0 && w.declared < 0:
		length = -1 // no Content-Length: the handler told nothing of the GET's length
	case w.head || w.declared >= 0:
		length = max(w.written, w.declared)
	}
	if w.declared >= 0 && w.written < w.declared && !w.head && bodyAllowed(w.status) {
		w.c.closeAfter = true // the handler broke its promise: the client learns from the close
	}
	w.out = w.appendHeader(w.out[:0], length, w.body)
	if !w.head && bodyAllowed(w.status) {
		w.out = append(w.out, w.body...)
	}
	w.flush()
	return w.err
}

// release drops, while the connection is idle, the buffers a large reply
// grew past outputBufferKeptBytes.
func (w *responseWriter) release() {
	if cap(w.body) > outputBufferKeptBytes {
		w.body = nil
	}
	if cap(w.out) > outputBufferKeptBytes {
		w.out = nil
	}
}

// bodyAllowed reports whether a status may carry a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// managedFields are the header fields the server writes itself.
var managedFields = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true}

// appendHeader appends the status line and header fields; length is the
// Content-Length (-1 for none); body is for content sniffing.
func (w *responseWriter) appendHeader(out []byte, length int64, body []byte) []byte {
	out = append(out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(w.status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(w.status)...)
	out = append(out, "\r\n"...)
	out = w.appendFields(out)
	if _, ok := w.header["Date"]; !ok {
		out = append(out, "Date: "...)
		out = append(out, w.c.server.dates.get(time.Now())...)
		out = append(out, "\r\n"...)
	}
	if _, ok := w.header["Content-Type"]; !ok && len(body) > 0 && bodyAllowed(w.status) {
		out = append(out, "Content-Type: "...)
		out = append(out, http.DetectContentType(body)...)
		out = append(out, "\r\n"...)
	}
	switch {
	case w.chunked:
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	case length >= 0 && bodyAllowed(w.status):
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, length, 10)
		out = append(out, "\r\n"...)
	}
	switch {
	case w.c.closeAfter:
		out = append(out, "Connection: close\r\n"...)
	case w.http10:
		out = append(out, "Connection: keep-alive\r\n"...)
	}
	return append(out, "\r\n"...)
}

// appendFields appends the handler's fields in name order, without line
// breaks inside values and without the fields the server manages.
func (w *responseWriter) appendFields(out []byte) []byte {
	w.keys = w.keys[:0]
	for name := range w.header {
		if !managedFields[name] && isToken(name) {
			w.keys = append(w.keys, name)
		}
	}
	slices.Sort(w.keys)
	for _, name := range w.keys {
		for _, value := range w.header[name] {
			out = append(out, name...)
			out = append(out, ": "...)
			for i := 0; i < len(value); i++ {
				if b := value[i]; b == '\r' || b == '\n' {
					out = append(out, ' ')
				} else {
					out = append(out, b)
				}
			}
			out = append(out, "\r\n"...)
		}
	}
	return out
}
