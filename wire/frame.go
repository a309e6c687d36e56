package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// A frame carries one payload (an encoded envelope) on a byte stream:
//
//	magic     2 bytes  'N' 'W'
//	version   1 byte   Version
//	length    4 bytes  big-endian length of the payload, at most FrameBytesMax
//	checksum  4 bytes  big-endian CRC-32C (Castagnoli) of the payload
//	payload   length bytes
//
// The magic catches a peer that speaks another protocol, the version one
// that speaks another version of this one, and the checksum damage that
// the transport did not catch (the wire half of the checksum pairs on
// both sides of disk and wire: docs/style.md#errors-and-assertions).
const (
	frameMagic0, frameMagic1 = 'N', 'W'
	// FrameHeaderBytes is the length of a frame header.
	FrameHeaderBytes = 11
	// frameReadChunkBytes is how much ReadFrame reads (and grows its
	// buffer) at a time when the caller's buffer is too small, so a peer
	// that announces a large frame and sends little costs little memory.
	frameReadChunkBytes = 1 << 20
)

// frameChecksumTable is the CRC-32C table (hardware-accelerated on amd64
// and arm64).
var frameChecksumTable = crc32.MakeTable(crc32.Castagnoli)

// AppendFrame appends a frame carrying payload to dst and returns the
// extended slice. A payload over FrameBytesMax is a bug of the caller
// (EncodeEnvelope never produces one) and panics.
func AppendFrame(dst []byte, payload []byte) []byte {
	frameLimit.assertWithin(len(payload), "frame payload")
	dst = slices.Grow(dst, FrameHeaderBytes+len(payload))
	dst = append(dst, frameMagic0, frameMagic1, Version)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, frameChecksumTable))
	return append(dst, payload...)
}

// ReadFrame reads one frame from r and returns its payload. The payload
// is read into buf when it fits buf's capacity (so a reader loop can reuse
// one buffer; the payload is then valid until the next call), else into a
// new buffer grown as the bytes arrive.
//
// A length over FrameBytesMax is refused with ErrTooLarge before anything
// is allocated; a bad magic or checksum is ErrMalformed, another version
// ErrVersion. At a clean end of stream (no byte of a new frame) it returns
// io.EOF; a stream that ends inside a frame returns io.ErrUnexpectedEOF.
// After any error the stream position is unknown: close the connection.
func ReadFrame(r io.Reader, buf []byte) ([]byte, error) {
	var header [FrameHeaderBytes]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	length, checksum, err := parseFrameHeader(header)
	if err != nil {
		return nil, err
	}
	payload, err := readFramePayload(r, buf[:0], length)
	if err != nil {
		return nil, err
	}
	if crc32.Checksum(payload, frameChecksumTable) != checksum {
		return nil, fmt.Errorf("%w: frame checksum mismatch", ErrMalformed)
	}
	return payload, nil
}

// parseFrameHeader checks a frame header and returns the payload length
// and checksum it announces.
func parseFrameHeader(header [FrameHeaderBytes]byte) (length int, checksum uint32, err error) {
	if header[0] != frameMagic0 || header[1] != frameMagic1 {
		return 0, 0, fmt.Errorf("%w: frame magic %#x %#x", ErrMalformed, header[0], header[1])
	}
	if header[2] != Version {
		return 0, 0, fmt.Errorf("%w: frame version %d, this codec reads %d", ErrVersion, header[2], Version)
	}
	announced := binary.BigEndian.Uint32(header[3:7])
	if announced > FrameBytesMax {
		return 0, 0, fmt.Errorf("%w: frame of %d bytes, over FrameBytesMax = %d", ErrTooLarge, announced, FrameBytesMax)
	}
	return int(announced), binary.BigEndian.Uint32(header[7:11]), nil
}

// readFramePayload reads length bytes from r, appending to buf. Without
// room in buf it grows by at most frameReadChunkBytes per read, so memory
// follows the bytes that actually arrive, not the announced length.
func readFramePayload(r io.Reader, buf []byte, length int) ([]byte, error) {
	for len(buf) < length {
		chunk := min(length-len(buf), frameReadChunkBytes)
		if cap(buf) >= length {
			chunk = length - len(buf)
		}
		buf = slices.Grow(buf, chunk)
		start := len(buf)
		buf = buf[:start+chunk]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return buf, nil
}

// unexpectedEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
