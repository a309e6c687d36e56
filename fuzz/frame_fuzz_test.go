package fuzz

import (
	"bytes"
	"testing"

	"narad/storage"
)

func FuzzDecodeFrame(f *testing.F) {
	envelope := storage.EncodeRecord(nil, storage.Record{Key: []byte("key"), TimeMs: 42, Payload: []byte("payload")})
	valid := storage.EncodeFrame(nil, 7, envelope)
	f.Add(valid, 1<<20)
	f.Add(valid[:len(valid)-1], 1<<20)
	f.Add(valid, len(valid)-1)
	f.Add(append(bytes.Clone(valid), valid...), 64)
	f.Add([]byte{}, 0)
	f.Add([]byte{0x4e, 0x52, 0xd1, 0xf7, 0xff, 0xff, 0xff, 0xff}, -1)
	f.Fuzz(func(t *testing.T, b []byte, frameBytesMax int) {
		offset, decodedEnvelope, size, err := storage.DecodeFrame(b, frameBytesMax)
		if err != nil {
			if size != 0 || decodedEnvelope != nil {
				t.Fatalf("error %v with size %d and an envelope", err, size)
			}
			return
		}
		if size > len(b) || size > frameBytesMax {
			t.Fatalf("frame of %d bytes from %d bytes, limit %d", size, len(b), frameBytesMax)
		}
		if again := storage.EncodeFrame(nil, offset, decodedEnvelope); !bytes.Equal(again, b[:size]) {
			t.Fatalf("decoded frame does not re-encode to its bytes")
		}
	})
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(storage.EncodeRecord(nil, storage.Record{Key: []byte("k"), TimeMs: -1, Payload: []byte("p")}))
	f.Add(storage.EncodeRecord(nil, storage.Record{}))
	f.Add(storage.EncodeRecord(nil, storage.Record{Payload: bytes.Repeat([]byte{0xff}, 100)}))
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		record, err := storage.DecodeRecord(b)
		if err != nil {
			return
		}
		if len(record.Key) == 0 && record.Key != nil {
			t.Fatalf("a keyless record decoded with a non-nil empty key")
		}
		if again := storage.EncodeRecord(nil, record); !bytes.Equal(again, b) {
			t.Fatalf("decoded record re-encodes to %x, input %x", again, b)
		}
	})
}
