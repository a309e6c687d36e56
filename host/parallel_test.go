package host

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Property: runParallel runs every index once, never on more than
// workersMax goroutines at once, and returns every error.
func TestRunParallelRunsEachOnceWithinTheBound(t *testing.T) {
	const n, workersMax = 500, 8
	var running, peak atomic.Int64
	var mu sync.Mutex
	ran := map[int]int{}
	err := runParallel(n, workersMax, func(i int) error {
		now := running.Add(1)
		for {
			seen := peak.Load()
			if now <= seen || peak.CompareAndSwap(seen, now) {
				break
			}
		}
		time.Sleep(50 * time.Microsecond) // let the workers overlap
		running.Add(-1)
		mu.Lock()
		ran[i]++
		mu.Unlock()
		if i%100 == 7 {
			return errors.New("failed")
		}
		return nil
	})
	require.Len(t, ran, n)
	for i, times := range ran {
		require.Equal(t, 1, times, "index %d", i)
	}
	require.LessOrEqual(t, peak.Load(), int64(workersMax))
	require.Greater(t, peak.Load(), int64(1), "the work ran in parallel")
	require.Error(t, err)
	require.Equal(t, 5, len(err.(interface{ Unwrap() []error }).Unwrap()), "every failure is returned")
}
