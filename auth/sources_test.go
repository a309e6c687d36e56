package auth

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestSourceOfKeysIPv4ByAddressAndIPv6ByPrefix(t *testing.T) {
	require.Equal(t, "192.0.2.1", SourceOf("192.0.2.1:1234").String())
	require.Equal(t, SourceOf("192.0.2.1:1234"), SourceOf("192.0.2.1:5678"), "the port is not part of the source")
	require.NotEqual(t, SourceOf("192.0.2.1:1234"), SourceOf("192.0.2.2:1234"))
	require.Equal(t, SourceOf("192.0.2.1:1234"), SourceOf("[::ffff:192.0.2.1]:1234"), "an IPv4-mapped address is the IPv4 one")

	require.Equal(t, "2001:db8:1:2::/64", SourceOf("[2001:db8:1:2::1]:443").String())
	require.Equal(t, SourceOf("[2001:db8:1:2::1]:443"), SourceOf("[2001:db8:1:2:ffff:ffff:ffff:ffff]:443"),
		"the addresses of one /64 are one source")
	require.NotEqual(t, SourceOf("[2001:db8:1:2::1]:443"), SourceOf("[2001:db8:1:3::1]:443"), "another /64 is another source")
	require.Equal(t, SourceOf("[fe80::1%eth0]:443"), SourceOf("[fe80::1%eth1]:443"), "the zone is not part of the source")

	unknown := SourceOf("@/run/narad.sock")
	require.Equal(t, "unknown", unknown.String())
	require.Equal(t, unknown, SourceOf(""), "every unreadable address shares one source")
	require.Equal(t, unknown, SourceOfAddr(netip.Addr{}))
	require.NotEqual(t, unknown, SourceOf("0.0.0.0:1"))
}

// sourceAt is a source of the tests, numbered.
func sourceAt(i int) Source { return SourceOf(fmt.Sprintf("198.51.100.%d:1", i)) }

func TestSourceBucketTakesRefillsAndTakesRefunds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	buckets := newSourceBuckets(3, 10*time.Second, 8)
	a := sourceAt(1)
	for i := range 3 {
		require.True(t, buckets.take(a, now), "token %d of the burst", i)
	}
	require.False(t, buckets.take(a, now), "an empty bucket refuses")
	require.True(t, buckets.take(sourceAt(2), now), "another source has its own bucket")
	now = now.Add(9 * time.Second)
	require.False(t, buckets.take(a, now), "not quite a token back yet")
	now = now.Add(time.Second)
	require.True(t, buckets.take(a, now), "one token back after one refill period")
	require.False(t, buckets.take(a, now))
	buckets.refund(a, now)
	require.InDelta(t, 1, buckets.tokens(a, now), 1e-9, "a refund gives one token back")
	now = now.Add(20 * time.Second)
	buckets.refund(a, now)
	require.InDelta(t, 3, buckets.tokens(a, now), 1e-9, "never past the burst")
	require.Zero(t, buckets.len(), "full buckets are dropped: the same as absent")
	buckets.refund(sourceAt(3), now)
	require.Zero(t, buckets.len(), "a refund to an absent source adds nothing")
}

// A new source past the bound takes the place of the fullest bucket (the
// one that failed least lately), after the buckets full again are
// dropped; the sources that failed most stay throttled.
func TestSourceBucketsStayBoundedDroppingTheFullest(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	buckets := newSourceBuckets(2, 10*time.Second, 3)
	attacker, once, twice := sourceAt(1), sourceAt(2), sourceAt(3)
	require.True(t, buckets.take(attacker, now))
	require.True(t, buckets.take(attacker, now))
	require.True(t, buckets.take(once, now))
	now = now.Add(time.Second)
	require.True(t, buckets.take(twice, now))

	for i := range 50 {
		require.True(t, buckets.take(sourceAt(100+i), now), "a new source is never refused for want of room")
		require.LessOrEqual(t, buckets.len(), 3)
	}
	require.False(t, buckets.take(attacker, now), "the emptiest bucket outlived a flood of new sources")
	require.Equal(t, 3, buckets.len())

	now = now.Add(30 * time.Second)
	require.True(t, buckets.take(sourceAt(9), now))
	require.Equal(t, 1, buckets.len(), "the buckets full again were dropped first")
}

// sourceModel is the naive model of sourceBuckets: each source's credit
// in milliseconds (a token is refill of them), refilled one by one,
// with every full bucket dropped.
type sourceModel struct {
	burst, refillMs, sourcesMax int64
	credit                      map[Source]int64
}

func (m *sourceModel) advance(elapsedMs int64) {
	for source, credit := range m.credit {
		m.credit[source] = min(credit+elapsedMs, m.burst*m.refillMs)
		if m.credit[source] == m.burst*m.refillMs {
			delete(m.credit, source)
		}
	}
}

// fullest lists the sources with the most credit.
func (m *sourceModel) fullest() []Source {
	var best []Source
	bestCredit := int64(-1)
	for source, credit := range m.credit {
		switch {
		case credit > bestCredit:
			best, bestCredit = []Source{source}, credit
		case credit == bestCredit:
			best = append(best, source)
		}
	}
	return best
}

func TestSourceBucketsMatchTheModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		burst, sourcesMax := rapid.IntRange(1, 4).Draw(t, "burst"), rapid.IntRange(1, 4).Draw(t, "sourcesMax")
		const refillMs = 1000
		now := time.Unix(1_700_000_000, 0)
		real := newSourceBuckets(burst, refillMs*time.Millisecond, sourcesMax)
		model := &sourceModel{burst: int64(burst), refillMs: refillMs, sourcesMax: int64(sourcesMax), credit: map[Source]int64{}}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			elapsedMs := rapid.SampledFrom([]int64{0, 0, 1, 250, 999, 1000, 2500}).Draw(t, "elapsedMs")
			now = now.Add(time.Duration(elapsedMs) * time.Millisecond)
			model.advance(elapsedMs)
			source := sourceAt(rapid.IntRange(1, 6).Draw(t, "source"))
			if rapid.Bool().Draw(t, "refund") {
				real.refund(source, now)
				if credit, present := model.credit[source]; present {
					model.credit[source] = credit + refillMs
					model.advance(0)
				}
			} else {
				candidates := model.fullest()
				_, present := model.credit[source]
				taken := real.take(source, now)
				if !present && int64(len(model.credit)) >= model.sourcesMax {
					dropped := modelDropped(t, real, model, now)
					require.Contains(t, candidates, dropped, "a full table drops one of its fullest buckets")
					delete(model.credit, dropped)
				}
				credit, present := model.credit[source]
				if !present {
					credit = model.burst * refillMs
				}
				require.Equal(t, credit >= refillMs, taken, "a take succeeds exactly when a token is there")
				require.Equal(t, credit >= 2*refillMs, real.allows(source, now), "allows says whether another token is there")
				if taken {
					model.credit[source] = credit - refillMs
				}
			}
			requireSameBuckets(t, real, model, now)
		}
	})
}

// modelDropped is the source of the model that the real table no longer
// holds after a take had to make room.
func modelDropped(t *rapid.T, real *sourceBuckets, model *sourceModel, now time.Time) Source {
	for source := range model.credit {
		if b, present := real.bySource[source]; !present || !b.fullAt.After(now) {
			return source
		}
	}
	t.Fatalf("no bucket was dropped")
	return Source{}
}

// requireSameBuckets checks that the real table holds the model's buckets
// that are not full, each with the model's credit, and at most
// sourcesMax entries.
func requireSameBuckets(t *rapid.T, real *sourceBuckets, model *sourceModel, now time.Time) {
	require.LessOrEqual(t, real.len(), int(model.sourcesMax), "the table never grows past its bound")
	require.Equal(t, real.len(), len(real.byFullAt))
	held := 0
	for source, b := range real.bySource {
		require.Equal(t, source, b.source)
		require.Same(t, b, real.byFullAt[b.index], "a bucket's index is its place in the heap")
		if !b.fullAt.After(now) {
			continue // full, dropped at the next take
		}
		held++
		credit := model.burst*model.refillMs - b.fullAt.Sub(now).Milliseconds()
		require.Equal(t, model.credit[source], credit, "the credit of %v", source)
	}
	require.Equal(t, len(model.credit), held, "the same sources hold a bucket that is not full")
}
