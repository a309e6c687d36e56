//go:build plantedbugs

package sim

import (
	"testing"

	"narad/chaos"
)

// TestPlantedFanoutBugsAreCaught plants each bug of fan-out in turn and
// sweeps fan-out moves worlds of three nodes until a checker fails; a bug
// that survives plantedSeedsMax seeds fails the test. A cursor forgotten
// by a move loses records for the children only, so the fan-out checker
// must be the one that sees it.
func TestPlantedFanoutBugsAreCaught(t *testing.T) {
	for _, bug := range chaos.FanoutBugs {
		t.Run(bug.String(), func(t *testing.T) {
			chaos.Plant(bug)
			defer chaos.Plant(0)
			for seed := uint64(1); seed <= plantedSeedsMax; seed++ {
				report := Run(fanoutOptions(3)(seed))
				if report.Failure != nil && report.Failure.Checker == "fanout-complete" {
					t.Logf("%s caught after %d seed(s) by %s", bug, seed, report.Failure)
					t.Logf("reproduce: go test -tags plantedbugs ./sim -run '^TestSim$' -plant=%s -seed=%d -nodes=3 -moves -fanout -weather=off -v", bug, seed)
					return
				}
				if report.Failure != nil {
					t.Fatalf("%s: seed %d failed another checker: %s", bug, seed, report.FailureText())
				}
			}
			t.Fatalf("%s survived %d seeds", bug, plantedSeedsMax)
		})
	}
}
