package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record envelope, the bytes a frame carries:
//
//	version   1 byte   recordVersion
//	flags     1 byte   bit 0: the record has a key; bit 1: it carries a
//	                   dead-letter origin; other bits zero
//	timeMs    8 bytes  big-endian two's complement, commit time in ms
//	keyLength 4 bytes  big-endian; zero unless the has-key flag is set
//	key       keyLength bytes
//	origin    only with the origin flag: topic length 1 byte (1 to 255),
//	          topic, partition 4 bytes, offset 8 bytes, delivery count
//	          4 bytes, all big-endian
//	payload   the rest of the envelope
//
// Envelopes written before the origin flag existed decode unchanged.
const (
	recordVersion         = 1
	recordFlagHasKey      = 0x01
	recordFlagOrigin      = 0x02
	recordOverheadBytes   = 1 + 1 + 8 + 4
	originFixedBytes      = 1 + 4 + 8 + 4
	originTopicBytesMax   = 255
	originBytesMax        = originFixedBytes + originTopicBytesMax
	recordFlagsKnown      = recordFlagHasKey | recordFlagOrigin
	envelopeOverheadBytes = recordOverheadBytes + originBytesMax
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
	// Origin, set on a dead letter, names the record it was copied from;
	// nil otherwise.
	Origin *Origin
}

// Origin is where a dead letter came from: the source record's topic,
// partition and offset, and the deliveries it had there. Topic is 1 to
// originTopicBytesMax bytes and Partition fits 32 bits (Log.Append checks
// both).
type Origin struct {
	Topic         string
	Partition     int
	Offset        uint64
	DeliveryCount uint32
}

// EncodeRecord appends the envelope of r to dst and returns the result.
// Size limits are the caller's (Log.Append checks RecordBytesMax).
func EncodeRecord(dst []byte, r Record) []byte {
	assert(uint64(len(r.Key)) <= math.MaxUint32, "key of %d bytes does not fit the envelope", len(r.Key))
	flags := byte(0)
	if len(r.Key) > 0 {
		flags = recordFlagHasKey
	}
	if r.Origin != nil {
		flags |= recordFlagOrigin
	}
	dst = append(dst, recordVersion, flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.TimeMs))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Key)))
	dst = append(dst, r.Key...)
	if r.Origin != nil {
		dst = encodeOrigin(dst, *r.Origin)
	}
	return append(dst, r.Payload...)
}

// encodeOrigin appends a dead letter's origin block.
func encodeOrigin(dst []byte, o Origin) []byte {
	assert(checkOrigin(o) == nil, "origin %+v does not fit the envelope", o)
	dst = append(dst, byte(len(o.Topic)))
	dst = append(dst, o.Topic...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(o.Partition))
	dst = binary.BigEndian.AppendUint64(dst, o.Offset)
	return binary.BigEndian.AppendUint32(dst, o.DeliveryCount)
}

// checkOrigin checks that an origin fits its envelope block.
func checkOrigin(o Origin) error {
	if len(o.Topic) == 0 || len(o.Topic) > originTopicBytesMax || o.Partition < 0 || uint64(o.Partition) > math.MaxUint32 {
		return fmt.Errorf("%w: origin topic of %d bytes (1 to %d), partition %d", ErrRecordTooLarge, len(o.Topic), originTopicBytesMax, o.Partition)
	}
	return nil
}

// decodeOrigin reads an origin block at the start of b and returns it
// with the bytes it took.
func decodeOrigin(b []byte) (Origin, int, error) {
	if len(b) < 1 || b[0] == 0 || len(b) < originFixedBytes+int(b[0]) {
		return Origin{}, 0, fmt.Errorf("%w: origin block truncated or with an empty topic", ErrCorrupt)
	}
	topicEnd := 1 + int(b[0])
	fixed := b[topicEnd:]
	return Origin{Topic: string(b[1:topicEnd]), Partition: int(binary.BigEndian.Uint32(fixed[0:4])),
		Offset: binary.BigEndian.Uint64(fixed[4:12]), DeliveryCount: binary.BigEndian.Uint32(fixed[12:16])}, topicEnd + 16, nil
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
	if flags&^recordFlagsKnown != 0 {
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
	if flags&recordFlagOrigin != 0 {
		origin, used, err := decodeOrigin(b[keyEnd:])
		if err != nil {
			return Record{}, err
		}
		record.Origin = &origin
		keyEnd += used
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

// recordBytes is the size the limit RecordBytesMax applies to: a dead
// letter's origin block rides in the frame overhead (envelopeOverheadBytes)
// instead, so a record of the largest size can still become a dead letter.
func recordBytes(r Record) int { return len(r.Key) + len(r.Payload) }

// envelopeBytes is the size of r's envelope.
func envelopeBytes(r Record) int {
	size := recordOverheadBytes + recordBytes(r)
	if r.Origin != nil {
		size += originFixedBytes + len(r.Origin.Topic)
	}
	return size
}
