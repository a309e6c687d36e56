package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metricsPage renders a node's /metrics page as the figures read it:
// counters, and histograms by their _count and _sum (the parser needs no
// buckets), one request-time histogram per route; the process started at
// Unix second 1,700,000,000.
func metricsPage(rounds, records, fsyncs, groupSyncs, gatherWaits, persists int, persistSeconds float64,
	requestTime map[string][2]float64) string {
	var page strings.Builder
	page.WriteString("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7e+09\n")
	fmt.Fprintf(&page, "# TYPE narad_storage_fsyncs_total counter\nnarad_storage_fsyncs_total %d\n", fsyncs)
	fmt.Fprintf(&page, "# TYPE narad_storage_group_syncs_total counter\nnarad_storage_group_syncs_total %d\n", groupSyncs)
	fmt.Fprintf(&page, "# TYPE narad_loop_gather_waits_total counter\nnarad_loop_gather_waits_total %d\n", gatherWaits)
	fmt.Fprintf(&page, "# TYPE narad_storage_round_records histogram\nnarad_storage_round_records_bucket{le=\"+Inf\"} %d\n"+
		"narad_storage_round_records_sum %d\nnarad_storage_round_records_count %d\n", rounds, records, rounds)
	fmt.Fprintf(&page, "# TYPE narad_storage_sync_round_duration_seconds histogram\n"+
		"narad_storage_sync_round_duration_seconds_bucket{le=\"+Inf\"} %d\n"+
		"narad_storage_sync_round_duration_seconds_sum %g\nnarad_storage_sync_round_duration_seconds_count %d\n",
		persists, persistSeconds, persists)
	page.WriteString("# TYPE narad_http_request_duration_seconds histogram\n")
	for _, route := range []string{"POST /v1/topics/{topic}/produce", "GET /v1/topics/{topic}/consume", "POST /v1/topics/{topic}/ack", "GET /healthz"} {
		countAndSum, found := requestTime[route]
		if !found {
			continue
		}
		labels := fmt.Sprintf(`method=%q,route=%q,status="202"`, strings.Fields(route)[0], route)
		fmt.Fprintf(&page, "narad_http_request_duration_seconds_bucket{%s,le=\"+Inf\"} %g\n", labels, countAndSum[0])
		fmt.Fprintf(&page, "narad_http_request_duration_seconds_sum{%s} %g\n", labels, countAndSum[1])
		fmt.Fprintf(&page, "narad_http_request_duration_seconds_count{%s} %g\n", labels, countAndSum[0])
	}
	return page.String()
}

func TestServerFiguresAreTheDifferenceOfTwoReadings(t *testing.T) {
	before, err := parseServerCounters(strings.NewReader(metricsPage(5, 50, 6, 1, 2, 7, 0.007,
		map[string][2]float64{"POST /v1/topics/{topic}/produce": {50, 0.5}, "GET /healthz": {3, 30}})), producePhase)
	require.NoError(t, err)
	after, err := parseServerCounters(strings.NewReader(metricsPage(105, 1150, 112, 3, 92, 107, 0.207,
		map[string][2]float64{"POST /v1/topics/{topic}/produce": {1150, 1.6}, "GET /healthz": {9, 900}})), producePhase)
	require.NoError(t, err)
	figures, err := after.since(before)
	require.NoError(t, err)
	assert.Equal(t, 100, figures.SyncRounds)
	assert.InDelta(t, 11.0, figures.RecordsPerRound, 1e-9)
	assert.InDelta(t, 1.06, figures.FsyncsPerRound, 1e-9)
	assert.Equal(t, 2, figures.GroupSyncs)
	assert.Equal(t, 90, figures.GatherWaits)
	assert.Equal(t, 100, figures.Persists)
	assert.InDelta(t, 2.0, figures.PersistMs, 1e-9, "0.2 s over 100 persists")
	require.Len(t, figures.RequestMs, 1, "only the phase's routes: /healthz's time is not a produce's")
	assert.InDelta(t, 1.0, figures.RequestMs["produce"], 1e-9, "1.1 s over 1100 produces")
	assert.Equal(t, "100 sync rounds of 11.0 records, 1.06 fsyncs each, 2 group syncs; 100 persists of 2.00 ms; "+
		"the loop waited to gather 90 times; time in the handler per request: produce 1.00 ms", figures.describe(producePhase))
}

func TestServerFiguresOfAPhaseWithoutRoundsOrRequests(t *testing.T) {
	before, err := parseServerCounters(strings.NewReader(metricsPage(4, 40, 4, 0, 0, 4, 0.004, nil)), drainPhase)
	require.NoError(t, err)
	after, err := parseServerCounters(strings.NewReader(metricsPage(4, 40, 4, 0, 3, 4, 0.004, nil)), drainPhase)
	require.NoError(t, err)
	figures, err := after.since(before)
	require.NoError(t, err)
	assert.Zero(t, figures.SyncRounds)
	assert.Zero(t, figures.RecordsPerRound, "no division by zero rounds")
	assert.Zero(t, figures.PersistMs, "no division by zero persists")
	assert.Empty(t, figures.RequestMs)
	assert.Equal(t, "no sync round made records durable at this node, 0 group syncs; 0 persists of 0.00 ms; "+
		"the loop waited to gather 3 times; no request of this phase's routes seen", figures.describe(producePhase),
		"a node that only forwarded still says that it gathered")
	assert.Equal(t, "no request of this phase's routes seen", figures.describe(drainPhase))
}

func TestServerFiguresRefuseANodeThatRestarted(t *testing.T) {
	produced := map[string][2]float64{"POST /v1/topics/{topic}/produce": {500, 0.5}}
	before, err := parseServerCounters(strings.NewReader(metricsPage(50, 500, 50, 7, 9, 50, 0.05, produced)), producePhase)
	require.NoError(t, err)
	for name, change := range map[string]func(*serverCounters){
		"start time":   func(c *serverCounters) { c.startTime++ },
		"rounds":       func(c *serverCounters) { c.rounds-- },
		"records":      func(c *serverCounters) { c.records-- },
		"fsyncs":       func(c *serverCounters) { c.fsyncs-- },
		"group syncs":  func(c *serverCounters) { c.groupSyncs-- },
		"gather waits": func(c *serverCounters) { c.gatherWaits-- },
		"persists":     func(c *serverCounters) { c.persists-- },
		"requests":     func(c *serverCounters) { c.requests["produce"]-- },
	} {
		after, err := parseServerCounters(strings.NewReader(metricsPage(50, 500, 50, 7, 9, 50, 0.05, produced)), producePhase)
		require.NoError(t, err)
		_, err = after.since(before)
		require.NoError(t, err, "unchanged")
		change(&after)
		_, err = after.since(before)
		require.ErrorIs(t, err, errNodeRestarted, name)
	}
}

func TestServerFiguresNeedANaradPage(t *testing.T) {
	_, err := parseServerCounters(strings.NewReader("# TYPE up gauge\nup 1\n"), producePhase)
	require.ErrorContains(t, err, "the page has no narad_storage_fsyncs_total")
	_, err = parseServerCounters(strings.NewReader("narad_storage_fsyncs_total{\n"), producePhase)
	require.ErrorContains(t, err, "GET /metrics")
}

func TestBenchPrintsTheServerFiguresOfEachPhase(t *testing.T) {
	h := newHarness(t)
	produced := map[string][2]float64{"POST /v1/topics/{topic}/produce": {4, 0.008}}
	drained := map[string][2]float64{"POST /v1/topics/{topic}/produce": {4, 0.008},
		"GET /v1/topics/{topic}/consume": {5, 0.005}, "POST /v1/topics/{topic}/ack": {4, 0.002}}
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`}).
		on(consumeRoute, reply{200, textMessage}, reply{200, textMessage}, reply{200, textMessage}, reply{200, textMessage}, reply{204, ""}).
		on(ackRoute, reply{204, ""}).
		on("GET /metrics", reply{200, metricsPage(0, 0, 0, 0, 0, 0, 0, nil)}, reply{200, metricsPage(2, 4, 2, 0, 1, 2, 0.003, produced)},
			reply{200, metricsPage(2, 4, 2, 0, 1, 2, 0.003, produced)}, reply{200, metricsPage(2, 4, 2, 0, 1, 2, 0.003, drained)})
	h.againstOK(broker, "bench", "orders", "--count", "4", "--workers", "2", "--consume", "--consume-workers", "1")
	assert.Contains(t, h.stdout.String(), "server (produce): 2 sync rounds of 2.0 records, 1.00 fsyncs each, 0 group syncs; "+
		"2 persists of 1.50 ms; the loop waited to gather 1 times; time in the handler per request: produce 2.00 ms\n")
	assert.Contains(t, h.stdout.String(), "server (consume+ack): time in the handler per request: consume 1.00 ms, ack 0.50 ms\n")
	for _, request := range broker.seen("GET /metrics") {
		assert.Contains(t, request.Query, "name%5B%5D=narad_storage_fsyncs_total", "only the families the figures need")
	}
}

func TestBenchSaysWhyAServerHasNoFigures(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`})
	h.againstOK(broker, "bench", "orders", "--count", "3")
	assert.Regexp(t, `(?m)^server \(produce\): no figures \(GET /metrics: http 404: not found\)$`, h.stdout.String())

	h = newHarness(t)
	h.againstOK(broker, "bench", "orders", "--count", "3", "--json")
	var report benchReport
	require.NoError(t, json.Unmarshal(h.stdout.Bytes(), &report), h.stdout.String())
	assert.Nil(t, report.Produce.Server)
	assert.Equal(t, "GET /metrics: http 404: not found", report.Produce.ServerError)
}
