package chaos

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOffOutsideARun(t *testing.T) {
	Reset()
	Reached("mark")
	require.False(t, Buggify("site"), "nothing fires unless a run switched faults on")
	require.Empty(t, Marks())
	require.False(t, Planted(BugAckBeforeSync), "no bug is planted in a plain build")
}

func TestMarksAreCountedAndSorted(t *testing.T) {
	Record(nil, 0)
	defer Reset()
	Reached("b")
	Reached("a")
	Reached("b")
	require.Equal(t, []Count{{"a", 1}, {"b", 2}}, Marks())
	require.False(t, Buggify("site"), "recording marks alone injects no fault")
}

func TestBuggifyIsSeededAndDecidedOncePerSite(t *testing.T) {
	draws := func(seed uint64) []bool {
		Record(rand.New(rand.NewPCG(seed, 0)), 0.5)
		defer Reset()
		var out []bool
		for i := range 200 {
			out = append(out, Buggify([]Site{"x", "y", "z"}[i%3]))
		}
		return out
	}
	require.Equal(t, draws(7), draws(7), "the same seed fires the same sites at the same calls")
	fired := 0
	for _, f := range draws(7) {
		if f {
			fired++
		}
	}
	require.Positive(t, fired, "an enabled site fires sometimes")
	require.Less(t, fired, 200, "never always")
}

func TestStopFaultsKeepsTheCountAndFiresNoMore(t *testing.T) {
	Record(rand.New(rand.NewPCG(3, 0)), 1)
	defer Reset()
	fired := 0
	for range 20 {
		if Buggify(SiteMetaCampaign) {
			fired++
		}
	}
	require.Equal(t, fired, Fired()[SiteMetaCampaign])
	StopFaults()
	require.False(t, Buggify(SiteMetaCampaign), "no site fires once faults are stopped")
	require.Equal(t, fired, Fired()[SiteMetaCampaign], "the firings before the stop are kept")
}

func TestStopFaultsMayKeepSomeSites(t *testing.T) {
	Force(SiteMetaCampaign, SiteMetaSnapshotLost)
	defer Reset()
	StopFaults(SiteMetaSnapshotLost)
	require.False(t, Buggify(SiteMetaCampaign), "a site not kept fires no more")
	require.True(t, Buggify(SiteMetaSnapshotLost), "a kept site still fires")
	Force(SiteMetaCampaign)
	require.True(t, Buggify(SiteMetaCampaign), "a new run starts with every site")
}

func TestEveryPlantedBugHasItsOwnName(t *testing.T) { // single-node, fan-out and cluster
	seen := map[string]bool{}
	for _, bug := range append(append(append(append([]Bug{}, Bugs...), FanoutBugs...), ClusterBugs...), ClusterBugsNotRequired...) {
		name := bug.String()
		require.NotEqual(t, "unknown-bug", name, "bug %d has no name", int(bug))
		require.False(t, seen[name], "two planted bugs are named %q", name)
		seen[name] = true
		require.False(t, Planted(bug), "no bug is planted in a plain build")
	}
	require.Len(t, seen, int(BugCommittedInOneFile), "every declared bug is listed once")
}
