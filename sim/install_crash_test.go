package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// forcePromoteAndRepairSeed is a seed of the three-node moves world whose
// run reaches a force-promotion and an install repair; if a change of the
// simulator's draws moves them elsewhere, another seed that reaches both
// replaces it (the nightly prints how often they are reached).
const forcePromoteAndRepairSeed = 416

// TestAMovesSeedReachesForcePromotionAndAnInstallRepair: the moves faults
// build both rare ends of a move within the CI's time: a frozen source
// killed past the force-promote delay is replaced by its destination's
// copy, and a destination killed between its install's renames repairs
// the install when it starts; every checker passes.
func TestAMovesSeedReachesForcePromotionAndAnInstallRepair(t *testing.T) {
	report := Run(movesOptions(3)(forcePromoteAndRepairSeed))
	require.Nil(t, report.Failure, "seed %d must pass", forcePromoteAndRepairSeed)
	reached := map[string]int{}
	for _, mark := range report.Marks {
		reached[mark.Name] += mark.Count
	}
	for _, mark := range []chaos.Mark{markFrozenSourceKilled, chaos.MarkNodeMoveForcePromote, markInstallCrashed, chaos.MarkNodeInstallRepaired} {
		require.Positive(t, reached[string(mark)], "seed %d no longer reaches %s", forcePromoteAndRepairSeed, mark)
	}
}
