package storage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecordRoundTrip(t *testing.T) {
	records := []Record{
		{},
		{TimeMs: -5},
		{Key: []byte("k"), TimeMs: 1 << 62, Payload: []byte("payload")},
		{Payload: bytes.Repeat([]byte{0xaa}, 4096)},
		{Key: bytes.Repeat([]byte{1}, 300)},
		{Key: []byte("k"), Payload: []byte("poison"), Origin: &Origin{Topic: "orders", Partition: 2, Offset: 1 << 40, DeliveryCount: 5}},
		{Origin: &Origin{Topic: string(bytes.Repeat([]byte("t"), originTopicBytesMax)), Partition: 1<<32 - 1, Offset: 1<<64 - 1, DeliveryCount: 1<<32 - 1}},
	}
	for _, r := range records {
		encoded := EncodeRecord(nil, r)
		require.Len(t, encoded, envelopeBytes(r))
		decoded, err := DecodeRecord(encoded)
		require.NoError(t, err)
		requireSameRecord(t, r, decoded)
		require.Equal(t, len(r.Key) == 0, decoded.Key == nil, "a keyless record decodes with a nil key")
	}
}

// DecodeRecord is strict: every malformed envelope is ErrCorrupt.
func TestDecodeRecordRejectsMalformed(t *testing.T) {
	valid := EncodeRecord(nil, Record{Key: []byte("key"), TimeMs: 7, Payload: []byte("body")})
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	cases := map[string][]byte{
		"empty":                 {},
		"short header":          valid[:recordOverheadBytes-1],
		"bad version":           mutate(func(b []byte) []byte { b[0] = 2; return b }),
		"unknown flag":          mutate(func(b []byte) []byte { b[1] |= 0x80; return b }),
		"key without flag":      mutate(func(b []byte) []byte { b[1] = 0; return b }),
		"key past the end":      mutate(func(b []byte) []byte { b[13] = 200; return b }),
		"huge key length":       mutate(func(b []byte) []byte { b[10], b[11] = 0xff, 0xff; return b }),
		"has key, length 0":     mutate(func(b []byte) []byte { b[10], b[11], b[12], b[13] = 0, 0, 0, 0; return b }),
		"flag set on no key":    append([]byte{recordVersion, recordFlagHasKey}, make([]byte, 12)...),
		"origin flag, no block": mutate(func(b []byte) []byte { b[1] |= recordFlagOrigin; return b[:recordOverheadBytes+3] }),
		"origin, empty topic":   append([]byte{recordVersion, recordFlagOrigin}, make([]byte, 12+originFixedBytes)...),
		"origin, topic past the end": append(append([]byte{recordVersion, recordFlagOrigin}, make([]byte, 12)...),
			append([]byte{200}, make([]byte, originFixedBytes)...)...),
	}
	for name, b := range cases {
		_, err := DecodeRecord(b)
		require.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// A dead letter of the largest record fits a frame: the origin block rides
// in the envelope overhead, not in RecordBytesMax.
func TestLargestDeadLetterFitsAFrame(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := DefaultLogConfig()
		log, _ := openTestLog(t, fs, "p", cfg)
		origin := &Origin{Topic: string(bytes.Repeat([]byte("t"), originTopicBytesMax)), Partition: 7, Offset: 9, DeliveryCount: 3}
		record := Record{Key: bytes.Repeat([]byte{1}, 4<<10), Payload: bytes.Repeat([]byte{2}, cfg.RecordBytesMax-4<<10), Origin: origin}
		offset, err := log.Append(record)
		require.NoError(t, err)
		require.NoError(t, log.Sync())
		got, err := log.Read(offset)
		require.NoError(t, err)
		requireSameRecord(t, record, got)
		_, err = log.Append(Record{Origin: &Origin{Topic: ""}})
		require.ErrorIs(t, err, ErrRecordTooLarge, "an origin without a topic is refused")
	})
}

func TestFrameRoundTrip(t *testing.T) {
	envelope := EncodeRecord(nil, Record{Key: []byte("k"), TimeMs: 3, Payload: []byte("hello")})
	prefix := []byte("prefix")
	frame := EncodeFrame(bytes.Clone(prefix), 42, envelope)
	require.Equal(t, prefix, frame[:len(prefix)], "EncodeFrame appends")
	frame = frame[len(prefix):]
	offset, decoded, size, err := DecodeFrame(append(frame, "trailing"...), 1<<20)
	require.NoError(t, err)
	require.Equal(t, uint64(42), offset)
	require.Equal(t, envelope, decoded)
	require.Equal(t, frameHeaderBytes+len(envelope), size)
}

// The CRC covers the header and the envelope: flipping any byte of a frame
// makes it fail to decode.
func TestFrameEveryByteIsChecked(t *testing.T) {
	frame := EncodeFrame(nil, 9, EncodeRecord(nil, Record{Key: []byte("key"), TimeMs: 1, Payload: []byte("data")}))
	for i := range frame {
		damaged := bytes.Clone(frame)
		damaged[i] ^= 0x01
		_, _, _, err := DecodeFrame(damaged, 1<<20)
		require.Error(t, err, "flip at byte %d", i)
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	frame := EncodeFrame(nil, 1, EncodeRecord(nil, Record{Payload: bytes.Repeat([]byte{7}, 100)}))
	for cut := 0; cut < len(frame); cut++ {
		_, _, _, err := DecodeFrame(frame[:cut], 1<<20)
		require.ErrorIs(t, err, ErrFrameTruncated, "cut at %d", cut)
	}
	_, _, _, err := DecodeFrame(frame, len(frame)-1)
	require.ErrorIs(t, err, ErrFrameCorrupt, "a declared length above the limit is refused before reading")
	_, _, _, err = DecodeFrame(append([]byte{0, 0, 0, 0}, frame[4:]...), 1<<20)
	require.ErrorIs(t, err, ErrFrameCorrupt)
	damaged := bytes.Clone(frame)
	damaged[len(damaged)-1] ^= 1
	_, _, _, err = DecodeFrame(damaged, 1<<20)
	require.ErrorIs(t, err, ErrFrameCorrupt)
	_, _, _, err = DecodeFrame(frame, -1)
	require.ErrorIs(t, err, ErrFrameCorrupt)
}

// The append path's single-copy encoder writes exactly the bytes of the
// public encoders, and they decode back (the write side of the CRC pair).
func TestEncodeRecordFrameMatchesPublicEncoders(t *testing.T) {
	for i := range uint64(40) {
		r := testRecord(i)
		want := EncodeFrame([]byte("x"), i, EncodeRecord(nil, r))
		got := encodeRecordFrame([]byte("x"), i, r)
		require.Equal(t, want, got)
		checkEncodedFrame(got[1:], i, r, 1<<20)
	}
}
