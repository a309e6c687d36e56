package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// usersSeeds is the sample of the users sweep, per cluster size.
const usersSeeds = 4

// TestUsersReplicateThroughFailures runs clustered worlds with the users
// scenario and every fault: user changes commit through leader changes and
// restarts, every replica's users converge to the committed log's, and the
// root is seeded exactly once although every node carries a seed.
func TestUsersReplicateThroughFailures(t *testing.T) {
	failovers := 0
	for _, nodes := range []int{3, 5} {
		for seed := uint64(1); seed <= usersSeeds; seed++ {
			opts := clusterOptions(nodes)(seed)
			opts.Users = true
			report := Run(opts)
			require.Nil(t, report.Failure, "nodes=%d seed=%d: %s", nodes, seed, report.FailureText())
			require.Equal(t, 1, report.RootSeeds, "nodes=%d seed=%d", nodes, seed)
			require.Positive(t, report.UserChanges, "nodes=%d seed=%d", nodes, seed)
			require.Positive(t, report.UsersFinal, "nodes=%d seed=%d", nodes, seed)
			failovers += len(report.FailoversMs)
		}
	}
	require.Positive(t, failovers, "the sweep changed leaders at least once")
}

// TestUsersScenarioIsDeterministic: the same seed gives the same trace
// with the users scenario on.
func TestUsersScenarioIsDeterministic(t *testing.T) {
	opts := clusterOptions(3)(4)
	opts.SafetyMs, opts.Users = 8_000, true
	first, second := Run(opts), Run(opts)
	require.Nil(t, first.Failure, "%s", first.FailureText())
	require.Equal(t, first.TraceHash, second.TraceHash)
	require.Equal(t, first.RootSeeds, second.RootSeeds)
}
