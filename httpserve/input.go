package httpserve

import (
	"bytes"
	"errors"
	"io"
)

// input is a connection's read buffer: buf[start:end] was read and not
// yet consumed. Invariant: 0 <= start <= end <= len(buf) <= headerBytesMax.
type input struct {
	buf        []byte
	start, end int
	// scanned is how far past start the search for the header's end got.
	scanned int
}

// errInputFull: the buffer holds headerBytesMax unconsumed bytes.
var errInputFull = errors.New("httpserve: input buffer full")

func (in *input) buffered() int { return in.end - in.start }

// reset empties the buffer; only when nothing is buffered.
func (in *input) reset() { in.start, in.end, in.scanned = 0, 0, 0 }

// fill reads once into the free space, first making room by moving the
// unconsumed bytes to the front or growing the buffer up to
// headerBytesMax.
func (in *input) fill(reader io.Reader) error {
	if in.end == len(in.buf) {
		switch {
		case in.start > 0:
			in.end = copy(in.buf, in.buf[in.start:in.end])
			in.start = 0
		case len(in.buf) < headerBytesMax:
			grown := make([]byte, min(2*len(in.buf), headerBytesMax))
			in.end = copy(grown, in.buf[in.start:in.end])
			in.start, in.buf = 0, grown
		default:
			return errInputFull
		}
	}
	n, err := reader.Read(in.buf[in.end:])
	in.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		return io.ErrNoProgress
	}
	return err
}

// take consumes up to len(p) buffered bytes into p.
func (in *input) take(p []byte) int {
	n := copy(p, in.buf[in.start:in.end])
	in.start += n
	return n
}

// skipBlankLines drops the empty lines a client may send before a
// request line.
func (in *input) skipBlankLines() {
	for in.start < in.end && (in.buf[in.start] == '\r' || in.buf[in.start] == '\n') {
		in.start++
		in.scanned = 0
	}
}

// headerEnd finds the end of a header block in the buffered bytes: it
// returns the block (through the last field line's LF) and consumes it
// with the blank line after it, or returns nil when the blank line has
// not arrived yet.
func (in *input) headerEnd() []byte {
	data := in.buf[in.start:in.end]
	for at := in.scanned; ; {
		lineFeed := bytes.IndexByte(data[at:], '\n')
		if lineFeed < 0 {
			in.scanned = len(data)
			return nil
		}
		end := at + lineFeed + 1
		rest := data[end:]
		blank := 0
		switch {
		case len(rest) >= 1 && rest[0] == '\n':
			blank = 1
		case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
			blank = 2
		case len(rest) < 2:
			in.scanned = end - 1 // look at this line feed again with more input
			return nil
		}
		if blank > 0 {
			in.start += end + blank
			in.scanned = 0
			return data[:end]
		}
		at = end
	}
}

// line returns the next line (without its CR LF) if one is buffered,
// consuming it; crlf reports that it ended in CR LF, not in a bare LF.
func (in *input) line() (line []byte, crlf, ok bool) {
	data := in.buf[in.start:in.end]
	lineFeed := bytes.IndexByte(data, '\n')
	if lineFeed < 0 {
		return nil, false, false
	}
	in.start += lineFeed + 1
	line, crlf = bytes.CutSuffix(data[:lineFeed], []byte{'\r'})
	return line, crlf, true
}
