package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"narad/wire"
)

// framePayloads are payloads of frame tests: empty, small, and larger than
// one read chunk would be for a tiny reader.
var framePayloads = [][]byte{{}, []byte("x"), []byte("hello, peer"), bytes.Repeat([]byte{0xa5}, 70_000)}

// TestFrameRoundTrip: frames written back to back read back in order, and
// the stream then ends with io.EOF.
func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	for _, payload := range framePayloads {
		stream = wire.AppendFrame(stream, payload)
	}
	r := bytes.NewReader(stream)
	for _, payload := range framePayloads {
		got, err := wire.ReadFrame(r, nil)
		require.NoError(t, err)
		require.True(t, bytes.Equal(payload, got), "payload of %d bytes", len(payload))
	}
	_, err := wire.ReadFrame(r, nil)
	require.ErrorIs(t, err, io.EOF)
}

// TestFrameLayout: the header is magic, version, big-endian length and
// CRC-32C, then the payload.
func TestFrameLayout(t *testing.T) {
	frame := wire.AppendFrame([]byte("dst"), []byte("abc"))
	require.Equal(t, []byte("dst"), frame[:3])
	frame = frame[3:]
	require.Len(t, frame, wire.FrameHeaderBytes+3)
	require.Equal(t, []byte{'N', 'W', wire.Version, 0, 0, 0, 3}, frame[:7])
	require.Equal(t, uint32(0x364b3fb7), binary.BigEndian.Uint32(frame[7:11]), "CRC-32C of abc")
	require.Equal(t, []byte("abc"), frame[11:])
}

// TestReadFrameShortReads: frames split across one-byte, half and
// data-with-EOF reads are reassembled.
func TestReadFrameShortReads(t *testing.T) {
	var stream []byte
	for _, payload := range framePayloads {
		stream = wire.AppendFrame(stream, payload)
	}
	readers := map[string]func(io.Reader) io.Reader{
		"one byte": iotest.OneByteReader, "half": iotest.HalfReader, "data with EOF": iotest.DataErrReader,
	}
	for name, wrap := range readers {
		r := wrap(bytes.NewReader(stream))
		for _, payload := range framePayloads {
			got, err := wire.ReadFrame(r, nil)
			require.NoError(t, err, name)
			require.True(t, bytes.Equal(payload, got), "%s: payload of %d bytes", name, len(payload))
		}
		_, err := wire.ReadFrame(r, nil)
		require.ErrorIs(t, err, io.EOF, name)
	}
}

// TestReadFrameReusesBuffer: a payload that fits buf's capacity is read
// into buf.
func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	got, err := wire.ReadFrame(bytes.NewReader(wire.AppendFrame(nil, []byte("fits"))), buf)
	require.NoError(t, err)
	require.Equal(t, []byte("fits"), got)
	require.Same(t, &buf[:1][0], &got[0])
}

// TestReadFrameRefusesOversizedLength: a length over FrameBytesMax is
// ErrTooLarge, and nothing of that size is allocated.
func TestReadFrameRefusesOversizedLength(t *testing.T) {
	for _, length := range []uint32{wire.FrameBytesMax + 1, 1<<32 - 1} {
		header := append([]byte{'N', 'W', wire.Version}, binary.BigEndian.AppendUint32(nil, length)...)
		header = append(header, 0, 0, 0, 0)
		allocated := bytesAllocated(func() {
			_, err := wire.ReadFrame(bytes.NewReader(header), nil)
			require.ErrorIs(t, err, wire.ErrTooLarge)
		})
		require.Less(t, allocated, uint64(64<<10), "length %d: %d bytes allocated", length, allocated)
	}
}

// TestReadFrameAllocatesWhatArrives: a frame that announces FrameBytesMax
// and ends after 100 bytes costs about one read chunk, not FrameBytesMax.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	header := append([]byte{'N', 'W', wire.Version}, binary.BigEndian.AppendUint32(nil, wire.FrameBytesMax)...)
	stream := append(append(header, 0, 0, 0, 0), make([]byte, 100)...)
	allocated := bytesAllocated(func() {
		_, err := wire.ReadFrame(bytes.NewReader(stream), nil)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	})
	require.Less(t, allocated, uint64(4<<20), "%d bytes allocated for a 100-byte frame", allocated)
}

// TestReadFrameRejectsDamage: bad magic, another version, a damaged
// payload, a stream that ends inside the header or the payload, and a
// failing reader.
func TestReadFrameRejectsDamage(t *testing.T) {
	frame := wire.AppendFrame(nil, []byte("payload"))
	damaged := func(position int) []byte {
		b := bytes.Clone(frame)
		b[position] ^= 0x01
		return b
	}
	cases := []struct {
		name  string
		input io.Reader
		want  error
	}{
		{"magic", bytes.NewReader(damaged(0)), wire.ErrMalformed},
		{"version", bytes.NewReader(damaged(2)), wire.ErrVersion},
		{"payload", bytes.NewReader(damaged(len(frame) - 1)), wire.ErrMalformed},
		{"checksum", bytes.NewReader(damaged(8)), wire.ErrMalformed},
		{"inside header", bytes.NewReader(frame[:5]), io.ErrUnexpectedEOF},
		{"inside payload", bytes.NewReader(frame[:len(frame)-1]), io.ErrUnexpectedEOF},
		{"reader error", iotest.ErrReader(errors.New("reset by peer")), nil},
		{"reader error in payload", io.MultiReader(bytes.NewReader(frame[:12]), iotest.ErrReader(errors.New("reset"))), nil},
	}
	for _, c := range cases {
		_, err := wire.ReadFrame(c.input, nil)
		require.Error(t, err, c.name)
		if c.want != nil {
			require.ErrorIs(t, err, c.want, c.name)
		}
	}
}

// TestAppendFrameAssertsFrameBytesMax: a payload over FrameBytesMax is a
// bug of the caller.
func TestAppendFrameAssertsFrameBytesMax(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates FrameBytesMax")
	}
	want := fmt.Sprintf("wire: invariant broken: frame payload of %d, over FrameBytesMax = %d", wire.FrameBytesMax+1, wire.FrameBytesMax)
	require.PanicsWithValue(t, want, func() { wire.AppendFrame(nil, make([]byte, wire.FrameBytesMax+1)) })
}

// bytesAllocated returns the bytes the heap allocated while f ran.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
