package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStreamNumbersAreDistinct: no two parts of a run draw from the same
// random stream (two parts sharing one would draw the same numbers, and a
// change to one would move the other), and no single stream falls in the
// span of a per-node base.
func TestStreamNumbersAreDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for _, stream := range singleStreams {
		require.False(t, seen[stream], "stream %d is used twice", stream)
		seen[stream] = true
		for _, base := range perNodeStreamBases {
			require.False(t, stream >= base && stream < base+perNodeStreamSpan,
				"stream %d falls in the per-node streams from %d", stream, base)
		}
	}
	for i, base := range perNodeStreamBases {
		for _, other := range perNodeStreamBases[i+1:] {
			require.False(t, base < other+perNodeStreamSpan && other < base+perNodeStreamSpan,
				"the per-node streams from %d and %d overlap", base, other)
		}
	}
}
