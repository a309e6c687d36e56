//go:build plantedbugs

package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"narad/chaos"
)

// plantedClusterSeedsMax bounds the seeds of the three-node moves world a
// cluster bug may need before a checker fails: a bug that survives them
// is a blind spot of the simulator, to be fixed there.
const plantedClusterSeedsMax = 50

var plantedSeedsFlag = flag.Int("planted-seeds", plantedClusterSeedsMax,
	"seeds of the three-node moves world each planted cluster bug may take to be caught (at most the bound)")

// plantedCatch is how one planted cluster bug fared.
type plantedCatch struct {
	bug     chaos.Bug
	seed    uint64 // the first seed that caught it, 0 for none
	checker string
	detail  string
}

// TestPlantedClusterBugsAreCaught plants each cluster bug in turn
// (ownership, the freeze, force-promote, forwarding, leases) and sweeps
// seeds of the three-node moves world until a checker fails. It prints,
// per bug, the first catching seed and the checker, then
// "planted: N of M caught", and fails if a bug survived -planted-seeds
// seeds. The bugs of chaos.ClusterBugsNotRequired are tried after and
// their outcome printed, without failing. Any checker counts, "client" included: a reply matched to the
// wrong request is exactly an answer no server should give.
func TestPlantedClusterBugsAreCaught(t *testing.T) {
	seeds := min(max(*plantedSeedsFlag, 1), plantedClusterSeedsMax)
	start := time.Now()
	var caught int
	for _, bug := range chaos.ClusterBugs {
		result := catchInMovesWorld(bug, seeds)
		if result.seed == 0 {
			t.Errorf("planted %s: survived %d seeds of the three-node moves world", bug, seeds)
			fmt.Printf("planted %s: survived %d seeds\n", bug, seeds)
			continue
		}
		caught++
		fmt.Printf("planted %s: caught at seed %d by %s: %s\n", bug, result.seed, result.checker, shorten(result.detail, 160))
		fmt.Printf("  reproduce: %s\n", plantedReproduce(bug, result.seed))
	}
	fmt.Printf("planted: %d of %d caught (three nodes with moves, at most %d seeds each, wall %.0f s)\n",
		caught, len(chaos.ClusterBugs), seeds, time.Since(start).Seconds())
	for _, bug := range chaos.ClusterBugsNotRequired {
		if result := catchInMovesWorld(bug, seeds); result.seed != 0 {
			fmt.Printf("planted %s (not required): caught at seed %d by %s\n", bug, result.seed, result.checker)
		} else {
			fmt.Printf("planted %s (not required): survived %d seeds\n", bug, seeds)
		}
	}
}

// catchInMovesWorld plants bug and runs seeds 1..seeds of the three-node
// moves world (weather in a seeded half of them) until one fails.
func catchInMovesWorld(bug chaos.Bug, seeds int) plantedCatch {
	chaos.Plant(bug)
	defer chaos.Plant(0)
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		opts := DefaultOptions(seed)
		opts.Nodes = 3
		opts.Moves = true
		opts.Weather = WeatherAuto // as TestSim's sweeps run
		opts.DiskPressure = false  // as the catches were measured: it came later and reshuffles a share of the runs
		opts.LateSyncs = false     // likewise
		if report := Run(opts); report.Failure != nil {
			return plantedCatch{bug: bug, seed: seed, checker: report.Failure.Checker, detail: report.Failure.Detail}
		}
	}
	return plantedCatch{bug: bug}
}

// plantedReproduce is the command that runs a catch of catchInMovesWorld
// again alone: the same world (TestSim's flags at their defaults make
// the rest of its options) with the bug planted.
func plantedReproduce(bug chaos.Bug, seed uint64) string {
	return fmt.Sprintf("go test -tags plantedbugs ./sim -run '^TestSim$' -plant=%s -seed=%d -nodes=3 -moves -disk-pressure=false -v", bug, seed)
}

// shorten cuts text to at most limit bytes, on one line.
func shorten(text string, limit int) string {
	text = strings.ReplaceAll(text, "\n", " ")
	if len(text) <= limit {
		return text
	}
	return text[:limit] + "..."
}
