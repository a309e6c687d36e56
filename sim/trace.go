package sim

import (
	"fmt"
	"io"
	"strconv"
)

// traceTailLines is how many trace lines a failure report shows.
const traceTailLines = 60

// trace hashes every event of a run (time, node, kind, digest: never
// pointers, paths or wall times) and keeps the last lines for failure
// reports. With verbose set it also prints every line.
type trace struct {
	hash traceHash
	// tail holds the last lines, a ring once full: next is the oldest.
	// Each slot's buffer is reused by the line that replaces it, so a
	// line costs no allocation once the ring is full.
	tail    [][]byte
	next    int
	events  int
	verbose io.Writer
	// slot is the tail slot of the line between begin and end.
	slot int
}

func newTrace(verbose io.Writer) *trace {
	return &trace{hash: newTraceHash(), tail: make([][]byte, 0, traceTailLines), verbose: verbose}
}

func (t *trace) add(nowMs int64, format string, args ...any) {
	var line []byte
	if len(t.tail) < traceTailLines {
		t.tail = append(t.tail, nil)
		line = t.appendLine(len(t.tail)-1, nowMs, format, args)
	} else {
		line = t.appendLine(t.next, nowMs, format, args)
		t.next = (t.next + 1) % traceTailLines
	}
	t.hash.add(line, '\n')
	t.events++
	if t.verbose != nil {
		fmt.Fprintf(t.verbose, "%s\n", line)
	}
}

// appendLine formats a line into tail[slot], reusing its buffer.
func (t *trace) appendLine(slot int, nowMs int64, format string, args []any) []byte {
	line := appendStamp(t.tail[slot][:0], nowMs)
	line = fmt.Appendf(line, format, args...)
	t.tail[slot] = line
	return line
}

// addParts adds the line made of parts, as add does the line it formats
// (a hot line costs no formatting and no boxed argument).
func (t *trace) addParts(nowMs int64, parts ...string) {
	line := t.begin(nowMs)
	for _, part := range parts {
		line = append(line, part...)
	}
	t.end(line)
}

// begin returns the buffer of the next line, holding its time stamp, for
// the caller to append the line's text to and hand to end: a hot line
// built so costs no formatting and no boxed argument, and reads as add
// would format it.
func (t *trace) begin(nowMs int64) []byte {
	t.slot = t.next
	if len(t.tail) < traceTailLines {
		t.tail = append(t.tail, nil)
		t.slot = len(t.tail) - 1
	} else {
		t.next = (t.next + 1) % traceTailLines
	}
	return appendStamp(t.tail[t.slot][:0], nowMs)
}

// end adds the line begin started.
func (t *trace) end(line []byte) {
	t.tail[t.slot] = line
	t.hash.add(line, '\n')
	t.events++
	if t.verbose != nil {
		fmt.Fprintf(t.verbose, "%s\n", line)
	}
}

// appendStamp appends the time as fmt's "%9d " does, without boxing it.
func appendStamp(line []byte, nowMs int64) []byte {
	var digits [20]byte
	formatted := strconv.AppendInt(digits[:0], nowMs, 10)
	for pad := 9 - len(formatted); pad > 0; pad-- {
		line = append(line, ' ')
	}
	line = append(line, formatted...)
	return append(line, ' ')
}

// addBytes hashes an event given as bytes (a peer message as encoded),
// without a trace line.
func (t *trace) addBytes(nowMs int64, b []byte) {
	t.hash.mix(uint64(nowMs))
	t.hash.add(b, 0)
	t.events++
}

// sum is the trace hash.
func (t *trace) sum() uint64 { return t.hash.sum }

// last returns the kept lines, oldest first.
func (t *trace) last() []string {
	lines := make([]string, 0, len(t.tail))
	for _, line := range append(append([][]byte(nil), t.tail[t.next:]...), t.tail[:t.next]...) {
		lines = append(lines, string(line))
	}
	return lines
}
