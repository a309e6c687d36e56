package loglimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Per kind, perSecond lines a second pass; the next one after the window
// says how many were suppressed; another kind has its own allowance.
func TestEachKindHasItsOwnAllowancePerSecond(t *testing.T) {
	now := time.Unix(1_000, 0)
	limiter := NewWithClock(3, func() time.Time { return now })
	passed := 0
	for range 10 {
		if ok, _ := limiter.Allow("handshake-failed"); ok {
			passed++
		}
	}
	require.Equal(t, 3, passed)
	ok, suppressed := limiter.Allow("other")
	require.True(t, ok, "another kind is not held back by the first")
	require.Zero(t, suppressed)
	now = now.Add(999 * time.Millisecond)
	ok, _ = limiter.Allow("handshake-failed")
	require.False(t, ok, "still the same window")
	now = now.Add(time.Millisecond)
	ok, suppressed = limiter.Allow("handshake-failed")
	require.True(t, ok)
	require.Equal(t, uint64(8), suppressed, "the next line says how many were left out")
	ok, suppressed = limiter.Allow("handshake-failed")
	require.True(t, ok)
	require.Zero(t, suppressed, "said once")
}

// The limiter remembers at most KindsMax kinds; a kind past them is
// logged unlimited rather than lost, and a remembered kind stays limited.
func TestTheKindsRememberedAreBounded(t *testing.T) {
	limiter := NewWithClock(1, func() time.Time { return time.Unix(1_000, 0) })
	for kind := range KindsMax {
		ok, _ := limiter.Allow(fmt.Sprint("kind-", kind))
		require.True(t, ok)
	}
	require.Len(t, limiter.kinds, KindsMax)
	for range 3 {
		ok, _ := limiter.Allow("one-more")
		require.True(t, ok, "a kind past the bound is not limited")
	}
	require.Len(t, limiter.kinds, KindsMax)
	ok, _ := limiter.Allow("kind-0")
	require.False(t, ok, "a remembered kind still is")
}

func TestAZeroAllowanceIsRefused(t *testing.T) {
	require.Panics(t, func() { New(0) })
}
