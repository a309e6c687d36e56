package sim

import (
	"fmt"
	"slices"
	"sort"

	"narad/chaos"
)

// SitesMode says whether a run switches the core's fault sites on
// (chaos.Buggify; docs/architecture.md#fault-sites).
type SitesMode int

const (
	// SitesAuto switches them on in a seeded half of the runs.
	SitesAuto SitesMode = iota
	// SitesOn switches them on in every run.
	SitesOn
	// SitesOff never switches them on (a run as before the sites
	// existed: the regression seeds).
	SitesOff
)

// SitesModeByName parses the -sites flag.
func SitesModeByName(name string) (SitesMode, error) {
	switch name {
	case "auto":
		return SitesAuto, nil
	case "on":
		return SitesOn, nil
	case "off":
		return SitesOff, nil
	}
	return SitesOff, fmt.Errorf("unknown -sites %q: want auto, on or off", name)
}

func (m SitesMode) String() string {
	switch m {
	case SitesOn:
		return "on"
	case SitesOff:
		return "off"
	}
	return "auto"
}

// The draws of the fault sites.
const (
	// sitesOnPercent of the runs in SitesAuto switch the sites on.
	sitesOnPercent = 50
	// sitesFirePercentMin and sitesFirePercentMax bound the chance, drawn
	// once per run, that an enabled site fires when reached (each site is
	// enabled or not for the whole run, with even odds, on first reach).
	sitesFirePercentMin = 2
	sitesFirePercentMax = 25
)

// siteConfig is what a run drew for its fault sites.
type siteConfig struct {
	on          bool
	firePercent int
}

// switchSitesOn draws, from the seed, whether the run's fault sites are on
// and how often an enabled one fires, and switches chaos accordingly
// (marks are recorded in any case). Call chaos.Reset when the run ends.
func switchSitesOn(seed uint64, mode SitesMode) siteConfig {
	// Both draws come first whatever the mode, so that -sites=on and
	// -sites=off reproduce a run of -sites=auto exactly.
	rng := newRand(seed, sitesStream)
	drawnOn := rng.IntN(100) < sitesOnPercent
	config := siteConfig{
		on:          mode == SitesOn || mode == SitesAuto && drawnOn,
		firePercent: sitesFirePercentMin + rng.IntN(sitesFirePercentMax-sitesFirePercentMin+1),
	}
	if !config.on {
		chaos.Record(nil, 0)
		return config
	}
	chaos.Record(rng, float64(config.firePercent)/100)
	return config
}

// firedSites returns the sites that fired in this run, sorted by name.
func firedSites() []chaos.Count {
	fired := chaos.Fired()
	out := make([]chaos.Count, 0, len(fired))
	for site, count := range fired { //determinism:ok sorted below
		out = append(out, chaos.Count{Name: string(site), Count: count})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sitesSummary is the summary line's account of the fault sites:
// "sites=off", or "sites=on:P%[site:count ...]".
func (r Report) sitesSummary() string {
	if !r.SitesOn {
		return "sites=off"
	}
	return fmt.Sprintf("sites=on:%d%%[%s]", r.SitesFirePercent, countsString(r.SitesFired))
}

// sitesFlag is the -sites value that reproduces the run.
func (r Report) sitesFlag() SitesMode {
	if r.SitesOn {
		return SitesOn
	}
	return SitesOff
}

// NeverFiredSites returns the registered sites absent from fired, in
// registry order.
func NeverFiredSites(fired map[string]int) []chaos.Site {
	return slices.DeleteFunc(chaos.Sites(), func(site chaos.Site) bool { return fired[string(site)] > 0 })
}
