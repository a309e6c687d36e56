package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"narad/client"
	"narad/httpapi"
	"narad/proc"
)

// The node's series that explain a phase (host/metrics.go,
// httpapi/metrics.go): read from its /metrics before and after the
// phase, only these families (the page's name[] filter).
const (
	seriesRoundRecords = "narad_storage_round_records"
	seriesFsyncs       = "narad_storage_fsyncs_total"
	seriesGroupSyncs   = "narad_storage_group_syncs_total"
	seriesSyncRound    = "narad_storage_sync_round_duration_seconds"
	seriesGatherWaits  = "narad_loop_gather_waits_total"
	seriesRequestTime  = "narad_http_request_duration_seconds"
)

// The routes whose time in the server a phase reports, by the name the
// report gives them.
var (
	produceRoutes = map[string]string{"produce": httpapi.RouteProduce}
	drainRoutes   = map[string]string{"consume": httpapi.RouteConsume, "ack": httpapi.RouteAck}
)

// serverFigures explain a phase from the node the bench sent it to: the
// differences of that node's counters from the phase's start to its end.
// They count everything the node did meanwhile (other clients' requests
// too), and only that node: in a cluster, the rounds at the owners it
// forwarded records to are not in them.
type serverFigures struct {
	// SyncRounds counts the sync rounds that made records durable, and
	// RecordsPerRound and FsyncsPerRound average over them (fsyncs of
	// partition files and directories, not the metastore's; a group
	// sync's syncfs is counted in GroupSyncs instead).
	SyncRounds      int     `json:"sync_rounds"`
	RecordsPerRound float64 `json:"records_per_round"`
	FsyncsPerRound  float64 `json:"fsyncs_per_round"`
	GroupSyncs      int     `json:"group_syncs"`
	// PersistMs is the mean time the loop took to persist a Ready with
	// anything to sync (the metastore's included).
	PersistMs float64 `json:"persist_ms"`
	// GatherWaits counts the loop's rounds that waited in the gather
	// window for more requests to share their sync round.
	GatherWaits int `json:"gather_waits"`
	// RequestMs is the mean time a request spent in the node, from its
	// first byte read to its answer written, by route name (produce;
	// consume and ack).
	RequestMs map[string]float64 `json:"request_ms"`
}

// serverCounters are one reading of the node's counters.
type serverCounters struct {
	rounds, records, fsyncs, groupSyncs, gatherWaits float64
	persists, persistSeconds                         float64
	// requests and requestSeconds are by route name.
	requests, requestSeconds map[string]float64
}

// sampleServer runs phase between two readings of the counters of the
// node broker talks to and adds their difference to the phase's figures,
// or, when a reading failed, why there is none.
func sampleServer(ctx context.Context, broker *client.Client, routes map[string]string, phase func() phaseFigures) phaseFigures {
	before, err := readServerCounters(ctx, broker, routes)
	figures := phase()
	if err == nil {
		var after serverCounters
		if after, err = readServerCounters(ctx, broker, routes); err == nil {
			figures.Server, err = after.since(before)
		}
	}
	if err != nil {
		figures.ServerError = err.Error()
	}
	return figures
}

// readServerCounters reads the node's /metrics, only the families the
// figures need. A page without the node's fsync counter is no narad
// node's (or not one this bench knows): an error, not a row of zeros.
func readServerCounters(ctx context.Context, broker *client.Client, routes map[string]string) (serverCounters, error) {
	body, err := broker.Metrics(ctx, seriesRoundRecords, seriesFsyncs, seriesGroupSyncs, seriesSyncRound, seriesGatherWaits, seriesRequestTime)
	if err != nil {
		return serverCounters{}, fmt.Errorf("GET /metrics: %w", err)
	}
	return parseServerCounters(bytes.NewReader(body), routes)
}

func parseServerCounters(page io.Reader, routes map[string]string) (serverCounters, error) {
	metrics, err := proc.ParseMetrics(page)
	if err != nil {
		return serverCounters{}, fmt.Errorf("GET /metrics: %w", err)
	}
	fsyncs, found := metrics.Value(seriesFsyncs)
	if !found {
		return serverCounters{}, errors.New("GET /metrics: the page has no " + seriesFsyncs)
	}
	counters := serverCounters{fsyncs: fsyncs, requests: map[string]float64{}, requestSeconds: map[string]float64{}}
	counters.groupSyncs, _ = metrics.Value(seriesGroupSyncs)
	counters.gatherWaits, _ = metrics.Value(seriesGatherWaits)
	counters.rounds, counters.records = metrics.HistogramOf(seriesRoundRecords, nil)
	counters.persists, counters.persistSeconds = metrics.HistogramOf(seriesSyncRound, nil)
	for name, route := range routes {
		counters.requests[name], counters.requestSeconds[name] = metrics.HistogramOf(seriesRequestTime, map[string]string{"route": route})
	}
	return counters, nil
}

// since is what happened between an earlier reading and this one; an
// error if the counters went back (the node restarted meanwhile: they are
// a process's).
func (c serverCounters) since(earlier serverCounters) (*serverFigures, error) {
	if c.fsyncs < earlier.fsyncs || c.rounds < earlier.rounds || c.persists < earlier.persists {
		return nil, errors.New("the node's counters went back: it restarted during the phase")
	}
	figures := &serverFigures{SyncRounds: int(c.rounds - earlier.rounds), GroupSyncs: int(c.groupSyncs - earlier.groupSyncs),
		GatherWaits: int(c.gatherWaits - earlier.gatherWaits), RequestMs: map[string]float64{}}
	if figures.SyncRounds > 0 {
		rounds := float64(figures.SyncRounds)
		figures.RecordsPerRound = (c.records - earlier.records) / rounds
		figures.FsyncsPerRound = (c.fsyncs - earlier.fsyncs) / rounds
	}
	if persists := c.persists - earlier.persists; persists > 0 {
		figures.PersistMs = 1000 * (c.persistSeconds - earlier.persistSeconds) / persists
	}
	for name, requests := range c.requests {
		if requests -= earlier.requests[name]; requests > 0 {
			figures.RequestMs[name] = 1000 * (c.requestSeconds[name] - earlier.requestSeconds[name]) / requests
		}
	}
	return figures, nil
}

// printServer prints the server's figures of each phase that has them,
// and why a phase has none.
func (a *app) printServer(report benchReport) {
	for _, phase := range []struct {
		label   string
		figures *phaseFigures
		routes  []string
	}{{"produce", &report.Produce, []string{"produce"}}, {"consume+ack", report.Consume, []string{"consume", "ack"}}} {
		switch {
		case phase.figures == nil:
		case phase.figures.Server != nil:
			fmt.Fprintf(a.stdout, "server (%s): %s\n", phase.label, phase.figures.Server.describe(phase.label == "produce", phase.routes))
		case phase.figures.ServerError != "":
			fmt.Fprintf(a.stdout, "server (%s): no figures (%s)\n", phase.label, phase.figures.ServerError)
		}
	}
}

// describe puts the figures in words: the rounds (for a produce phase),
// then the time each route's requests spent in the server.
func (f *serverFigures) describe(rounds bool, routes []string) string {
	var parts []string
	switch {
	case !rounds:
	case f.SyncRounds == 0:
		parts = append(parts, "no sync round made records durable at this node")
	default:
		parts = append(parts, fmt.Sprintf("%d sync rounds of %.1f records, %.2f fsyncs each (%d group syncs), %.2f ms to persist; %d waited to gather",
			f.SyncRounds, f.RecordsPerRound, f.FsyncsPerRound, f.GroupSyncs, f.PersistMs, f.GatherWaits))
	}
	var times []string
	for _, route := range routes {
		if ms, found := f.RequestMs[route]; found {
			times = append(times, fmt.Sprintf("%s %.2f ms", route, ms))
		}
	}
	if len(times) > 0 {
		parts = append(parts, "time in the server per request: "+strings.Join(times, ", "))
	}
	return strings.Join(parts, "; ")
}
