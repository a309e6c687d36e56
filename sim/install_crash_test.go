package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// forcePromoteSeed and installRepairSeed are seeds of the three-node
// moves world whose runs reach a force-promotion and an install repair;
// if a change of the simulator's draws moves them elsewhere, other seeds
// that reach them replace these (the nightly prints how often they are
// reached). Few seeds reach both (one of the first 416 once the
// caught-up kills drew from a stream of their own, and it stopped when
// other changes moved the draws), so each end has a seed of its own.
const (
	forcePromoteSeed  = 63
	installRepairSeed = 34
)

// TestAMovesSeedReachesForcePromotionAndAnInstallRepair: the moves faults
// build both rare ends of a move within the CI's time: a frozen source
// killed past the force-promote delay is replaced by its destination's
// copy (forcePromoteSeed), and a destination killed between its
// install's renames repairs the install when it starts
// (installRepairSeed); every checker passes.
func TestAMovesSeedReachesForcePromotionAndAnInstallRepair(t *testing.T) {
	requireMovesSeedReaches(t, forcePromoteSeed, markFrozenSourceKilled, chaos.MarkNodeMoveForcePromote)
	requireMovesSeedReaches(t, installRepairSeed, markInstallCrashed, chaos.MarkNodeInstallRepaired)
}

// requireMovesSeedReaches runs a seed of the three-node moves world and
// requires that it passes and reaches every mark given.
func requireMovesSeedReaches(t *testing.T, seed uint64, marks ...chaos.Mark) {
	report := Run(movesOptions(3)(seed))
	require.Nil(t, report.Failure, "seed %d must pass", seed)
	reached := map[string]int{}
	for _, mark := range report.Marks {
		reached[mark.Name] += mark.Count
	}
	for _, mark := range marks {
		require.Positive(t, reached[string(mark)], "seed %d no longer reaches %s", seed, mark)
	}
}
