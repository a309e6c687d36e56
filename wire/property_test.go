package wire_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"narad/wire"
	"narad/wire/wiretest"
)

// TestPropertyRoundTrip: any envelope drawn from the generators of every
// type decodes to its canonical form, and the decoded value re-encodes to
// the same bytes.
func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		env := wiretest.Envelope().Draw(t, "envelope")
		encoded, err := wire.EncodeEnvelope(nil, env)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		decoded, err := wire.DecodeEnvelope(encoded)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		want := wiretest.Comparable(wiretest.Canonical(env))
		if got := wiretest.Comparable(decoded); !equal(want, got) {
			t.Fatalf("round trip changed the envelope:\nwant %#v\ngot  %#v", want, got)
		}
		again, err := wire.EncodeEnvelope(nil, decoded)
		if err != nil || string(again) != string(encoded) {
			t.Fatalf("decoded value re-encodes differently (err %v)", err)
		}
	})
}

// TestPropertyDamagedInputFails: cutting an encoding short always fails
// with ErrMalformed; changing one byte either fails with one of the
// sentinel errors or decodes to an envelope that re-encodes to exactly the
// damaged bytes (the decoder is strict: it accepts only encodings).
func TestPropertyDamagedInputFails(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		encoded, err := wire.EncodeEnvelope(nil, wiretest.Envelope().Draw(t, "envelope"))
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		cut := rapid.IntRange(0, len(encoded)-1).Draw(t, "cut")
		if _, err := wire.DecodeEnvelope(encoded[:cut]); !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("prefix of %d of %d bytes: error %v, want ErrMalformed", cut, len(encoded), err)
		}
		position := rapid.IntRange(0, len(encoded)-1).Draw(t, "position")
		encoded[position] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
		checkStrictDecode(t, encoded)
	})
}

// checkStrictDecode decodes b: it must fail with a sentinel error, or give
// an envelope that encodes back to b.
func checkStrictDecode(t interface{ Fatalf(string, ...any) }, b []byte) {
	decoded, err := wire.DecodeEnvelope(b)
	if err != nil {
		if !isSentinel(err) {
			t.Fatalf("error %v wraps none of the sentinel errors", err)
		}
		return
	}
	again, err := wire.EncodeEnvelope(nil, decoded)
	if err != nil {
		t.Fatalf("a decoded envelope does not encode: %v", err)
	}
	if _, isRaft := wiretest.Comparable(decoded).Message.(wiretest.RaftBytes); !isRaft && string(again) != string(b) {
		t.Fatalf("decoded %x, which re-encodes to %x", b, again)
	}
}

func isSentinel(err error) bool {
	for _, sentinel := range []error{wire.ErrMalformed, wire.ErrTooLarge, wire.ErrUnknownType, wire.ErrVersion} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}
