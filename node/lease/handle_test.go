package lease_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/node/lease"
)

func TestHandleRoundTrip(t *testing.T) {
	tests := []struct {
		partition     int
		offset, nonce uint64
		text          string
	}{
		{0, 0, 1, "0:0:1"},
		{3, 42, 7, "3:42:7"},
		{lease.PartitionMax, math.MaxUint64, math.MaxUint64, "1048576:18446744073709551615:18446744073709551615"},
	}
	for _, test := range tests {
		t.Run(test.text, func(t *testing.T) {
			assert.Equal(t, test.text, lease.FormatHandle(test.partition, test.offset, test.nonce))
			partition, offset, nonce, err := lease.ParseHandle(test.text)
			require.NoError(t, err)
			assert.Equal(t, test.partition, partition)
			assert.Equal(t, test.offset, offset)
			assert.Equal(t, test.nonce, nonce)
		})
	}
}

func TestParseHandleRejectsMalformed(t *testing.T) {
	inputs := []string{
		"", ":", "::", ":::", "1:2", "1:2:3:4", "1::3", ":2:3", "1:2:",
		"1:2:0",                                // nonce must be > 0
		"01:2:3", "1:02:3", "1:2:03", "00:1:1", // no leading zeros
		"-1:2:3", "+1:2:3", "1:-2:3", "1:2:+3",
		" 1:2:3", "1:2:3 ", "1:2:3\n", "1 :2:3",
		"a:b:c", "1:2:x", "1:2:1e3", "0x1:2:3", "1_0:2:3", "１:2:3",
		"1048577:0:1",                                        // partition above PartitionMax
		"1:18446744073709551616:1",                           // offset overflows uint64
		"1:1:18446744073709551616",                           // nonce overflows uint64
		"1:1:99999999999999999999",                           // 20 digits, still too large
		"1048576:18446744073709551615:184467440737095516150", // one byte too long
		strings.Repeat("9", 1000),
	}
	for _, input := range inputs {
		t.Run(input, func(t *testing.T) {
			_, _, _, err := lease.ParseHandle(input)
			assert.ErrorIs(t, err, lease.ErrMalformedHandle)
		})
	}
}

func TestFormatHandleRefusesWhatParseRejects(t *testing.T) {
	assert.Panics(t, func() { lease.FormatHandle(-1, 0, 1) })
	assert.Panics(t, func() { lease.FormatHandle(lease.PartitionMax+1, 0, 1) })
	assert.Panics(t, func() { lease.FormatHandle(0, 0, 0) })
}

// FuzzParseHandle checks that ParseHandle never panics and that every
// handle it accepts has exactly one spelling: formatting the parsed values
// gives the input back.
func FuzzParseHandle(f *testing.F) {
	for _, seed := range []string{"0:0:1", "3:42:7", "1048576:18446744073709551615:18446744073709551615", "01:2:3", "1:2:0", "1:2:3:4", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		partition, offset, nonce, err := lease.ParseHandle(input)
		if err != nil {
			assert.ErrorIs(t, err, lease.ErrMalformedHandle)
			return
		}
		assert.Equal(t, input, lease.FormatHandle(partition, offset, nonce))
	})
}
