package sim

import (
	"fmt"
	"math/rand/v2"
)

// WeatherMode says whether a moves world's safety phase has weather:
// fault spells, in which faults are drawn as always, and lulls between
// them, in which no new fault is drawn.
type WeatherMode int

const (
	// WeatherOff: faults all through the safety phase (the zero value, so
	// a test or a regression seed runs as before the weather existed).
	WeatherOff WeatherMode = iota
	// WeatherAuto gives weather to a seeded half of the moves worlds.
	WeatherAuto
	// WeatherOn gives weather to every moves world.
	WeatherOn
)

// WeatherModeByName parses the -weather flag.
func WeatherModeByName(name string) (WeatherMode, error) {
	switch name {
	case "auto":
		return WeatherAuto, nil
	case "on":
		return WeatherOn, nil
	case "off":
		return WeatherOff, nil
	}
	return WeatherOff, fmt.Errorf("unknown -weather %q: want auto, on or off", name)
}

func (m WeatherMode) String() string {
	switch m {
	case WeatherOn:
		return "on"
	case WeatherAuto:
		return "auto"
	}
	return "off"
}

// The weather's draws, in percent and simulated milliseconds.
const (
	// weatherOnPercent of the moves worlds in WeatherAuto get weather.
	weatherOnPercent = 50
	// A fault spell lasts faultSpellMsMin plus up to faultSpellMsSpread,
	// a lull lullMsMin plus up to lullMsSpread. A lull outlasts most
	// faults a spell left behind (a node killed by a move fault stays
	// down up to about 9 s, a cut aimed at a move about 8 s), so its end
	// is quiet: moves that
	// every fault kept from finishing reach their flips there, with the
	// stale and withheld proposals and the fault sites still on, and the
	// next spell lands on whatever moves are in flight then. Measured on
	// 20 three-node moves seeds from 3000000: 95 flips applied during
	// the safety phase with weather, 10 without.
	faultSpellMsMin    = 2_000
	faultSpellMsSpread = 6_000
	lullMsMin          = 6_000
	lullMsSpread       = 8_000
	// lullThinkFactor multiplies a workload producer's pause in a lull
	// (client.thinkMsMax): faults hold producers up most of a fault
	// spell, and a lull at full speed would make a run's records, and so
	// the reads that end it, several times as many.
	lullThinkFactor = 10
)

// weather holds a run's lulls, drawn at the start of the safety phase.
// Nothing changes it afterwards.
type weather struct {
	// lulls are the quiet spans, in absolute simulated ms, sorted and
	// apart; between and around them are the fault spells.
	lulls []span
}

// span is [startMs, endMs).
type span struct{ startMs, endMs int64 }

// drawWeather decides, from the seed's weather stream, whether a run of
// opts gets weather and, if so, its lulls over the safety phase starting
// at startMs. Both draws come first whatever the mode, so that
// -weather=on and -weather=off reproduce a run of -weather=auto exactly.
func drawWeather(opts Options, startMs int64) *weather {
	rng := newRand(opts.Seed, weatherStream)
	drawnOn := rng.IntN(100) < weatherOnPercent
	on := opts.Weather == WeatherOn || opts.Weather == WeatherAuto && drawnOn
	if !on || opts.Nodes < 2 || !opts.Moves {
		return nil
	}
	return &weather{lulls: drawLulls(rng, startMs, startMs+opts.SafetyMs)}
}

// drawLulls alternates fault spells and lulls from startMs to endMs, a
// spell first half of the time.
func drawLulls(rng *rand.Rand, startMs, endMs int64) []span {
	var lulls []span
	at, spell := startMs, rng.IntN(2) == 0
	for at < endMs {
		if spell {
			at += int64(faultSpellMsMin + rng.IntN(faultSpellMsSpread))
		} else {
			end := min(at+int64(lullMsMin+rng.IntN(lullMsSpread)), endMs)
			lulls = append(lulls, span{startMs: at, endMs: end})
			at = end
		}
		spell = !spell
	}
	return lulls
}

// calm reports whether nowMs falls in a lull.
func (wt *weather) calm(nowMs int64) bool {
	if wt == nil {
		return false
	}
	for _, l := range wt.lulls {
		if nowMs < l.startMs {
			return false
		}
		if nowMs < l.endMs {
			return true
		}
	}
	return false
}

// schedule traces the start of each lull, so that a run's trace shows its
// weather, and counts the lulls among the run's faults.
func (wt *weather) schedule(w *World) {
	if wt == nil {
		return
	}
	for _, l := range wt.lulls {
		w.at(l.startMs-w.nowMs, func() {
			if w.phase == phaseSafety {
				w.countFault("lull")
				w.tracef("weather: lull until %d ms", l.endMs)
			}
		})
	}
}

// drawsFaults reports whether a fault may be drawn now: the safety
// phase, out of any lull. Every fault draw of the safety phase asks it,
// and so does a write storm's start (a lull at full speed would make a
// storm's records several times as many, and every run's end reads them
// all); what is not a fault (the workload, slowed down, the scale-up and
// decommission, stale and withheld proposals, the core's fault sites)
// goes on in a lull.
func (w *World) drawsFaults() bool {
	return w.phase == phaseSafety && !w.weather.calm(w.nowMs)
}
