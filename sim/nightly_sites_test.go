package sim

import "narad/chaos"

// The nightly's view of the core's fault sites (chaos.Buggify). This build
// has no registered site and no run turns sites on, so the nightly reports
// "sites: fired 0 of 0"; these two functions are all it needs to change
// when sites arrive.

// sitesFiredIn returns the fault sites that fired in a run, by name.
func sitesFiredIn(report Report) []chaos.Count { return nil }

// registeredSiteNames lists every fault site of the core.
func registeredSiteNames() []string { return nil }
