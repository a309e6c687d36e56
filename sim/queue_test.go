package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEventQueuePopsByTimeThenInsertion pushes events at random times,
// with many ties, popping some on the way, and checks that every pop is
// the earliest event left, the first pushed among equal times.
func TestEventQueuePopsByTimeThenInsertion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q eventQueue
	type pushed struct {
		atMs int64
		seq  int
	}
	var pending []pushed // in push order
	popAndCheck := func() {
		e := q.pop()
		best := 0
		for i, p := range pending {
			if p.atMs < pending[best].atMs {
				best = i
			}
		}
		// best is the first pushed of the earliest: < keeps the first of a tie
		require.Equal(t, pending[best].atMs, e.atMs)
		require.Equal(t, uint64(pending[best].seq), e.seq)
		pending = append(pending[:best], pending[best+1:]...)
	}
	for i := range 2_000 {
		atMs := int64(rng.IntN(50))
		q.push(atMs, func() {})
		pending = append(pending, pushed{atMs: atMs, seq: i + 1})
		if rng.IntN(3) == 0 {
			popAndCheck()
		}
	}
	for q.len() > 0 {
		popAndCheck()
	}
	require.Empty(t, pending)
}
