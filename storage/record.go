package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record envelope, the bytes a frame carries:
//
//	version   1 byte   recordVersion
//	flags     1 byte   bit 0: the record has a key; other bits zero
//	timeMs    8 bytes  big-endian two's complement, commit time in ms
//	keyLength 4 bytes  big-endian; zero unless the has-key flag is set
//	key       keyLength bytes
//	payload   the rest of the envelope
const (
	recordVersion       = 1
	recordFlagHasKey    = 0x01
	recordOverheadBytes = 1 + 1 + 8 + 4
)

// Record is one message of a partition log.
type Record struct {
	// Key is the record's key; empty means the record has no key (the
	// envelope's has-key flag, so a decoded keyless record has a nil Key).
	Key []byte
	// TimeMs is the commit time in Unix milliseconds, set by the owner.
	TimeMs int64
	// Payload is the message body; it may be empty.
	Payload []byte
}

// EncodeRecord appends the envelope of r to dst and returns the result.
// Size limits are the caller's (Log.Append checks RecordBytesMax).
func EncodeRecord(dst []byte, r Record) []byte {
	assert(uint64(len(r.Key)) <= math.MaxUint32, "key of %d bytes does not fit the envelope", len(r.Key))
	flags := byte(0)
	if len(r.Key) > 0 {
		flags = recordFlagHasKey
	}
	dst = append(dst, recordVersion, flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.TimeMs))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Key)))
	dst = append(dst, r.Key...)
	return append(dst, r.Payload...)
}

// DecodeRecord parses an envelope strictly: known version, no unknown
// flags, key length consistent with the flag and within the envelope.
// The returned Key and Payload alias b. Errors wrap ErrCorrupt.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) < recordOverheadBytes {
		return Record{}, fmt.Errorf("%w: envelope of %d bytes is shorter than its %d-byte header", ErrCorrupt, len(b), recordOverheadBytes)
	}
	if b[0] != recordVersion {
		return Record{}, fmt.Errorf("%w: envelope version %d, want %d", ErrCorrupt, b[0], recordVersion)
	}
	flags := b[1]
	if flags&^recordFlagHasKey != 0 {
		return Record{}, fmt.Errorf("%w: unknown envelope flags %#x", ErrCorrupt, flags)
	}
	keyLength := uint64(binary.BigEndian.Uint32(b[10:14]))
	if err := checkKeyLength(flags, keyLength, len(b)-recordOverheadBytes); err != nil {
		return Record{}, err
	}
	record := Record{TimeMs: int64(binary.BigEndian.Uint64(b[2:10]))}
	keyEnd := recordOverheadBytes + int(keyLength)
	if keyLength > 0 {
		record.Key = b[recordOverheadBytes:keyEnd]
	}
	record.Payload = b[keyEnd:]
	return record, nil
}

// checkKeyLength verifies the declared key length against the has-key flag
// and the bytes that follow the envelope header.
func checkKeyLength(flags byte, keyLength uint64, remaining int) error {
	hasKey := flags&recordFlagHasKey != 0
	if hasKey != (keyLength > 0) {
		return fmt.Errorf("%w: has-key flag %t with key length %d", ErrCorrupt, hasKey, keyLength)
	}
	if keyLength > uint64(remaining) {
		return fmt.Errorf("%w: key length %d exceeds the %d bytes left", ErrCorrupt, keyLength, remaining)
	}
	return nil
}

// recordBytes is the size the limit RecordBytesMax applies to.
func recordBytes(r Record) int { return len(r.Key) + len(r.Payload) }
