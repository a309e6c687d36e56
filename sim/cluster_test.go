package sim

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Sweeps of multi-node worlds run by `go test ./sim`, sized so that the
// package stays within its time budget beside the single-node sweep of
// make test.
const (
	clusterSafetyMs = 30_000
	threeNodeSeeds  = 12
	fiveNodeSeeds   = 6
	// threeNodeFirstSeed and fiveNodeFirstSeed start the sweeps at seeds
	// of their own.
	threeNodeFirstSeed = 1
	fiveNodeFirstSeed  = 1
)

func clusterOptions(nodes int) func(seed uint64) Options {
	return func(seed uint64) Options {
		opts := DefaultOptions(seed)
		opts.Nodes = nodes
		opts.SafetyMs = clusterSafetyMs
		return opts
	}
}

// TestSimThreeNodes sweeps three-node worlds with every fault: kills of
// the metastore's leader and followers, partitions, disk faults; every
// checker must pass, and the sweep prints its failovers and marks.
func TestSimThreeNodes(t *testing.T) {
	clusterSweep(t, "sim-3-nodes", threeNodeFirstSeed, threeNodeSeeds, 3)
}

// TestSimFiveNodes is the same sweep over five-node worlds, where two
// nodes may be down at once and a partition may split two from three.
func TestSimFiveNodes(t *testing.T) {
	clusterSweep(t, "sim-5-nodes", fiveNodeFirstSeed, fiveNodeSeeds, 5)
}

func clusterSweep(t *testing.T, name string, first uint64, count, nodes int) {
	stats := runSweep(t, first, count, clusterOptions(nodes))
	stats.print(name)
	reached := slices.Sorted(maps.Keys(stats.marks))
	fmt.Printf("%s: marks reached: %v; cluster marks never reached: %v\n", name, reached,
		MissingMarks(stats.marks, ExpectedClusterMarks))
	require.NotEmpty(t, stats.failoversMs, "no leader kill was followed by a failover in %d seeds", count)
}

// TestClusterSameSeedSameTrace runs three-node seeds A, B, A in one
// process: A's two runs must leave the same trace hash and report (the
// same seed reproduces exactly), and B's run between them must not leak
// into the second.
func TestClusterSameSeedSameTrace(t *testing.T) {
	a := requireSameSeedSameTrace(t, withSites(clusterOptions(3), SitesOff), 8_000, 3, 4)
	require.Greater(t, a.Events, 5_000, "the run did something") // about 7,000 events: its faults take n1's disk for a while
}

// TestClusterSameSeedSameTraceWithSites: the fault sites draw from the
// seed alone, so a cluster run with them on is as reproducible.
func TestClusterSameSeedSameTraceWithSites(t *testing.T) {
	a := requireSameSeedSameTrace(t, withSites(clusterOptions(3), SitesOn), 8_000, 3, 4)
	require.NotEmpty(t, a.SitesFired, "the sites fired")
}

// withSites sets the fault sites' mode of options.
func withSites(options func(uint64) Options, mode SitesMode) func(uint64) Options {
	return func(seed uint64) Options {
		opts := options(seed)
		opts.Sites = mode
		return opts
	}
}

// requireSameSeedSameTrace runs seeds a, b, a with the options (safety
// phase shortened to safetyMs) and requires a's two runs to leave the same
// trace hash and summary, and b another hash. It returns a's first report.
func requireSameSeedSameTrace(t *testing.T, options func(uint64) Options, safetyMs int64, a, b uint64) Report {
	t.Helper()
	run := func(seed uint64) Report {
		opts := options(seed)
		opts.SafetyMs = safetyMs
		return Run(opts)
	}
	a1, other, a2 := run(a), run(b), run(a)
	require.Equal(t, a1.TraceHash, a2.TraceHash, "seed %d diverged", a)
	a1.WallSeconds, a2.WallSeconds = 0, 0
	require.Equal(t, a1.Summary(), a2.Summary())
	require.NotEqual(t, a1.TraceHash, other.TraceHash, "two seeds, one trace: the seed does not reach the world")
	return a1
}
