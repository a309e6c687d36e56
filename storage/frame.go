package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Frame layout, all integers big-endian:
//
//	magic           4 bytes  frameMagic
//	envelopeLength  4 bytes  length of the envelope that follows the header
//	offset          8 bytes  the record's offset in the partition
//	crc             4 bytes  CRC32C (Castagnoli) over bytes [0,16) and the envelope
//	envelope        envelopeLength bytes (see record.go)
//
// The length lets recovery step over a corrupt frame whose length field is
// intact; the magic lets it search for the next candidate header when the
// length is damaged too. The CRC tells a candidate that decodes from noise,
// and what follows a candidate tells a genuine frame from one encoded in a
// record's payload (recovery.go, resync).
const (
	frameMagic       = 0x4e52d1f7
	frameHeaderBytes = 4 + 4 + 8 + 4
	frameCRCStart    = 16
	// frameBytesMin is the smallest valid frame: a header and an empty
	// keyless envelope. Recovery uses it to bound how many offsets can hide
	// in a run of corrupt bytes.
	frameBytesMin = frameHeaderBytes + recordOverheadBytes
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameMagicBytes is frameMagic as it appears on disk.
var frameMagicBytes = binary.BigEndian.AppendUint32(nil, frameMagic)

// EncodeFrame appends the frame of one record envelope to dst.
func EncodeFrame(dst []byte, offset uint64, envelope []byte) []byte {
	assert(uint64(len(envelope)) <= math.MaxUint32-frameHeaderBytes, "envelope of %d bytes does not fit a frame", len(envelope))
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, frameMagic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(envelope)))
	dst = binary.BigEndian.AppendUint64(dst, offset)
	crc := crc32.Update(0, castagnoli, dst[start:start+frameCRCStart])
	crc = crc32.Update(crc, castagnoli, envelope)
	dst = binary.BigEndian.AppendUint32(dst, crc)
	return append(dst, envelope...)
}

// DecodeFrame parses the frame at the start of b. The declared length is
// checked against frameBytesMax before anything else is read, and the CRC
// is verified; envelope aliases b and size is the frame's encoded length.
// A buffer that ends inside an otherwise plausible frame is
// ErrFrameTruncated; a wrong magic, an oversized length or a CRC mismatch
// is ErrFrameCorrupt.
func DecodeFrame(b []byte, frameBytesMax int) (offset uint64, envelope []byte, size int, err error) {
	if len(b) >= len(frameMagicBytes) && binary.BigEndian.Uint32(b) != frameMagic {
		return 0, nil, 0, fmt.Errorf("%w: bad magic %#x", ErrFrameCorrupt, binary.BigEndian.Uint32(b))
	}
	if len(b) < frameHeaderBytes {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes, header needs %d", ErrFrameTruncated, len(b), frameHeaderBytes)
	}
	envelopeLength := uint64(binary.BigEndian.Uint32(b[4:8]))
	if envelopeLength+frameHeaderBytes > uint64(max(frameBytesMax, 0)) {
		return 0, nil, 0, fmt.Errorf("%w: envelope length %d exceeds frame limit %d", ErrFrameCorrupt, envelopeLength, frameBytesMax)
	}
	size = frameHeaderBytes + int(envelopeLength)
	if len(b) < size {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes, frame needs %d", ErrFrameTruncated, len(b), size)
	}
	envelope = b[frameHeaderBytes:size]
	crc := crc32.Update(crc32.Update(0, castagnoli, b[:frameCRCStart]), castagnoli, envelope)
	if stored := binary.BigEndian.Uint32(b[frameCRCStart:frameHeaderBytes]); stored != crc {
		return 0, nil, 0, fmt.Errorf("%w: crc %#x, computed %#x", ErrFrameCorrupt, stored, crc)
	}
	return binary.BigEndian.Uint64(b[8:16]), envelope, size, nil
}

// encodeRecordFrame appends the frame of record r at offset to dst: the
// same bytes as EncodeFrame(dst, offset, EncodeRecord(nil, r)), without
// copying the envelope twice (the append path of Log).
func encodeRecordFrame(dst []byte, offset uint64, r Record) []byte {
	start := len(dst)
	dst = slices.Grow(dst, frameHeaderBytes+envelopeBytes(r))
	dst = EncodeRecord(dst[:start+frameHeaderBytes], r)
	envelopeLength := len(dst) - start - frameHeaderBytes
	assert(uint64(envelopeLength) <= math.MaxUint32-frameHeaderBytes, "envelope of %d bytes does not fit a frame", envelopeLength)
	header := dst[start : start+frameHeaderBytes]
	binary.BigEndian.PutUint32(header[0:4], frameMagic)
	binary.BigEndian.PutUint32(header[4:8], uint32(envelopeLength))
	binary.BigEndian.PutUint64(header[8:16], offset)
	crc := crc32.Update(crc32.Update(0, castagnoli, header[:frameCRCStart]), castagnoli, dst[start+frameHeaderBytes:])
	binary.BigEndian.PutUint32(header[frameCRCStart:], crc)
	return dst
}

// checkEncodedFrame decodes a frame just encoded and panics unless it
// holds exactly r at offset: the write side of the paired disk checks,
// run when invariantsEnabled.
func checkEncodedFrame(frame []byte, offset uint64, r Record, frameBytesMax int) {
	decodedOffset, envelope, size, err := DecodeFrame(frame, frameBytesMax)
	assert(err == nil && size == len(frame) && decodedOffset == offset,
		"frame of offset %d does not decode: offset %d, size %d of %d, error %v", offset, decodedOffset, size, len(frame), err)
	decoded, err := DecodeRecord(envelope)
	assert(err == nil && decoded.TimeMs == r.TimeMs && bytes.Equal(decoded.Key, r.Key) && bytes.Equal(decoded.Payload, r.Payload) &&
		(decoded.Origin == nil) == (r.Origin == nil) && (r.Origin == nil || *decoded.Origin == *r.Origin),
		"record of offset %d does not round-trip (error %v)", offset, err)
}
