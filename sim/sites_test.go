package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// TestSitesFlagReproducesAnAutoRun: -sites=on and -sites=off reproduce a
// run of -sites=auto exactly (the same trace), whichever way its seed
// drew; runs with the sites on are deterministic and some fire (a short
// single-node run passes few sites: one with two calls may fire none);
// and over a sample of seeds, auto switches them on in some runs and off
// in others.
func TestSitesFlagReproducesAnAutoRun(t *testing.T) {
	seen := map[bool]bool{}
	firedWithSitesOn := 0
	for seed := uint64(1); seed <= 6; seed++ {
		opts := shortOptions(seed)
		auto := Run(opts)
		require.Nil(t, auto.Failure, "seed %d", seed)
		seen[auto.SitesOn] = true
		opts.Sites = auto.sitesFlag()
		forced := Run(opts)
		require.Equal(t, auto.TraceHash, forced.TraceHash, "seed %d with -sites=%s", seed, opts.Sites)
		require.Equal(t, auto.SitesFired, forced.SitesFired)
		if auto.SitesOn {
			firedWithSitesOn += len(auto.SitesFired)
			require.Contains(t, auto.Summary(), "sites=on:")
		} else {
			require.Empty(t, auto.SitesFired)
			require.Contains(t, auto.Summary(), "sites=off")
		}
	}
	require.Equal(t, map[bool]bool{true: true, false: true}, seen, "six seeds drew both on and off")
	require.Positive(t, firedWithSitesOn, "no site fired in any of the runs with the sites on")
}

func TestSitesModeByName(t *testing.T) {
	for _, mode := range []SitesMode{SitesAuto, SitesOn, SitesOff} {
		parsed, err := SitesModeByName(mode.String())
		require.NoError(t, err)
		require.Equal(t, mode, parsed)
	}
	_, err := SitesModeByName("sometimes")
	require.ErrorContains(t, err, "want auto, on or off")
}

func TestNeverFiredSitesListsTheRest(t *testing.T) {
	never := NeverFiredSites(map[string]int{"meta-campaign": 2, "node-lease-cut-short": 0})
	require.NotContains(t, never, chaos.SiteMetaCampaign)
	require.Contains(t, never, chaos.SiteNodeLeaseCutShort, "counted zero times is never fired")
	require.Contains(t, never, chaos.SiteMetaSnapshotLost)
	require.Len(t, never, len(chaos.Sites())-1)
}
