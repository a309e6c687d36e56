package proc

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// page is a /metrics page of one node, in the shapes narad exports.
const page = `# HELP narad_meta_snapshots_installed_total Snapshots.
# TYPE narad_meta_snapshots_installed_total counter
narad_meta_snapshots_installed_total 2
# TYPE narad_meta_leader gauge
narad_meta_leader 1e+00
# TYPE narad_moves_total counter
narad_moves_total{outcome="completed"} 3
narad_moves_total{outcome="aborted"} 1
# TYPE narad_moves_freeze_duration_seconds histogram
narad_moves_freeze_duration_seconds_bucket{le="0.1"} 2
narad_moves_freeze_duration_seconds_bucket{le="0.5"} 3
narad_moves_freeze_duration_seconds_bucket{le="1"} 4
narad_moves_freeze_duration_seconds_bucket{le="+Inf"} 5
narad_moves_freeze_duration_seconds_sum 7.5
narad_moves_freeze_duration_seconds_count 5
`

func parsePage(t *testing.T) Metrics {
	t.Helper()
	metrics, err := ParseMetrics(strings.NewReader(page))
	require.NoError(t, err)
	return metrics
}

func TestMetricsScalars(t *testing.T) {
	metrics := parsePage(t)
	value, found := metrics.Value("narad_meta_snapshots_installed_total")
	assert.True(t, found)
	assert.Equal(t, 2.0, value)
	value, found = metrics.Value(LeaderMetric)
	assert.True(t, found)
	assert.Equal(t, 1.0, value)
	_, found = metrics.Value("narad_moves_total")
	assert.False(t, found, "a labelled sample is not an unlabelled one")
	_, found = metrics.Value("narad_absent")
	assert.False(t, found)
	assert.Equal(t, 3.0, metrics.Sum("narad_moves_total", map[string]string{"outcome": "completed"}))
	assert.Equal(t, 4.0, metrics.Sum("narad_moves_total", nil))
}

func TestMetricsHistogramsSumOverPages(t *testing.T) {
	metrics := parsePage(t)
	metrics.Add(parsePage(t))
	const name = "narad_moves_freeze_duration_seconds"
	assert.Equal(t, 10.0, metrics.HistogramCount(name))
	assert.Equal(t, 15.0, metrics.HistogramSum(name))
	assert.Equal(t, 0.1, metrics.HistogramQuantileBound(name, 0.4))
	assert.Equal(t, 1.0, metrics.HistogramQuantileBound(name, 0.8))
	assert.True(t, math.IsInf(metrics.HistogramQuantileBound(name, 1), 1), "the largest observation is past every bound")
	assert.True(t, math.IsNaN(metrics.HistogramQuantileBound("narad_absent", 0.5)))
	assert.Equal(t, 4.0, metrics.HistogramCountAbove(name, 0.7), "10 observations, 6 of them at most 0.5")
	assert.Equal(t, 10.0, metrics.HistogramCountAbove(name, 0.01))
}

func TestMetricsHistogramOfTheMatchingLabels(t *testing.T) {
	page := `# TYPE narad_http_request_duration_seconds histogram
narad_http_request_duration_seconds_bucket{route="POST /v1/topics/{topic}/produce",status="202",le="+Inf"} 4
narad_http_request_duration_seconds_sum{route="POST /v1/topics/{topic}/produce",status="202"} 0.4
narad_http_request_duration_seconds_count{route="POST /v1/topics/{topic}/produce",status="202"} 4
narad_http_request_duration_seconds_bucket{route="POST /v1/topics/{topic}/produce",status="503",le="+Inf"} 1
narad_http_request_duration_seconds_sum{route="POST /v1/topics/{topic}/produce",status="503"} 0.1
narad_http_request_duration_seconds_count{route="POST /v1/topics/{topic}/produce",status="503"} 1
narad_http_request_duration_seconds_bucket{route="GET /healthz",status="200",le="+Inf"} 9
narad_http_request_duration_seconds_sum{route="GET /healthz",status="200"} 9
narad_http_request_duration_seconds_count{route="GET /healthz",status="200"} 9
`
	metrics, err := ParseMetrics(strings.NewReader(page))
	require.NoError(t, err)
	const name = "narad_http_request_duration_seconds"
	count, sum := metrics.HistogramOf(name, map[string]string{"route": "POST /v1/topics/{topic}/produce"})
	assert.Equal(t, 5.0, count, "every status of the route")
	assert.InDelta(t, 0.5, sum, 1e-12)
	count, sum = metrics.HistogramOf(name, nil)
	assert.Equal(t, 14.0, count)
	assert.InDelta(t, 9.5, sum, 1e-12)
	count, _ = metrics.HistogramOf(name, map[string]string{"route": "GET /v1/topics/{topic}/consume"})
	assert.Zero(t, count)
}

func TestScanLogSplitsRecordsFromText(t *testing.T) {
	log := `{"time":"2026-01-02T03:04:05.123Z","level":"WARN","msg":"node event","kind":"partition-frozen","detail":"topics/a/p00001: to n2"}
panic: boom
{"time":"2026-01-02T03:04:06Z","level":"INFO","msg":"move ended","outcome":"completed","duration_ms":1500,"bytes":2048}
{"no":"time"}
`
	var records []LogRecord
	var text []string
	require.NoError(t, ScanLog(strings.NewReader(log), func(r LogRecord) { records = append(records, r) },
		func(line string) { text = append(text, line) }))
	require.Len(t, records, 2)
	assert.Equal(t, []string{"panic: boom", `{"no":"time"}`}, text)
	assert.Equal(t, "partition-frozen", records[0].Kind())
	assert.Equal(t, "topics/a/p00001: to n2", records[0].Detail())
	assert.Equal(t, "WARN", records[0].Level)
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC), records[0].Time)
	assert.Empty(t, records[1].Kind(), "only a node event has a kind")
	assert.Equal(t, "1500", records[1].Text("duration_ms"))
	bytes, ok := records[1].Number("bytes")
	assert.True(t, ok)
	assert.Equal(t, 2048.0, bytes)
}

func TestPercentileIsNearestRank(t *testing.T) {
	assert.Zero(t, Percentile(nil, 0.5))
	assert.Equal(t, time.Duration(7), Percentile([]time.Duration{7}, 0.01))
	assert.Equal(t, time.Duration(7), Percentile([]time.Duration{7}, 0.99))
	durations := []time.Duration{4, 1, 3, 2}
	assert.Equal(t, time.Duration(2), Percentile(durations, 0.5))
	assert.Equal(t, time.Duration(4), Percentile(durations, 0.95))
	assert.Equal(t, time.Duration(4), Percentile(durations, 0.99))
	assert.Equal(t, time.Duration(1), Percentile(durations, 0))
	assert.Equal(t, []time.Duration{4, 1, 3, 2}, durations, "the input keeps its order")
}

func TestFreeAddrNeverRepeatsAndStaysOutOfTheEphemeralRange(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr, err := FreeAddr()
		require.NoError(t, err)
		require.False(t, seen[addr], "%s handed out twice", addr)
		seen[addr] = true
		_, port, _ := strings.Cut(addr, ":")
		require.Less(t, port, "32768", "port %s below the kernel's ephemeral range", port)
		require.GreaterOrEqual(t, port, "20000")
	}
}

func TestSleepContextEndsWithItsContext(t *testing.T) {
	require.NoError(t, SleepContext(context.Background(), 0))
	require.NoError(t, SleepContext(context.Background(), time.Millisecond))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, SleepContext(ended, 0), context.Canceled)
	require.ErrorIs(t, SleepContext(ended, time.Hour), context.Canceled, "an ended context cuts the pause short")
}
