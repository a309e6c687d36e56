package host

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// A partition's produced and consumed counters, kept after their first
// use, add to the series of their own labels only.
func TestFlowCountersAddToTheirOwnSeries(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.Produced("orders", 1, 2, 20)
	m.Produced("orders", 1, 3, 30)
	m.Produced("orders", 2, 1, 10)
	m.Consumed("orders", 1, 4, 40)
	require.Equal(t, 5.0, counterValue(t, m.producedMessages.WithLabelValues("orders", "1")))
	require.Equal(t, 50.0, counterValue(t, m.producedBytes.WithLabelValues("orders", "1")))
	require.Equal(t, 1.0, counterValue(t, m.producedMessages.WithLabelValues("orders", "2")))
	require.Equal(t, 4.0, counterValue(t, m.consumedMessages.WithLabelValues("orders", "1")))
	require.Equal(t, 40.0, counterValue(t, m.consumedBytes.WithLabelValues("orders", "1")))
	require.Len(t, m.flows, 3)
}

func counterValue(t *testing.T, counter prometheus.Counter) float64 {
	t.Helper()
	var metric dto.Metric
	require.NoError(t, counter.Write(&metric))
	return metric.GetCounter().GetValue()
}
