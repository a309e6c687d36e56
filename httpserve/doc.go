// Package httpserve is the broker's HTTP/1.1 connection server: it serves
// the connections a net.Listener accepts (plain TCP or *tls.Conn) to an
// http.Handler, in place of net/http.Server, doing less work per request.
//
// What it owns. One goroutine per connection reads a request, calls the
// handler on that same goroutine, writes the reply and loops. On the
// common path a request costs no goroutine, no timer, no context and no
// request or header map allocation: the connection keeps one
// http.Request, one header map, one input buffer and one output buffer
// and reuses them; the header block becomes one string of which the
// method, target, keys and values are substrings. A reply the handler
// finishes within responseBufferBytesMax goes out in one write with a
// Content-Length; a larger one streams (chunked for HTTP/1.1, until the
// close for HTTP/1.0).
//
// Bounds, named in limits.go: a request's line and header fields together
// are at most headerBytesMax, and its fields at most headerFieldsMax (431
// past either); a chunk-size line or a trailer line at most
// chunkLineBytesMax, a trailer at most trailerBytesMax; the framing of
// a chunked body (size lines with their extensions, line ends) beyond
// chunkFramingPerChunk per chunk and chunkFramingPerDataByte per byte of
// the chunk's data at most chunkOverheadMax, summed over its chunks, as
// net/http bounds it: past it the body's read fails, the handler's reply
// says Connection: close and the connection closes, so that extensions
// cannot make the server parse gigabytes for a few bytes of data (400
// from the API, ReasonChunkOverhead). A body the handler left unread is
// drained up to unreadBodyDrainMax bytes on the wire, framing included,
// past which the connection closes instead. A busy connection holds at
// most headerBytesMax of input buffer and responseBufferBytesMax (plus a
// reply header) of output buffer: a larger write of a streamed body goes
// out from the handler's own slice. An idle one holds inputBufferBytes
// of input, at most outputBufferKeptBytes of each output buffer and
// headerFieldsKeptMax fields' worth of header map, and nothing of its
// last request's text.
// The number of connections is bounded by the listener (the caller's
// connection limit).
//
// Timeouts (Options): IdleTimeout bounds the wait for the first byte of a
// request on a kept-alive connection (with no byte buffered);
// ReadTimeout bounds reading one request, header and body, from the
// moment the server first needs more of it than its first read gave (in
// practice from its first bytes); WriteTimeout bounds the time from the
// end of the request header to the last byte of the reply, handler time
// included. A request that arrives in one read costs two deadline calls:
// the read deadline armed for the idle wait, and the write deadline.
// Whatever exceeds a timeout, the connection is closed: at once for the
// idle wait, a header or a reply; for a body, after the handler, whose
// read failed with a timeout error (a net.Error, os.ErrDeadlineExceeded),
// answered (its reply says Connection: close).
//
// Invariants. Replies leave in the order of their requests (pipelined
// requests are read from the buffer one after the other). A request the
// parser refuses is answered (400, 413, 417, 431, 501, 505) with
// Connection: close and changes nothing, since the handler never sees
// it. A request with both Content-Length and Transfer-Encoding, or with
// Transfer-Encoding in HTTP/1.0, is refused; so is a chunked body whose
// framing lines end in a bare LF (accepted in the header only, RFC 9112
// 2.2) or whose chunk extensions hold a control byte other than HTAB,
// since a front proxy could read such a body otherwise. A reply says
// Connection: close whenever the connection closes after it, a streamed
// one included (its header leaves before the handler returns, so the
// server decides then, closing when in doubt). Blank lines between
// requests keep a connection idle. Shutdown closes an idle connection
// only by compare-and-swap of its state: a request read as it closed is
// dropped unserved, never served with its reply lost.
// A handler's panic closes its connection (logged, except
// http.ErrAbortHandler) and never the server.
//
// The request context is the connection's: it is cancelled when the
// connection ends, when Close (or a Shutdown whose context ended) closes
// it, and, for a handler that called WatchClose before
// waiting (a parked long poll), as soon as the client closes its end
// (WatchClose first discards what the handler left of the body, up to
// the drain bound, unless the client waits for 100 Continue).
// Watching costs a goroutine blocked in a read, started only then and
// joined before the next request is read. Close and Shutdown return only
// once every connection's goroutine (and so its handler) has ended.
//
// Not supported: HTTP/2 and the upgrade to it, Hijack, Flush, trailers in
// replies, informational (1xx) replies from handlers (100 Continue is the
// server's own, sent when the handler first reads a body the client
// asked to wait for), absolute-form targets of other hosts (the host part
// is ignored), and keeping the request or its writer after the handler
// returned (both are reused by the connection's next request).
package httpserve
