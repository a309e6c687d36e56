package chaos

import (
	"maps"
	"math/rand/v2"
	"sort"
)

// state is what the simulator switches on for one run. It is only ever
// changed between runs, by the simulator's single goroutine; production
// never changes it.
var state struct {
	// marks counts coverage marks reached; nil when not recording.
	marks map[string]int
	// rng draws Buggify decisions; nil when fault injection is off (never
	// switched on, or stopped by StopFaults).
	rng *rand.Rand
	// sites maps a Buggify site to whether it is enabled this run
	// (decided once per site per run, on its first call).
	sites map[Site]bool
	// fireProbability is the chance an enabled site fires per call.
	fireProbability float64
	// fired counts Buggify firings per site since Record; kept by
	// StopFaults.
	fired map[Site]int
	// kept, when not nil, holds the only sites that may still fire
	// (StopFaults with exceptions).
	kept map[Site]bool
}

// Reached records that the rare path named by mark ran.
func Reached(mark Mark) {
	if state.marks != nil {
		state.marks[string(mark)]++
	}
}

// Buggify reports whether the fault at site should be injected now. Outside
// a run with faults on it is one load and one branch.
func Buggify(site Site) bool {
	if state.rng == nil {
		return false
	}
	return fire(site)
}

// fire decides whether an enabled site fires now, enabling or disabling
// it for the whole run on its first call.
func fire(site Site) bool {
	if state.kept != nil && !state.kept[site] {
		return false
	}
	enabled, seen := state.sites[site]
	if !seen {
		enabled = state.rng.IntN(2) == 0
		state.sites[site] = enabled
	}
	if !enabled || state.rng.Float64() >= state.fireProbability {
		return false
	}
	state.fired[site]++
	return true
}

// Record switches on coverage-mark recording and, when rng is not nil,
// fault injection whose enabled sites fire with fireProbability. Call
// Reset when the run ends.
func Record(rng *rand.Rand, fireProbability float64) {
	state.marks = map[string]int{}
	state.rng = rng
	state.sites = map[Site]bool{}
	state.fired = map[Site]int{}
	state.kept = nil
	state.fireProbability = fireProbability
}

// StopFaults switches fault injection off for the rest of the run (the
// simulator's liveness phase), except at the sites listed in keep, keeping
// the firings counted so far.
func StopFaults(keep ...Site) {
	if len(keep) == 0 {
		state.rng = nil
		return
	}
	state.kept = map[Site]bool{}
	for _, site := range keep {
		state.kept[site] = true
	}
}

// Reset switches everything off.
func Reset() {
	state.marks, state.rng, state.sites, state.fired, state.kept = nil, nil, nil, nil, nil
}

// Count is a mark or site with how often it was reached or fired.
type Count struct {
	Name  string
	Count int
}

// Marks returns the marks reached since Record, sorted by name.
func Marks() []Count { return sorted(state.marks) }

// Fired returns how often each Buggify site fired since Record (sites that
// never fired are absent). The map is the caller's.
func Fired() map[Site]int { return maps.Clone(state.fired) }

func sorted(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for name, count := range m {
		out = append(out, Count{Name: name, Count: count})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Force switches fault injection on with only the given sites enabled,
// each firing on every call: for a unit test of what a site does. Call
// Reset when the test ends.
func Force(sites ...Site) {
	Record(rand.New(rand.NewPCG(0, 0)), 1)
	for _, site := range registeredSites {
		state.sites[site] = false
	}
	for _, site := range sites {
		state.sites[site] = true
	}
}
