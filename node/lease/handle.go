package lease

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"narad/invariant"
)

// PartitionMax is the largest partition number a receipt handle may carry.
const PartitionMax = 1 << 20

// HandleKeyBytes is the size of the key that makes receipt handles
// unguessable (FormatHandle). The node's driver draws it.
const HandleKeyBytes = 32

// handleTagBytes is the size of a handle's tag: 64 bits, written as 16
// lowercase hexadecimal digits.
const handleTagBytes = 8

// handleBytesMax is the longest well-formed handle: the largest partition,
// two 20-digit uint64 values and the tag, separated by colons.
const handleBytesMax = len("1048576:18446744073709551615:18446744073709551615:") + 2*handleTagBytes

// handleTagLabel separates the handle tags from any other use of the key.
const handleTagLabel = "narad-receipt-handle-v1"

// ErrMalformedHandle: the text is not "partition:offset:nonce:tag" in
// canonical decimal with partition <= PartitionMax and nonce > 0, and a tag
// of 16 lowercase hexadecimal digits.
var ErrMalformedHandle = errors.New("receipt handle is malformed")

// FormatHandle formats a receipt handle "partition:offset:nonce:tag". The
// first two fields are for a person reading logs; the tag (the first
// handleTagBytes of HMAC-SHA256 under key over the topic, partition,
// offset and nonce) binds the handle to its topic and reservation and
// cannot be guessed without the key. partition must be in [0,
// PartitionMax], nonce > 0 and key HandleKeyBytes long. A caller that
// formats many handles under one key keeps a Handles instead.
func FormatHandle(key []byte, topic string, partition int, offset, nonce uint64) string {
	return NewHandles(key).Format(topic, partition, offset, nonce)
}

// Handles formats and verifies the receipt handles of one key. It keeps
// one HMAC state, reset for each tag, and its scratch space: making the
// HMAC afresh for every handle hashed the key's two pads again and cost
// about ten allocations per handle, a few percent of the server's CPU
// per consume+ack. Not safe for concurrent use (the node's loop owns its
// Handles).
type Handles struct {
	// mac is HMAC-SHA256 under the key; Reset before each tag. nil when
	// the key is not HandleKeyBytes long: no tag then verifies.
	mac hash.Hash
	// message is the scratch buffer a tag's input is assembled in, and
	// sum the one its HMAC lands in; neither is read between calls.
	message []byte
	sum     [sha256.Size]byte
}

// NewHandles returns the Handles of key.
func NewHandles(key []byte) *Handles {
	if len(key) != HandleKeyBytes {
		return &Handles{}
	}
	return &Handles{mac: hmac.New(sha256.New, key)}
}

// Format is FormatHandle under the key of h, which must be HandleKeyBytes
// long.
func (h *Handles) Format(topic string, partition int, offset, nonce uint64) string {
	if partition < 0 || partition > PartitionMax || nonce == 0 || h.mac == nil {
		invariant.Broken("lease: handle partition %d must lie in [0, %d], nonce %d be > 0 and the key %d bytes",
			partition, PartitionMax, nonce, HandleKeyBytes)
	}
	var text [handleBytesMax]byte
	buffer := strconv.AppendInt(text[:0], int64(partition), 10)
	buffer = append(buffer, ':')
	buffer = strconv.AppendUint(buffer, offset, 10)
	buffer = append(buffer, ':')
	buffer = strconv.AppendUint(buffer, nonce, 10)
	buffer = append(buffer, ':')
	buffer = hex.AppendEncode(buffer, h.tag(topic, partition, offset, nonce))
	return string(buffer)
}

// tag is the tag of a handle: the first handleTagBytes of the HMAC of
// the label, the topic's length, partition, offset and nonce (8 bytes
// each, big-endian) and the topic. It points into h's scratch space,
// valid until h's next call.
func (h *Handles) tag(topic string, partition int, offset, nonce uint64) []byte {
	message := append(h.message[:0], handleTagLabel...)
	message = binary.BigEndian.AppendUint64(message, uint64(len(topic)))
	message = binary.BigEndian.AppendUint64(message, uint64(partition))
	message = binary.BigEndian.AppendUint64(message, offset)
	message = binary.BigEndian.AppendUint64(message, nonce)
	message = append(message, topic...)
	h.message = message
	h.mac.Reset()
	h.mac.Write(message)
	return h.mac.Sum(h.sum[:0])[:handleTagBytes]
}

// FormatHandlePrefix is the "partition:offset:" every handle of that
// record begins with (for a person reading logs).
func FormatHandlePrefix(partition int, offset uint64) string {
	return strconv.Itoa(partition) + ":" + strconv.FormatUint(offset, 10) + ":"
}

// ParseHandle parses the syntax of a receipt handle made by FormatHandle,
// without checking its tag (VerifyHandle does). Exactly four colon-separated
// fields: three of decimal digits without leading zeros (so each handle has
// one spelling), each within its bound (partition <= PartitionMax, offset
// and nonce within uint64, nonce > 0), and the tag. Anything else is
// ErrMalformedHandle.
func ParseHandle(s string) (partition int, offset, nonce uint64, err error) {
	partition, offset, nonce, _, err = parseHandle(s)
	return partition, offset, nonce, err
}

// VerifyHandle parses s and checks its tag under key for topic. A handle
// whose tag does not verify (forged, of another topic, or minted under
// another key: before a restart, or by the partition's previous owner)
// comes back with nonce 0, which matches no reservation: it can ack
// nothing, and a record it names is answered as for a stale handle.
func VerifyHandle(key []byte, topic, s string) (partition int, offset, nonce uint64, err error) {
	return NewHandles(key).Verify(topic, s)
}

// Verify is VerifyHandle under the key of h.
func (h *Handles) Verify(topic, s string) (partition int, offset, nonce uint64, err error) {
	partition, offset, nonce, tag, err := parseHandle(s)
	if err != nil {
		return 0, 0, 0, err
	}
	if h.mac == nil || !hmac.Equal(tag[:], h.tag(topic, partition, offset, nonce)) {
		return partition, offset, 0, nil
	}
	return partition, offset, nonce, nil
}

func parseHandle(s string) (partition int, offset, nonce uint64, tag [handleTagBytes]byte, err error) {
	if len(s) > handleBytesMax {
		return 0, 0, 0, tag, fmt.Errorf("%w: longer than %d bytes", ErrMalformedHandle, handleBytesMax)
	}
	partitionText, rest, hasOffset := strings.Cut(s, ":")
	offsetText, rest, hasNonce := strings.Cut(rest, ":")
	nonceText, tagText, hasTag := strings.Cut(rest, ":")
	if !hasOffset || !hasNonce || !hasTag {
		return 0, 0, 0, tag, fmt.Errorf("%w: want partition:offset:nonce:tag", ErrMalformedHandle)
	}
	partitionValue, err := parseDecimal(partitionText, PartitionMax)
	if err != nil {
		return 0, 0, 0, tag, fmt.Errorf("%w: partition: %v", ErrMalformedHandle, err)
	}
	if offset, err = parseDecimal(offsetText, ^uint64(0)); err != nil {
		return 0, 0, 0, tag, fmt.Errorf("%w: offset: %v", ErrMalformedHandle, err)
	}
	if nonce, err = parseDecimal(nonceText, ^uint64(0)); err != nil || nonce == 0 {
		return 0, 0, 0, tag, fmt.Errorf("%w: nonce must be a number > 0", ErrMalformedHandle)
	}
	if tag, err = parseTag(tagText); err != nil {
		return 0, 0, 0, tag, fmt.Errorf("%w: tag: %v", ErrMalformedHandle, err)
	}
	return int(partitionValue), offset, nonce, tag, nil
}

// errBadTag reports a tag that is not 16 lowercase hexadecimal digits.
var errBadTag = fmt.Errorf("want %d lowercase hexadecimal digits", 2*handleTagBytes)

// parseTag decodes exactly 2*handleTagBytes lowercase hexadecimal digits
// (one spelling per tag).
func parseTag(text string) (tag [handleTagBytes]byte, err error) {
	if len(text) != 2*handleTagBytes {
		return tag, errBadTag
	}
	for i := 0; i < len(text); i++ {
		if !(text[i] >= '0' && text[i] <= '9' || text[i] >= 'a' && text[i] <= 'f') {
			return tag, errBadTag
		}
	}
	_, err = hex.Decode(tag[:], []byte(text))
	return tag, err
}

// errNotCanonical reports a field that is not canonical decimal.
var errNotCanonical = errors.New("want decimal digits without leading zeros")

// parseDecimal parses canonical decimal digits (no sign, no leading zero
// unless the value is 0) with a value at most limit. A third colon lands
// here as a non-digit.
func parseDecimal(text string, limit uint64) (uint64, error) {
	if text == "" || (len(text) > 1 && text[0] == '0') {
		return 0, errNotCanonical
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, errNotCanonical
		}
	}
	value, err := strconv.ParseUint(text, 10, 64)
	if err != nil || value > limit {
		return 0, fmt.Errorf("above %d", limit)
	}
	return value, nil
}
