package lease_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/node/lease"
)

// testKey is a handle key of the right size.
var testKey = bytes.Repeat([]byte{0x42}, lease.HandleKeyBytes)

// A minted handle begins with partition:offset:, parses back to its
// fields, and verifies under its key and topic.
func TestHandleRoundTrip(t *testing.T) {
	tests := []struct {
		partition     int
		offset, nonce uint64
		prefix        string
	}{
		{0, 0, 1, "0:0:1:"},
		{3, 42, 7, "3:42:7:"},
		{lease.PartitionMax, math.MaxUint64, math.MaxUint64, "1048576:18446744073709551615:18446744073709551615:"},
	}
	for _, test := range tests {
		t.Run(test.prefix, func(t *testing.T) {
			handle := lease.FormatHandle(testKey, "orders", test.partition, test.offset, test.nonce)
			assert.True(t, strings.HasPrefix(handle, test.prefix), handle)
			assert.Len(t, handle, len(test.prefix)+16)
			assert.True(t, strings.HasPrefix(handle, lease.FormatHandlePrefix(test.partition, test.offset)))
			partition, offset, nonce, err := lease.ParseHandle(handle)
			require.NoError(t, err)
			assert.Equal(t, []uint64{uint64(test.partition), test.offset, test.nonce}, []uint64{uint64(partition), offset, nonce})
			partition, offset, nonce, err = lease.VerifyHandle(testKey, "orders", handle)
			require.NoError(t, err)
			assert.Equal(t, []uint64{uint64(test.partition), test.offset, test.nonce}, []uint64{uint64(partition), offset, nonce})
		})
	}
}

// A handle verifies to nonce 0 (which matches no reservation) under
// another topic, another key, or with any other tag: the first handle of
// a partition cannot be guessed from its number, nor used on another topic.
func TestForgedHandlesVerifyToNoReservation(t *testing.T) {
	handle := lease.FormatHandle(testKey, "rh", 0, 0, 1099511627777)
	otherKey := bytes.Repeat([]byte{0x43}, lease.HandleKeyBytes)
	forged := map[string]struct {
		key          []byte
		topic, input string
	}{
		"another topic":   {testKey, "rh2", handle},
		"another key":     {otherKey, "rh", handle},
		"a guessed tag":   {testKey, "rh", "0:0:1099511627777:0000000000000000"},
		"another nonce":   {testKey, "rh", strings.Replace(handle, ":1099511627777:", ":1099511627778:", 1)},
		"another offset":  {testKey, "rh", strings.Replace(handle, "0:0:", "0:1:", 1)},
		"a key too short": {testKey[:8], "rh", handle},
	}
	for name, c := range forged {
		partition, offset, nonce, err := lease.VerifyHandle(c.key, c.topic, c.input)
		require.NoError(t, err, name)
		assert.Zero(t, nonce, name)
		_, wantOffset, _, _ := lease.ParseHandle(c.input)
		assert.Equal(t, []uint64{0, wantOffset}, []uint64{uint64(partition), offset}, name)
	}
	_, _, nonce, err := lease.VerifyHandle(testKey, "rh", handle)
	require.NoError(t, err)
	assert.Equal(t, uint64(1099511627777), nonce)
}

func TestParseHandleRejectsMalformed(t *testing.T) {
	const tag = ":0123456789abcdef"
	inputs := []string{
		"", ":", "::", ":::", "::::", "1:2", "1:2:3", "1:2:3:", "1::3" + tag, ":2:3" + tag, "1:2:" + tag,
		"1:2:0" + tag,                                                  // nonce must be > 0
		"01:2:3" + tag, "1:02:3" + tag, "1:2:03" + tag, "00:1:1" + tag, // no leading zeros
		"-1:2:3" + tag, "+1:2:3" + tag, "1:-2:3" + tag, "1:2:+3" + tag,
		" 1:2:3" + tag, "1:2:3" + tag + " ", "1:2:3" + tag + "\n", "1 :2:3" + tag,
		"a:b:c" + tag, "1:2:x" + tag, "0x1:2:3" + tag, "１:2:3" + tag,
		"1:2:3:0123456789ABCDEF", "1:2:3:0123456789abcde", "1:2:3:0123456789abcdef0", "1:2:3:0123456789abcdeg",
		"1:2:3:4:0123456789abcdef",
		"1048577:0:1" + tag,                                        // partition above PartitionMax
		"1:18446744073709551616:1" + tag,                           // offset overflows uint64
		"1:1:18446744073709551616" + tag,                           // nonce overflows uint64
		"1048576:18446744073709551615:184467440737095516150" + tag, // one byte too long
		strings.Repeat("9", 1000),
	}
	for _, input := range inputs {
		t.Run(input, func(t *testing.T) {
			_, _, _, err := lease.ParseHandle(input)
			assert.ErrorIs(t, err, lease.ErrMalformedHandle)
			_, _, _, err = lease.VerifyHandle(testKey, "t", input)
			assert.ErrorIs(t, err, lease.ErrMalformedHandle)
		})
	}
}

func TestFormatHandleRefusesWhatParseRejects(t *testing.T) {
	assert.Panics(t, func() { lease.FormatHandle(testKey, "t", -1, 0, 1) })
	assert.Panics(t, func() { lease.FormatHandle(testKey, "t", lease.PartitionMax+1, 0, 1) })
	assert.Panics(t, func() { lease.FormatHandle(testKey, "t", 0, 0, 0) })
	assert.Panics(t, func() { lease.FormatHandle(testKey[:31], "t", 0, 0, 1) })
}

// One Handles, used for many handles in a row, mints each exactly as a
// fresh one would (its HMAC state starts over for every tag), and
// verifies them; a Handles of another key, or of a key of the wrong size,
// verifies none.
func TestHandlesReusedMintAsFresh(t *testing.T) {
	handles := lease.NewHandles(testKey)
	other := lease.NewHandles(bytes.Repeat([]byte{0x43}, lease.HandleKeyBytes))
	short := lease.NewHandles(testKey[:lease.HandleKeyBytes-1])
	topics := []string{"orders", "", strings.Repeat("t", 200)}
	for i := uint64(1); i <= 50; i++ {
		topic := topics[i%uint64(len(topics))]
		handle := handles.Format(topic, int(i%7), i*1000, i)
		require.Equal(t, lease.NewHandles(testKey).Format(topic, int(i%7), i*1000, i), handle)
		partition, offset, nonce, err := handles.Verify(topic, handle)
		require.NoError(t, err)
		require.Equal(t, []uint64{i % 7, i * 1000, i}, []uint64{uint64(partition), offset, nonce})
		for _, stranger := range []*lease.Handles{other, short} {
			_, _, nonce, err = stranger.Verify(topic, handle)
			require.NoError(t, err)
			require.Zero(t, nonce, "handle %q verified under another key", handle)
		}
	}
}
