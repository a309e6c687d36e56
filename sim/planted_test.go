//go:build plantedbugs

package sim

import (
	"testing"

	"narad/chaos"
)

// plantedSeedsMax bounds the seeds a sweep may need to catch a planted
// bug. A simulator that never fails is not evidence.
const plantedSeedsMax = 20

// TestPlantedBugsAreCaught plants each bug in turn and sweeps seeds until
// a checker fails; it fails if a bug survives plantedSeedsMax seeds.
func TestPlantedBugsAreCaught(t *testing.T) {
	for _, bug := range chaos.Bugs {
		t.Run(bug.String(), func(t *testing.T) {
			chaos.Plant(bug)
			defer chaos.Plant(0)
			for seed := uint64(1); seed <= plantedSeedsMax; seed++ {
				opts := DefaultOptions(seed)
				opts.SafetyMs = 10_000
				report := Run(opts)
				if report.Failure != nil {
					t.Logf("%s caught on seed %d (seed %d of the sweep) by %s", bug, seed, seed, report.Failure)
					return
				}
			}
			t.Fatalf("%s survived %d seeds", bug, plantedSeedsMax)
		})
	}
}
