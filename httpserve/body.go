package httpserve

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
)

// bodyMode is how the current request's body is delimited.
type bodyMode int

const (
	// bodyDone: no body, or all of it was read.
	bodyDone bodyMode = iota
	// bodyLength: remaining bytes of a Content-Length body are left.
	bodyLength
	// bodyChunked: a chunked body; remaining bytes are left of the
	// current chunk (0: the next chunk-size line is due).
	bodyChunked
)

// body is the current request's Body. It reads from the connection's
// input buffer, and straight from the connection into a large enough
// read once the buffer is empty.
type body struct {
	c    *conn
	mode bodyMode
	// remaining: see bodyMode; >= 0.
	remaining int64
	// chunkDataRead: a chunk's data was read and its CR LF is due.
	chunkDataRead bool
	// framing counts the bytes of chunked framing read: size lines with
	// their extensions, the line ends after the data and the trailer,
	// each line with a CR LF. overhead is the framing its chunks' data
	// did not pay for (see chunkOverheadMax); >= 0.
	framing, overhead int64
	// expectContinue: the client waits for 100 Continue before sending
	// the body; continueSent once it was sent.
	expectContinue, continueSent bool
	// closed: the handler closed the body; further reads fail.
	closed bool
	// err is the first read error; sticky.
	err error
	// scratch is where drain discards bytes; allocated on first use.
	scratch []byte
	// drained counts what drain discarded, on the wire, over all its
	// calls for this request (WatchClose's, then afterHandler's): the
	// bound unreadBodyDrainMax is the request's, not each call's.
	drained int64
}

var (
	errBodyClosed    = errors.New("httpserve: read on a closed request body")
	errBadChunk      = errors.New("httpserve: malformed chunked request body")
	errChunkOverhead = errors.New("httpserve: chunked request body with too much framing for its data")
	errDrainBound    = errors.New("httpserve: unread request body over the drain bound")
	continueAnswer   = []byte("HTTP/1.1 100 Continue\r\n\r\n")
)

// directReadMin is the size of a read into which the body reads straight
// from the connection, bypassing the buffer.
const directReadMin = 1 << 10

func (b *body) reset() {
	*b = body{c: b.c, scratch: b.scratch}
}

// Read implements io.Reader; it returns io.EOF with the last bytes.
func (b *body) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, errBodyClosed
	case b.err != nil:
		return 0, b.err
	case b.mode == bodyDone:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	if b.expectContinue && !b.continueSent {
		if err := b.sendContinue(); err != nil {
			return 0, b.fail(err)
		}
	}
	if b.mode == bodyLength {
		return b.readLength(p)
	}
	return b.readChunked(p)
}

// Close implements io.Closer; what is left is drained after the handler.
func (b *body) Close() error {
	b.closed = true
	return nil
}

func (b *body) sendContinue() error {
	b.continueSent = true
	if b.c.writer.headerSent {
		return nil // the reply is under way: the client need not wait
	}
	_, err := b.c.netConn.Write(continueAnswer)
	return err
}

// fail records err as the body's sticky error and returns it.
func (b *body) fail(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	b.err = err
	return err
}

func (b *body) readLength(p []byte) (int, error) {
	n, err := b.readData(p[:min(int64(len(p)), b.remaining)])
	b.remaining -= int64(n)
	if err != nil {
		return n, b.fail(err)
	}
	if b.remaining == 0 {
		b.mode = bodyDone
		return n, io.EOF
	}
	return n, nil
}

// readData reads at least one byte of body into p (not empty).
func (b *body) readData(p []byte) (int, error) {
	c := b.c
	if c.in.buffered() == 0 && len(p) >= directReadMin {
		c.armReadDeadline()
		n, err := c.netConn.Read(p)
		if n > 0 {
			return n, nil
		}
		return 0, c.readError(err)
	}
	if c.in.buffered() == 0 {
		if err := c.needMore(); err != nil {
			return 0, err
		}
	}
	return c.in.take(p), nil
}

// readError classifies a failed read of the current request.
func (c *conn) readError(err error) error {
	var netError net.Error
	if errors.As(err, &netError) && netError.Timeout() {
		c.refused(ReasonReadTimeout)
		return errRequestTimeout
	}
	if err == nil {
		return io.ErrNoProgress
	}
	return err
}

func (b *body) readChunked(p []byte) (int, error) {
	if b.remaining == 0 {
		size, err := b.nextChunk()
		if err != nil {
			return 0, b.fail(err)
		}
		if size == 0 {
			b.mode = bodyDone
			return 0, io.EOF
		}
		b.remaining = size
	}
	n, err := b.readData(p[:min(int64(len(p)), b.remaining)])
	b.remaining -= int64(n)
	b.chunkDataRead = true
	if err != nil {
		return n, b.fail(err)
	}
	return n, nil
}

// nextChunk reads the end of the previous chunk and the next chunk-size
// line, charging their framing; at the last chunk it also reads the
// trailer.
func (b *body) nextChunk() (int64, error) {
	framing := b.framing
	if b.chunkDataRead {
		line, err := b.readLine()
		if err != nil {
			return 0, err
		}
		if len(line) != 0 {
			return 0, b.badChunk()
		}
		b.chunkDataRead = false
	}
	line, err := b.readLine()
	if err != nil {
		return 0, err
	}
	size, ok := parseChunkSize(line)
	if !ok {
		return 0, b.badChunk()
	}
	if err := b.charge(b.framing-framing, size); err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, b.readTrailer()
	}
	return size, nil
}

func (b *body) badChunk() error {
	b.c.refused(ReasonBody)
	return errBadChunk
}

// charge adds a chunk's framing to the overhead, less what the chunk
// pays for (chunkFramingPerChunk, chunkFramingPerDataByte of its size),
// and refuses the body once the overhead passes chunkOverheadMax.
func (b *body) charge(framing, size int64) error {
	paid := chunkFramingPerChunk + chunkFramingPerDataByte*size // size < 1<<60: no overflow
	b.overhead = max(b.overhead+framing-paid, 0)
	if b.overhead > chunkOverheadMax {
		b.c.refused(ReasonChunkOverhead)
		return errChunkOverhead
	}
	return nil
}

// readLine reads the next line of the body's framing and counts it, with
// a CR LF, in framing.
func (b *body) readLine() ([]byte, error) {
	line, err := b.c.readLine()
	if err == nil {
		b.framing += int64(len(line)) + 2
	}
	return line, err
}

// readTrailer reads and discards the trailer fields up to the blank line.
// Each line must be a field line: anything else (such as the next
// pipelined request, after a last chunk without its final CR LF) fails
// the body rather than being swallowed as trailer.
func (b *body) readTrailer() error {
	for total := 0; ; {
		line, err := b.readLine()
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		if total += len(line); total > trailerBytesMax {
			return b.badChunk()
		}
		name, value, found := strings.Cut(string(line), ":")
		if !found || !isToken(name) || !isFieldValue(strings.Trim(value, " \t")) {
			return b.badChunk()
		}
	}
}

// parseChunkSize reads the hexadecimal size before any extension: a
// chunk-size line is the size, optional blanks, then nothing or ";" and
// an extension (RFC 9112 7.1). Anything else after the size fails it, as
// a front proxy may read such a line otherwise.
func parseChunkSize(line []byte) (int64, bool) {
	end := 0
	for end < len(line) && line[end] != ';' && line[end] != ' ' && line[end] != '\t' {
		end++
	}
	if end == 0 || end > 15 {
		return 0, false
	}
	if rest := bytes.TrimLeft(line[end:], " \t"); len(rest) > 0 && (rest[0] != ';' || !isExtension(rest)) {
		return 0, false
	}
	size, err := strconv.ParseUint(string(line[:end]), 16, 64)
	return int64(size), err == nil
}

// isExtension reports that a chunk extension holds no control byte but
// HTAB (a bare CR within it is how the same line reads as two to another
// parser).
func isExtension(extension []byte) bool {
	for _, b := range extension {
		if (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// readLine returns the next line of the body's framing, reading as
// needed, at most chunkLineBytesMax long. The framing's lines end in
// CR LF: a bare LF fails the body (unlike in the header, where RFC 9112
// 2.2 lets a server accept it), since a front proxy that reads it as part
// of a chunk extension would see another body than ours.
func (c *conn) readLine() ([]byte, error) {
	for {
		line, crlf, ok := c.in.line()
		if ok && crlf && len(line) <= chunkLineBytesMax {
			return line, nil
		}
		if ok || c.in.buffered() > chunkLineBytesMax {
			c.refused(ReasonBody)
			return nil, errBadChunk
		}
		if err := c.needMore(); err != nil {
			return nil, err
		}
	}
}

// drain reads and discards what the handler left of the body, up to
// unreadBodyDrainMax counted on the wire (data and chunked framing) over
// all its calls for the request; false if the connection cannot serve
// another request, for good (the body's error is then set).
func (b *body) drain() bool {
	if b.err == nil && b.mode == bodyLength && b.drained+b.remaining > unreadBodyDrainMax {
		b.err = errDrainBound
	}
	if b.err != nil {
		return false
	}
	if b.scratch == nil {
		b.scratch = make([]byte, directReadMin)
	}
	b.closed, b.expectContinue = false, false
	for b.mode != bodyDone {
		framing := b.framing
		n, err := b.Read(b.scratch)
		b.drained += int64(n) + b.framing - framing
		if err != nil && !errors.Is(err, io.EOF) {
			return false // the body's error is set (Read)
		}
		if b.drained > unreadBodyDrainMax {
			b.err = errDrainBound
			return false
		}
	}
	return true
}
