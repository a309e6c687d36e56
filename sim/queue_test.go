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

// TestEventQueueKeepsOrderWhenDeep runs many pushes and pops, as the
// world does (never before the last pop, queues of thousands), and checks
// that the pops come out sorted by time, then insertion: a sift that
// compared an item with another parent's children broke the order only
// in a deep queue, and only now and then (the sim's seeds caught it).
func TestEventQueueKeepsOrderWhenDeep(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q eventQueue
	lastMs, lastSeq := int64(-1), uint64(0)
	popAndCheck := func() {
		e := q.pop()
		require.True(t, e.atMs > lastMs || (e.atMs == lastMs && e.seq > lastSeq),
			"popped (%d, #%d) after (%d, #%d)", e.atMs, e.seq, lastMs, lastSeq)
		lastMs, lastSeq = e.atMs, e.seq
	}
	for round := range 200_000 {
		for range rng.IntN(3) {
			q.push(lastMs+int64(rng.IntN(1+round%3_000)), func() {}) // never before the last pop, as the world's events
		}
		if q.len() > 0 && rng.IntN(5) < 3 {
			popAndCheck()
		}
	}
	for q.len() > 0 {
		popAndCheck()
	}
}

// BenchmarkEventQueue pushes and pops as the world does, with a queue of
// about a thousand events.
func BenchmarkEventQueue(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	var q eventQueue
	nowMs := int64(0)
	for range 1_000 {
		q.push(int64(rng.IntN(1_000)), func() {})
	}
	for b.Loop() {
		nowMs = q.pop().atMs
		q.push(nowMs+int64(rng.IntN(1_000)), func() {})
	}
}
