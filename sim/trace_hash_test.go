package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTraceHashTellsInputsApart: inputs that differ in a byte, in where
// a line ends, or in the end byte leave different sums, around the
// eight-byte word boundary; the same input leaves the same sum.
func TestTraceHashTellsInputsApart(t *testing.T) {
	type chunk struct {
		b   string
		end byte
	}
	inputs := [][]chunk{
		{}, {{"", '\n'}}, {{"", 0}},
		{{"a", '\n'}}, {{"b", '\n'}}, {{"ab", '\n'}}, {{"a", '\n'}, {"b", '\n'}}, {{"a", 0}, {"b", '\n'}},
		{{"1234567", '\n'}}, {{"12345678", '\n'}}, {{"123456789", '\n'}}, {{"12345678", '\n'}, {"9", '\n'}},
		{{"1234567\x00", '\n'}}, {{"1234567", 0}}, {{"12345679", '\n'}},
	}
	sums := map[uint64]int{}
	for i, input := range inputs {
		h, again := newTraceHash(), newTraceHash()
		for _, c := range input {
			h.add([]byte(c.b), c.end)
			again.add([]byte(c.b), c.end)
		}
		require.Equal(t, h.sum, again.sum, "input %d", i)
		if earlier, seen := sums[h.sum]; seen {
			t.Fatalf("inputs %d %q and %d %q have the same sum %x", earlier, inputs[earlier], i, input, h.sum)
		}
		sums[h.sum] = i
	}
}
