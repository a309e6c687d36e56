package sim

import (
	"fmt"
	"slices"
	"testing"

	"narad/chaos"

	"github.com/stretchr/testify/require"
)

// nightlyMark is a mark the moves worlds under every fault reach in some
// of their runs only: the nightly requires it once it ran at least
// minRuns of those worlds (three or five nodes, moves, with or without
// further scenarios, faults=all), so a short nightly reports it and
// does not fail.
type nightlyMark struct {
	mark chaos.Mark
	// minRuns is the number of runs of the moves worlds under every
	// fault after which a mark never reached fails the nightly: about
	// four times the runs that reach it once in a hundred-odd seeds, so a
	// nightly misses it by chance less than once in a hundred.
	minRuns int
}

// nightlyMoveMarks are the moves paths too rare for the CI seeds. The
// rates are those of seeds 1-50 of the three-node moves world with the
// sites on and off, and seeds 1-20 of the five-node one, unless a
// comment says otherwise.
var nightlyMoveMarks = []nightlyMark{
	// A produce joined a forward under way: 24 runs of 120.
	{chaos.MarkNodeProduceForwardsJoined, 30},
	// Cancelling a decommission aborted a move: 13 of seeds 1-120 of the
	// three-node moves world (20 before a cancel kept the moves whose
	// destination did not report its progress).
	{chaos.MarkNodeCancelAbortsMove, 55},
	// An aborted destination rolled its installed copy back: 26 of 120.
	{chaos.MarkNodeMoveRolledBack, 30},
	// A draining metadata leader handed its leadership over: 18 of 120.
	{chaos.MarkNodeLeadershipHandedOver, 40},
	// A destination threw its copy away to start again: 8 of 120.
	{chaos.MarkNodeMoveRestarted, 80},
	// A move ended while its finalize job was out: 2 of 120.
	{chaos.MarkNodeMoveJobOrphaned, 300},
	// A destination promoted its copy of a frozen source that stayed
	// dead (the frozen-source kill of the moves faults): 2 of 40
	// three-node seeds.
	{chaos.MarkNodeMoveForcePromote, 150},
	// A request held on a replica behind a topic's creation or growth
	// was served once the replica applied it (the control plane's
	// operator wrote to a partition through a node that lagged): 10 of
	// seeds 7236000-7236119 of the three-node moves world.
	{chaos.MarkNodeHeldServed, 60},
	// The frozen-source kill that leads to it landed: 4 of 40.
	{markFrozenSourceKilled, 100},
	// An unfrozen source whose destination's copy caught up was killed
	// after acknowledging a record: 15 of seeds 1-100 of the three-node
	// moves world (24 before other changes moved the draws).
	{markCaughtUpSourceKilled, 30},
	// A destination killed between the renames of its install, and the
	// repair of that install when it started again: 2 of 30 three-node
	// seeds.
	{markInstallCrashed, 150},
	{chaos.MarkNodeInstallRepaired, 150},
	// A move's source found media damage under a segment index that its
	// recovery had not seen (media faults aimed at indexed segments, then
	// a move of that partition): in the seeds 6546000-6546049 of the
	// three-node moves world with every fault, not in 6546050-6546199;
	// only three-node runs draw media faults.
	{chaos.MarkStorageVerifyFoundDamage, 1500},
}

// nightlyMoveMarkList is the marks of nightlyMoveMarks.
func nightlyMoveMarkList() []chaos.Mark {
	marks := make([]chaos.Mark, len(nightlyMoveMarks))
	for i, required := range nightlyMoveMarks {
		marks[i] = required.mark
	}
	return marks
}

// countsForNightlyMoveMarks reports whether a run is one of the worlds
// nightlyMoveMarks are required of.
func countsForNightlyMoveMarks(report Report) bool {
	return report.Moves && report.Nodes > 1 && report.Profile == ProfileAll.Name
}

// nightlyMoveMarksMissing splits nightlyMoveMarks never reached in runs
// of their worlds into those required by now (missing) and those whose
// worlds ran too few times yet (pending).
func nightlyMoveMarksMissing(runs int, reached map[string]int) (missing, pending []chaos.Mark) {
	for _, required := range nightlyMoveMarks {
		switch {
		case reached[string(required.mark)] > 0:
		case runs >= required.minRuns:
			missing = append(missing, required.mark)
		default:
			pending = append(pending, required.mark)
		}
	}
	return missing, pending
}

// printNightlyMoveMarks prints the line of the nightly's moves marks.
func (s *nightlyStats) printNightlyMoveMarks() {
	missing, pending := nightlyMoveMarksMissing(s.MovesRuns, s.MovesMarks)
	fmt.Printf("nightly: moves marks in %d runs of the moves worlds under every fault: %d of %d reached; missing: %v; too few runs to require: %v\n",
		s.MovesRuns, len(nightlyMoveMarks)-len(missing)-len(pending), len(nightlyMoveMarks), missing, pending)
}

// TestNightlyRequiresAMoveMarkOnlyAfterItsRuns: a rare moves mark never
// reached is pending while its worlds ran fewer than its minRuns, and
// missing from then on; reached, it is neither; runs of other worlds do
// not count.
func TestNightlyRequiresAMoveMarkOnlyAfterItsRuns(t *testing.T) {
	rare := nightlyMoveMarks[len(nightlyMoveMarks)-1]
	stats := newNightlyStats()
	for range rare.minRuns - 1 {
		stats.add(Report{Nodes: 3, Moves: true, Profile: ProfileAll.Name})
		stats.add(Report{Nodes: 5, Moves: true, Profile: ProfileNetwork.Name})
		stats.add(Report{Nodes: 1, Profile: ProfileAll.Name})
	}
	missing, pending := nightlyMoveMarksMissing(stats.MovesRuns, stats.MovesMarks)
	require.Equal(t, rare.minRuns-1, stats.MovesRuns, "only the moves worlds under every fault count")
	require.NotContains(t, missing, rare.mark)
	require.Contains(t, pending, rare.mark)

	stats.add(Report{Nodes: 5, Moves: true, Profile: ProfileAll.Name})
	missing, pending = nightlyMoveMarksMissing(stats.MovesRuns, stats.MovesMarks)
	require.Contains(t, missing, rare.mark)
	require.NotContains(t, pending, rare.mark)

	stats.add(Report{Nodes: 3, Moves: true, Profile: ProfileAll.Name, Marks: []chaos.Count{{Name: string(rare.mark), Count: 1}}})
	missing, pending = nightlyMoveMarksMissing(stats.MovesRuns, stats.MovesMarks)
	require.NotContains(t, slices.Concat(missing, pending), rare.mark)
}

// TestNightlyMoveMarksAreRareOnly: a mark the nightly requires of its
// moves worlds is required by no CI list, so that it has one rule only.
func TestNightlyMoveMarksAreRareOnly(t *testing.T) {
	for _, required := range nightlyMoveMarks {
		require.NotContains(t, ciMoveMarks, required.mark)
		require.NotContains(t, ExpectedMoveMarks, required.mark)
		require.Positive(t, required.minRuns)
	}
}
