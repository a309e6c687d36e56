package wire

import (
	"errors"
	"fmt"
)

// Expected failures of decoding, and of encoding a value of a type the
// codec does not know. Callers test them with errors.Is; the returned errors
// wrap them with the detail of what was wrong. Every error DecodeEnvelope
// and ReadFrame return wraps exactly one of these (ReadFrame also returns
// io.EOF and io.ErrUnexpectedEOF, and any error of its reader).
var (
	// ErrMalformed: the bytes are not an encoding this codec produces:
	// truncated input, trailing bytes, a bad magic, a non-minimal varint,
	// a flag byte other than 0 or 1, an unknown error code, a frame whose
	// checksum does not match, or a Raft message protobuf cannot decode.
	ErrMalformed = errors.New("wire: malformed input")
	// ErrTooLarge: a length or count is over its bound (bounds.go), or a
	// frame is longer than FrameBytesMax. Decoding refuses it before
	// allocating anything of the claimed size.
	ErrTooLarge = errors.New("wire: over a bound")
	// ErrUnknownType: a type number this version does not know (decode),
	// or a Go value of a type the codec does not encode (encode).
	ErrUnknownType = errors.New("wire: unknown type")
	// ErrVersion: the envelope or frame carries a version other than
	// Version.
	ErrVersion = errors.New("wire: unsupported version")
)

// assert panics when an invariant is broken: on encode, a value over one
// of the bounds is a bug of the caller, which must validate requests (the
// node does) before it sends them. The message names what broke and the
// bound, so a panic in a test or in the simulator explains itself.
//
// The arguments of a call are boxed into interfaces even when ok holds,
// which allocates; hot paths therefore test the condition first, or use
// limit.assertWithin, which takes its values unboxed.
func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("wire: invariant broken: "+format, args...))
	}
}

// assertWithin panics, naming the bound, if n is over it.
func (l limit) assertWithin(n int, what string) {
	if n > l.max {
		assert(false, "%s of %d, over %s = %d", what, n, l.name, l.max)
	}
}
