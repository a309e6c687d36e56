package host

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGCPercentForKeepsTheHeapGoalNearLivePlusHeadroom: a small live heap
// gets the headroom (within gcPercentMax), a large one the runtime's
// default, never less.
func TestGCPercentForKeepsTheHeapGoalNearLivePlusHeadroom(t *testing.T) {
	require.Equal(t, gcPercentMax, gcPercentFor(0))
	require.Equal(t, gcPercentMax, gcPercentFor(4<<20), "4 MiB live: 64 MiB headroom is 1600 %, capped")
	require.Equal(t, 400, gcPercentFor(16<<20))
	require.Equal(t, 200, gcPercentFor(32<<20))
	require.Equal(t, gcPercentMin, gcPercentFor(64<<20))
	require.Equal(t, gcPercentMin, gcPercentFor(1<<30), "a large live heap keeps the default")
}
