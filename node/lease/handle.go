package lease

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PartitionMax is the largest partition number a receipt handle may carry.
const PartitionMax = 1 << 20

// handleBytesMax is the longest well-formed handle: the largest partition
// and two 20-digit uint64 values, separated by colons.
const handleBytesMax = len("1048576:18446744073709551615:18446744073709551615")

// ErrMalformedHandle: the text is not "partition:offset:nonce" in canonical
// decimal with partition <= PartitionMax and nonce > 0.
var ErrMalformedHandle = errors.New("receipt handle is malformed")

// FormatHandle formats a receipt handle "partition:offset:nonce".
// partition must be in [0, PartitionMax] and nonce > 0.
func FormatHandle(partition int, offset, nonce uint64) string {
	if partition < 0 || partition > PartitionMax || nonce == 0 {
		brokenInvariant("handle partition %d must lie in [0, %d] and nonce %d be > 0", partition, PartitionMax, nonce)
	}
	buffer := make([]byte, 0, handleBytesMax)
	buffer = strconv.AppendInt(buffer, int64(partition), 10)
	buffer = append(buffer, ':')
	buffer = strconv.AppendUint(buffer, offset, 10)
	buffer = append(buffer, ':')
	buffer = strconv.AppendUint(buffer, nonce, 10)
	return string(buffer)
}

// ParseHandle parses a receipt handle made by FormatHandle. Exactly three
// colon-separated fields of decimal digits without leading zeros (so each
// handle has one spelling), each within its bound: partition <=
// PartitionMax, offset and nonce within uint64, nonce > 0. Anything else is
// ErrMalformedHandle.
func ParseHandle(s string) (partition int, offset, nonce uint64, err error) {
	if len(s) > handleBytesMax {
		return 0, 0, 0, fmt.Errorf("%w: longer than %d bytes", ErrMalformedHandle, handleBytesMax)
	}
	partitionText, rest, hasOffset := strings.Cut(s, ":")
	offsetText, nonceText, hasNonce := strings.Cut(rest, ":")
	if !hasOffset || !hasNonce {
		return 0, 0, 0, fmt.Errorf("%w: want partition:offset:nonce", ErrMalformedHandle)
	}
	partitionValue, err := parseDecimal(partitionText, PartitionMax)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: partition: %v", ErrMalformedHandle, err)
	}
	if offset, err = parseDecimal(offsetText, ^uint64(0)); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: offset: %v", ErrMalformedHandle, err)
	}
	if nonce, err = parseDecimal(nonceText, ^uint64(0)); err != nil || nonce == 0 {
		return 0, 0, 0, fmt.Errorf("%w: nonce must be a number > 0", ErrMalformedHandle)
	}
	return int(partitionValue), offset, nonce, nil
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
