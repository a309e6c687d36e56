package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
)

// traceTailLines is how many trace lines a failure report shows.
const traceTailLines = 60

// trace hashes every event of a run (time, node, kind, digest: never
// pointers, paths or wall times) and keeps the last lines for failure
// reports. With verbose set it also prints every line.
type trace struct {
	hash    hash.Hash64
	tail    []string
	next    int
	events  int
	verbose io.Writer
}

func newTrace(verbose io.Writer) *trace {
	return &trace{hash: fnv.New64a(), tail: make([]string, 0, traceTailLines), verbose: verbose}
}

func (t *trace) add(nowMs int64, format string, args ...any) {
	line := fmt.Sprintf("%9d ", nowMs) + fmt.Sprintf(format, args...)
	t.hash.Write([]byte(line))
	t.hash.Write([]byte{'\n'})
	t.events++
	if len(t.tail) < traceTailLines {
		t.tail = append(t.tail, line)
	} else {
		t.tail[t.next] = line
		t.next = (t.next + 1) % traceTailLines
	}
	if t.verbose != nil {
		fmt.Fprintln(t.verbose, line)
	}
}

// addBytes hashes an event given as bytes (a peer message as encoded),
// without a trace line.
func (t *trace) addBytes(nowMs int64, b []byte) {
	var stamp [8]byte
	binary.LittleEndian.PutUint64(stamp[:], uint64(nowMs))
	t.hash.Write(stamp[:])
	t.hash.Write(b)
	t.events++
}

// sum is the trace hash.
func (t *trace) sum() uint64 { return t.hash.Sum64() }

// last returns the kept lines, oldest first.
func (t *trace) last() []string {
	return append(append([]string(nil), t.tail[t.next:]...), t.tail[:t.next]...)
}
