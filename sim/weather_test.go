package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWeatherLullsAreApartAndBounded: over many seeds, a moves world's
// lulls lie within its safety phase, in order, each at least lullMsMin
// (but the one cut by the phase's end) and apart by at least a fault
// spell; calm agrees with them at their edges.
func TestWeatherLullsAreApartAndBounded(t *testing.T) {
	const startMs, safetyMs = 1_000, 30_000
	lullsSeen := 0
	for seed := uint64(1); seed <= 200; seed++ {
		opts := DefaultOptions(seed)
		opts.Nodes, opts.Moves, opts.SafetyMs, opts.Weather = 3, true, safetyMs, WeatherOn
		wt := drawWeather(opts, startMs)
		require.NotNil(t, wt, "seed %d: weather on in a moves world", seed)
		previousEnd := int64(startMs)
		for i, l := range wt.lulls {
			require.Less(t, l.startMs, l.endMs, "seed %d lull %d", seed, i)
			require.LessOrEqual(t, l.endMs, int64(startMs+safetyMs), "seed %d lull %d past the safety phase", seed, i)
			if l.endMs < startMs+safetyMs {
				require.GreaterOrEqual(t, l.endMs-l.startMs, int64(lullMsMin), "seed %d lull %d too short", seed, i)
			}
			if i > 0 {
				require.GreaterOrEqual(t, l.startMs-previousEnd, int64(faultSpellMsMin), "seed %d: lulls %d and %d too close", seed, i-1, i)
			}
			require.False(t, wt.calm(l.startMs-1), "seed %d: calm before lull %d", seed, i)
			require.True(t, wt.calm(l.startMs), "seed %d: not calm at the start of lull %d", seed, i)
			require.True(t, wt.calm(l.endMs-1), "seed %d: not calm at the end of lull %d", seed, i)
			require.False(t, wt.calm(l.endMs), "seed %d: calm after lull %d", seed, i)
			previousEnd = l.endMs
			lullsSeen++
		}
	}
	require.Greater(t, lullsSeen, 200, "about two lulls a run")
}

// TestWeatherOnlyInMovesWorldsAndAsAsked: no weather off, in a single
// node or without moves; auto gives it to about half the moves worlds,
// and a seed auto gives it to gets the same lulls with on.
func TestWeatherOnlyInMovesWorldsAndAsAsked(t *testing.T) {
	on := 0
	for seed := uint64(1); seed <= 200; seed++ {
		opts := DefaultOptions(seed)
		opts.Nodes, opts.Moves = 3, true
		require.Nil(t, drawWeather(opts, 0), "seed %d: weather in a run that did not ask for it", seed)
		opts.Weather = WeatherAuto
		auto := drawWeather(opts, 0)
		if auto != nil {
			on++
			opts.Weather = WeatherOn
			require.Equal(t, auto, drawWeather(opts, 0), "seed %d: -weather=on reproduces auto", seed)
		}
		single := DefaultOptions(seed)
		single.Weather = WeatherOn
		require.Nil(t, drawWeather(single, 0), "seed %d: weather on one node", seed)
	}
	require.InDelta(t, 100, on, 30, "auto gives weather to about half the runs")
}
