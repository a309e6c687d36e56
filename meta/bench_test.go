package meta

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkClusterProposals measures proposals committed and applied on a
// 3-node in-memory cluster, with bbolt fsync on and off, proposing one
// command per round trip or a batch of 64 (group commit: one bbolt
// transaction per Ready).
func BenchmarkClusterProposals(b *testing.B) {
	for _, noSync := range []bool{true, false} {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("NoSync=%v/batch=%d", noSync, batch), func(b *testing.B) {
				benchmarkProposals(b, noSync, batch)
			})
		}
	}
}

func benchmarkProposals(b *testing.B, noSync bool, batch int) {
	c := newTestCluster(b, 3, 1, noSync, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	before := len(c.outcomes[leader])
	b.ResetTimer()
	for proposed := 0; proposed < b.N; {
		for range min(batch, b.N-proposed) {
			proposed++
			_, err := c.meta(leader).Propose(heartbeat("n1", int64(proposed)))
			require.NoError(b, err)
		}
		c.stabilize()
	}
	b.StopTimer()
	require.Len(b, c.outcomes[leader], before+b.N, "every proposal was applied")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "proposals/s")
}
