package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// decoder reads one envelope. Reads are sticky-failing: the first failure
// is kept in err, and every later read returns a zero value without
// touching the input, so the decoding functions are straight-line code
// that checks err once at the end (finish).
//
// Struct literals built from decoder reads, as in
// msg.Subscribe{Topic: d.string(...), ForMs: d.varint()}, rely on the
// language's guarantee that the calls of an expression run in lexical
// left-to-right order, which is the order of the fields on the wire.
type decoder struct {
	// input is the unread rest of the encoding.
	input []byte
	// arena is the backing store of every decoded byte slice (keys and
	// payloads): a private copy of the input, taken at the first slice
	// from that point to the end, so the slices of one envelope cost one
	// allocation and one copy, and never alias the input. input is always
	// a suffix of the copied bytes, so the arena position of the next
	// input byte is len(arena)-len(input). Each slice handed out has its
	// capacity cut to its length, so appending to one cannot overwrite
	// the bytes after it.
	arena []byte
	// err is the first failure; nil while decoding succeeds.
	err error
}

// fail records err unless an earlier failure is already recorded.
func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
		d.input = nil
	}
}

// malformed records an ErrMalformed failure with the given detail.
func (d *decoder) malformed(format string, args ...any) {
	d.fail(fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...))
}

// finish returns the first failure, or ErrMalformed if input is left over.
func (d *decoder) finish() error {
	if d.err == nil && len(d.input) > 0 {
		d.malformed("%d trailing bytes", len(d.input))
	}
	return d.err
}

func (d *decoder) byte() byte {
	if len(d.input) == 0 {
		d.malformed("input ends before a byte")
		return 0
	}
	v := d.input[0]
	d.input = d.input[1:]
	return v
}

// uvarint reads a minimal unsigned varint: a longer encoding of the same
// value is refused, so every value has exactly one encoding.
func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.input)
	if !d.checkVarint(n) {
		return 0
	}
	d.input = d.input[n:]
	return v
}

// varint reads a minimal zig-zag signed varint.
func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.input)
	if !d.checkVarint(n) {
		return 0
	}
	d.input = d.input[n:]
	return v
}

// checkVarint checks the length n returned by binary.Uvarint or Varint.
func (d *decoder) checkVarint(n int) bool {
	switch {
	case n == 0:
		d.malformed("input ends inside a varint")
	case n < 0:
		d.malformed("varint overflows 64 bits")
	case n > 1 && d.input[n-1] == 0:
		d.malformed("varint of %d bytes is not minimal", n)
	default:
		return true
	}
	return false
}

// int reads a signed varint that must fit a Go int.
func (d *decoder) int() int {
	v := d.varint()
	if v < math.MinInt || v > math.MaxInt {
		d.malformed("integer %d does not fit an int", v)
		return 0
	}
	return int(v)
}

// uint32 reads an unsigned varint that must fit 32 bits.
func (d *decoder) uint32() uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.malformed("integer %d does not fit 32 bits", v)
		return 0
	}
	return uint32(v)
}

func (d *decoder) typeNumber() typeNumber { return typeNumber(d.uvarint()) }

// bool reads a flag byte, which must be 0 or 1.
func (d *decoder) bool() bool {
	v := d.byte()
	if v > 1 {
		d.malformed("flag byte %d is neither 0 nor 1", v)
	}
	return v == 1
}

// length reads the length of a byte string, refusing one over l and one
// longer than the bytes left. Nothing is allocated before both checks.
func (d *decoder) length(l limit) int { return d.count(l, 1) }

// count reads the element count of a list, refusing one over l and one
// whose elements, of at least elementBytesMin bytes each, could not fit in
// the bytes left. Nothing is allocated before both checks.
func (d *decoder) count(l limit, elementBytesMin int) int {
	v := d.uvarint()
	switch {
	case v > uint64(l.max):
		d.fail(fmt.Errorf("%w: length or count %d over %s = %d", ErrTooLarge, v, l.name, l.max))
	case v*uint64(elementBytesMin) > uint64(len(d.input)):
		d.malformed("length or count %d of %d-byte elements with only %d bytes left", v, elementBytesMin, len(d.input))
	default:
		return int(v)
	}
	return 0
}

// bytes reads a length-prefixed byte string within l, as a slice of the
// arena. An empty one decodes as nil.
func (d *decoder) bytes(l limit) []byte {
	n := d.length(l)
	if n == 0 {
		return nil
	}
	if d.arena == nil {
		d.arena = bytes.Clone(d.input)
	}
	start := len(d.arena) - len(d.input)
	d.input = d.input[n:]
	return d.arena[start : start+n : start+n]
}

// string reads a length-prefixed string within l.
func (d *decoder) string(l limit) string {
	n := d.length(l)
	v := string(d.input[:n])
	d.input = d.input[n:]
	return v
}

// stringPair reads two length-prefixed strings within l into one
// allocation: an envelope's sender and receiver, read for every peer
// message (about 1 % of the simulator's allocations as two).
func (d *decoder) stringPair(l limit) (string, string) {
	n := d.length(l)
	first := d.input[:n]
	d.input = d.input[n:]
	m := d.length(l)
	both := string(first) + string(d.input[:m]) // one copy of both
	d.input = d.input[m:]
	return both[:n], both[n:]
}

// optionalInt reads a presence flag and, if set, the value.
func (d *decoder) optionalInt() *int {
	if !d.bool() {
		return nil
	}
	v := d.int()
	return &v
}

// optionalString reads a presence flag and, if set, the string.
func (d *decoder) optionalString(l limit) *string {
	if !d.bool() {
		return nil
	}
	v := d.string(l)
	return &v
}

// optionalInt64 reads a presence flag and, if set, the value.
func (d *decoder) optionalInt64() *int64 {
	if !d.bool() {
		return nil
	}
	v := d.varint()
	return &v
}
