package chaos

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// declaredSites returns the value of every constant of type Site declared
// in sites.go.
func declaredSites(t *testing.T) []Site {
	var declared []Site
	for _, value := range declaredConstants(t, "sites.go", "Site") {
		declared = append(declared, Site(value))
	}
	return declared
}

// TestSitesListsEveryDeclaredSiteOnce: Sites holds each constant of
// sites.go exactly once, and no two constants share a name.
func TestSitesListsEveryDeclaredSiteOnce(t *testing.T) {
	declared := slices.Sorted(slices.Values(declaredSites(t)))
	require.GreaterOrEqual(t, len(declared), 12)
	require.Equal(t, len(declared), len(slices.Compact(slices.Clone(declared))), "two constants name the same site")
	require.Equal(t, declared, slices.Sorted(slices.Values(Sites())), "Sites lists exactly the sites declared in sites.go")
}

func TestFiredCountsSitesByName(t *testing.T) {
	defer Reset()
	// With probability 1 a site fires on every call once enabled; half
	// of the seeds enable it.
	enabled := false
	for seed := uint64(1); seed <= 64 && !enabled; seed++ {
		Record(rand.New(rand.NewPCG(seed, 0)), 1)
		enabled = Buggify(SiteNodeLeaseCutShort)
	}
	require.True(t, enabled, "no seed of 64 enabled the site")
	require.True(t, Buggify(SiteNodeLeaseCutShort), "an enabled site with probability 1 fires on every call")
	fired := Fired()
	require.Equal(t, map[Site]int{SiteNodeLeaseCutShort: 2}, fired)
	fired[SiteNodeLeaseCutShort] = 9
	require.Equal(t, 2, Fired()[SiteNodeLeaseCutShort], "the map Fired returns is a copy")
}

func TestForceFiresOnlyTheGivenSitesOnEveryCall(t *testing.T) {
	Force(SiteMetaCampaign)
	defer Reset()
	for range 10 {
		require.True(t, Buggify(SiteMetaCampaign))
		require.False(t, Buggify(SiteMetaSnapshotLost))
	}
	require.Equal(t, map[Site]int{SiteMetaCampaign: 10}, Fired())
}

// BenchmarkBuggifyWhenOff is the cost of a site outside a simulated run
// with the sites on: what production pays.
func BenchmarkBuggifyWhenOff(b *testing.B) {
	Reset()
	for b.Loop() {
		if Buggify(SiteNodeLeaseCutShort) {
			b.Fatal("a site fired with faults off")
		}
	}
}
