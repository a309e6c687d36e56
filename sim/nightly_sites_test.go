package sim

import "narad/chaos"

// The nightly's view of the core's fault sites (chaos.Buggify; sites.go):
// each run uses the default -sites=auto, so the sites are on in a seeded
// half of the runs.

// sitesFiredIn returns the fault sites that fired in a run, by name.
func sitesFiredIn(report Report) []chaos.Count { return report.SitesFired }

// registeredSiteNames lists every fault site of the core, in registry
// order.
func registeredSiteNames() []string {
	var names []string
	for _, site := range chaos.Sites() {
		names = append(names, string(site))
	}
	return names
}
