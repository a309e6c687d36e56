package fuzz

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"narad/wire"
	"narad/wire/wiretest"
)

// wireSeedBytesMax leaves the megabyte samples out of the seed corpora:
// the fuzzer mutates small inputs far faster, and the small samples cover
// every type and field.
const wireSeedBytesMax = 4 << 10

// wireSeeds returns the encodings of the small samples of every type.
func wireSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, sample := range wiretest.Samples() {
		encoded, err := wire.EncodeEnvelope(nil, sample.Envelope)
		if err != nil {
			f.Fatalf("%s: %v", sample.Name, err)
		}
		if len(encoded) <= wireSeedBytesMax {
			seeds = append(seeds, encoded)
		}
	}
	return seeds
}

// FuzzDecodeEnvelope: any bytes. Decoding never panics and fails only with
// an error wrapping one of the sentinels; an envelope that decodes
// re-encodes to bytes that decode to the same value, and (the decoder
// being strict) to the input itself unless the envelope is a Raft message,
// whose protobuf bytes need not be canonical.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range wireSeeds(f) {
		f.Add(seed)
	}
	f.Add([]byte{})
	f.Add([]byte{wire.Version})
	f.Add([]byte{wire.Version, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := wire.DecodeEnvelope(b)
		if err != nil {
			if !isWireSentinel(err) {
				t.Fatalf("error %v wraps no sentinel error", err)
			}
			return
		}
		again, err := wire.EncodeEnvelope(nil, env)
		if err != nil {
			t.Fatalf("decoded envelope does not encode: %v", err)
		}
		decoded, err := wire.DecodeEnvelope(again)
		if err != nil {
			t.Fatalf("re-encoded envelope does not decode: %v", err)
		}
		want, got := wiretest.Comparable(env), wiretest.Comparable(decoded)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("re-encoding changed the envelope:\nfirst  %#v\nsecond %#v", want, got)
		}
		if _, isRaft := want.Message.(wiretest.RaftBytes); !isRaft && !bytes.Equal(again, b) {
			t.Fatalf("input %x decoded, but its value encodes to %x", b, again)
		}
	})
}

// FuzzReadFrame: any byte stream, read as frames whole and in short reads
// of 1 to 256 bytes. Reading never panics; both ways read the same frames
// and end with the same error, which is io.EOF, io.ErrUnexpectedEOF or
// wraps a sentinel; and every frame read re-frames to exactly the bytes it
// was read from.
func FuzzReadFrame(f *testing.F) {
	for _, seed := range wireSeeds(f) {
		f.Add(wire.AppendFrame(nil, seed), uint8(7))
	}
	f.Add(wire.AppendFrame(wire.AppendFrame(nil, []byte("one")), []byte("two")), uint8(0))
	f.Add(wire.AppendFrame(nil, nil), uint8(255))
	f.Add([]byte{'N', 'W', wire.Version, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		whole, wholeErr := readFrames(bytes.NewReader(stream))
		split, splitErr := readFrames(&shortReader{data: stream, readBytesMax: int(chunk) + 1})
		if !isFrameError(wholeErr) {
			t.Fatalf("error %v is neither an end of stream nor a sentinel", wholeErr)
		}
		if !reflect.DeepEqual(whole, split) || !sameError(wholeErr, splitErr) {
			t.Fatalf("short reads changed the frames (%d vs %d) or the error (%v vs %v)", len(whole), len(split), wholeErr, splitErr)
		}
		var reframed []byte
		for _, payload := range whole {
			reframed = wire.AppendFrame(reframed, payload)
		}
		if !bytes.HasPrefix(stream, reframed) {
			t.Fatalf("the frames read do not re-frame to the start of the stream")
		}
	})
}

// readFramesMax bounds the frames read from one input (each takes at least
// a header, so the input bounds it too).
const readFramesMax = 1 << 16

// readFrames reads frames until the first error, copying each payload
// (ReadFrame reuses the buffer).
func readFrames(r io.Reader) ([][]byte, error) {
	var frames [][]byte
	buf := make([]byte, 0, 64)
	for range readFramesMax {
		payload, err := wire.ReadFrame(r, buf)
		if err != nil {
			return frames, err
		}
		frames = append(frames, bytes.Clone(payload))
	}
	return frames, nil
}

// shortReader returns at most readBytesMax bytes per Read.
type shortReader struct {
	data         []byte
	readBytesMax int
}

func (r *shortReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.readBytesMax)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func isWireSentinel(err error) bool {
	for _, sentinel := range []error{wire.ErrMalformed, wire.ErrTooLarge, wire.ErrUnknownType, wire.ErrVersion} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// isFrameError reports an error ReadFrame may return on any stream, or nil
// (readFrames stopped at readFramesMax).
func isFrameError(err error) bool {
	return err == nil || err == io.EOF || err == io.ErrUnexpectedEOF || isWireSentinel(err)
}

// sameError reports errors of the same kind and text.
func sameError(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
}
