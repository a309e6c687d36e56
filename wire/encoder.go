package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// encoder appends the encoding of one envelope to buf.
type encoder struct {
	// buf is the output; the encoder only appends to it.
	buf []byte
	// err is the first value of a type the codec does not know. Once it
	// is set the rest of the output is meaningless and the caller
	// discards buf; the encoder keeps going only to keep the callers
	// straight-line.
	err error
	// boundsUnchecked turns off the bound assertions. Only the tests of
	// this package set it, to build inputs over a bound for the decoder.
	boundsUnchecked bool
}

// unknown records a value of a type the codec cannot encode.
func (e *encoder) unknown(place string, value any) {
	if e.err == nil {
		e.err = fmt.Errorf("%w: %s of Go type %T", ErrUnknownType, place, value)
	}
}

// grow makes room for n more bytes, so a large message is copied once.
func (e *encoder) grow(n int) { e.buf = slices.Grow(e.buf, n) }

func (e *encoder) byte(v byte) { e.buf = append(e.buf, v) }

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

func (e *encoder) varint(v int64) { e.buf = binary.AppendVarint(e.buf, v) }

func (e *encoder) int(v int) { e.varint(int64(v)) }

func (e *encoder) typeNumber(t typeNumber) { e.uvarint(uint64(t)) }

// bool writes 1 for true and 0 for false; the decoder accepts nothing else.
func (e *encoder) bool(v bool) {
	if v {
		e.byte(1)
		return
	}
	e.byte(0)
}

// length writes the length or count n after asserting it is within l.
func (e *encoder) length(n int, l limit) {
	if !e.boundsUnchecked {
		l.assertWithin(n, "encoding a length or count")
	}
	e.uvarint(uint64(n))
}

// bytes writes a length-prefixed byte string within l.
func (e *encoder) bytes(v []byte, l limit) {
	e.length(len(v), l)
	e.buf = append(e.buf, v...)
}

// string writes a length-prefixed string within l.
func (e *encoder) string(v string, l limit) {
	e.length(len(v), l)
	e.buf = append(e.buf, v...)
}

// optionalInt writes a presence flag, then the value if present.
func (e *encoder) optionalInt(v *int) {
	e.bool(v != nil)
	if v != nil {
		e.int(*v)
	}
}

// optionalString writes a presence flag, then the string if present.
func (e *encoder) optionalString(v *string, l limit) {
	e.bool(v != nil)
	if v != nil {
		e.string(*v, l)
	}
}

// optionalInt64 writes a presence flag, then the value if present.
func (e *encoder) optionalInt64(v *int64) {
	e.bool(v != nil)
	if v != nil {
		e.varint(*v)
	}
}
