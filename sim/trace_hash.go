package sim

import "encoding/binary"

// traceHash is the run's 64-bit trace hash. It takes its input eight bytes
// at a time (FNV-1a, which it replaced, took one, and its hashing was
// about 2 % of a five-node run's time): each word is xored in, multiplied by an odd
// constant and folded, a bijection of the state for a given word, so two
// inputs that differ in one word always leave different states behind it.
// It only tells runs apart, and is no defence against a chosen collision.
type traceHash struct {
	sum uint64
}

// traceHashStart is the state of an empty trace (FNV-1a's offset basis).
const traceHashStart = 0xcbf29ce484222325

// traceHashMultiplier is odd, so the multiplication is a bijection.
const traceHashMultiplier = 0x9e3779b97f4a7c15

func newTraceHash() traceHash { return traceHash{sum: traceHashStart} }

// mix takes one word in.
func (h *traceHash) mix(word uint64) {
	h.sum = (h.sum ^ word) * traceHashMultiplier
	h.sum ^= h.sum >> 29
}

// add takes b in, then end: b's tail (up to seven bytes, zero padded)
// is one more word, and end with the tail's length a last one, so that
// "ab" and "a" followed by "b" leave different states.
func (h *traceHash) add(b []byte, end byte) {
	for len(b) >= 8 {
		h.mix(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	var tail [8]byte
	copy(tail[:], b)
	h.mix(binary.LittleEndian.Uint64(tail[:]))
	h.mix(uint64(len(b))<<8 | uint64(end))
}
