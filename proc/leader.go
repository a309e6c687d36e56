package proc

import (
	"context"
	"fmt"
)

// Leader returns the node that reports leading the metadata group, once
// exactly one of running() does; it polls until ctx ends.
func Leader[N interface{ IsLeader(context.Context) bool }](ctx context.Context, running func() []N) (N, error) {
	for {
		var leaders []N
		for _, n := range running() {
			if n.IsLeader(ctx) {
				leaders = append(leaders, n)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if err := SleepContext(ctx, PollInterval); err != nil {
			var none N
			return none, fmt.Errorf("no single node reported %s 1 (%d did): %w", LeaderMetric, len(leaders), err)
		}
	}
}
