package host

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Property: a flood of one kind of warning (a forward-timed-out for each
// forward a flooded peer did not answer: 1,122 lines in 45 s in the
// audit's run) is logged at most once per kind per eventLogsPerSecond, the
// next line saying how many were suppressed, while the metrics count
// every one; another kind has its own allowance, and routine events are
// not limited.
func TestRepeatedWarningsAreRateLimitedPerKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged strings.Builder
		m := NewMetrics(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&logged, nil)))
		for id := range 100 {
			m.Event("forward-timed-out", fmt.Sprintf("node n1 did not answer forward %d", id))
		}
		m.Event("log-failed", "orders/2: fsync failed")
		for range 3 {
			m.Event("move-completed", "orders/1 to n3")
		}
		time.Sleep(time.Second) // the bubble's clock: eventLogsPerSecond
		m.Event("forward-timed-out", "node n1 did not answer forward 100")

		require.Equal(t, 101.0, counterValue(t, m.events.WithLabelValues("forward-timed-out")), "the metric counts every one")
		require.Equal(t, 101.0, counterValue(t, m.errors.WithLabelValues("node", "forward-timed-out")))
		lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
		require.Equal(t, 6, len(lines), "one forward-timed-out per second, the other kind's, every routine event")
		require.Contains(t, lines[0], "forward 0")
		require.NotContains(t, lines[0], "suppressed")
		require.Contains(t, lines[1], "kind=log-failed")
		require.Contains(t, lines[2], "kind=move-completed")
		require.Contains(t, lines[5], "forward 100")
		require.Contains(t, lines[5], "suppressed=99", "the next line says how many were suppressed")
	})
}
