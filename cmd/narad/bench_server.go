package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"narad/client"
	"narad/httpapi"
	"narad/proc"
)

// The node's series that explain a phase (host/metrics.go,
// httpapi/metrics.go, and the process collector's start time): read from
// its /metrics before and after the phase, only these families (the
// page's name[] filter).
const (
	seriesRoundRecords = "narad_storage_round_records"
	seriesFsyncs       = "narad_storage_fsyncs_total"
	seriesGroupSyncs   = "narad_storage_group_syncs_total"
	seriesSyncRound    = "narad_storage_sync_round_duration_seconds"
	seriesGatherWaits  = "narad_loop_gather_waits_total"
	seriesRequestTime  = "narad_http_request_duration_seconds"
	seriesStartTime    = "process_start_time_seconds"
)

// serverReadTimeout bounds each reading of the node's counters, so that a
// /metrics that hangs costs a phase at most this twice; it holds after the
// bench is interrupted too, so that a phase cut short keeps its figures.
const serverReadTimeout = 5 * time.Second

// serverPhase is what a phase's server line reports: its label, whether
// the node's sync rounds (produce), and the time in the handler of its
// routes, in the order printed.
type serverPhase struct {
	label  string
	rounds bool
	routes []namedRoute
}

// namedRoute is a route (its ServeMux pattern, the metrics' route label)
// and the name the report gives it.
type namedRoute struct{ name, pattern string }

var (
	producePhase = serverPhase{label: "produce", rounds: true, routes: []namedRoute{{"produce", httpapi.RouteProduce}}}
	drainPhase   = serverPhase{label: "consume+ack", routes: []namedRoute{{"consume", httpapi.RouteConsume}, {"ack", httpapi.RouteAck}}}
)

// serverFigures explain a phase from the node the bench sent it to: the
// differences of that node's counters from the phase's start to its end.
// They count everything the node did meanwhile (other clients' requests,
// fan-out copies), and only that node: in a cluster, the rounds at the
// owners it forwarded records to are not in them.
type serverFigures struct {
	// SyncRounds counts the sync rounds that made records durable, and
	// RecordsPerRound and FsyncsPerRound average over them (fsyncs of
	// partition files and directories, not the metastore's; a group
	// sync's syncfs calls, one or more a round, are counted in GroupSyncs
	// instead).
	SyncRounds      int     `json:"sync_rounds"`
	RecordsPerRound float64 `json:"records_per_round"`
	FsyncsPerRound  float64 `json:"fsyncs_per_round"`
	GroupSyncs      int     `json:"group_syncs"`
	// Persists counts the loop's persists of a Ready with anything to sync
	// (records, the metastore's entries, offsets, cursors), and PersistMs
	// is their mean time.
	Persists  int     `json:"persists"`
	PersistMs float64 `json:"persist_ms"`
	// GatherWaits counts the rounds of the loop that waited in the gather
	// window for more requests to share their sync round.
	GatherWaits int `json:"gather_waits"`
	// RequestMs is the mean time a request spent in the node's handler,
	// from its start (the headers read) to its return, by route name
	// (produce; consume and ack).
	RequestMs map[string]float64 `json:"request_ms"`
}

// serverCounters are one reading of the node's counters.
type serverCounters struct {
	rounds, records, fsyncs, groupSyncs, gatherWaits float64
	persists, persistSeconds                         float64
	// startTime is the node process's start (Unix seconds), 0 where its
	// page does not say.
	startTime float64
	// requests and requestSeconds are by route name.
	requests, requestSeconds map[string]float64
}

// serverSample is a phase's first reading of the counters of the node
// broker talks to, or why it failed.
type serverSample struct {
	broker *client.Client
	phase  serverPhase
	before serverCounters
	err    error
}

// startServerSample reads the node's counters as a phase starts.
func startServerSample(ctx context.Context, broker *client.Client, phase serverPhase) *serverSample {
	sample := &serverSample{broker: broker, phase: phase}
	sample.before, sample.err = readServerCounters(ctx, broker, phase)
	return sample
}

// finish reads the counters again as the phase ends and puts their
// difference in figures, or why there is none.
func (s *serverSample) finish(ctx context.Context, figures *phaseFigures) {
	err := s.err
	if err == nil {
		var after serverCounters
		if after, err = readServerCounters(ctx, s.broker, s.phase); err == nil {
			figures.Server, err = after.since(s.before)
		}
	}
	if err != nil {
		figures.ServerError = err.Error()
	}
}

// sampleServer runs phase between two readings of the node's counters.
func sampleServer(ctx context.Context, broker *client.Client, phase serverPhase, run func() phaseFigures) phaseFigures {
	sample := startServerSample(ctx, broker, phase)
	figures := run()
	sample.finish(ctx, &figures)
	return figures
}

// readServerCounters reads the node's /metrics, only the families the
// figures need, within serverReadTimeout even once ctx is done.
func readServerCounters(ctx context.Context, broker *client.Client, phase serverPhase) (serverCounters, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serverReadTimeout)
	defer cancel()
	body, err := broker.Metrics(ctx, seriesRoundRecords, seriesFsyncs, seriesGroupSyncs, seriesSyncRound, seriesGatherWaits,
		seriesRequestTime, seriesStartTime)
	if err != nil {
		return serverCounters{}, fmt.Errorf("GET /metrics: %w", err)
	}
	return parseServerCounters(bytes.NewReader(body), phase)
}

// parseServerCounters reads the counters off a /metrics page, the request
// times of phase's routes only. A page without the node's fsync counter
// is no narad node's (or not one this bench knows): an error, not a row
// of zeros.
func parseServerCounters(page io.Reader, phase serverPhase) (serverCounters, error) {
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
	counters.startTime, _ = metrics.Value(seriesStartTime)
	counters.rounds, counters.records = metrics.HistogramOf(seriesRoundRecords, nil)
	counters.persists, counters.persistSeconds = metrics.HistogramOf(seriesSyncRound, nil)
	for _, route := range phase.routes {
		counters.requests[route.name], counters.requestSeconds[route.name] =
			metrics.HistogramOf(seriesRequestTime, map[string]string{"route": route.pattern})
	}
	return counters, nil
}

// errNodeRestarted: the counters are a process's, so a restart between
// two readings leaves their difference meaningless.
var errNodeRestarted = errors.New("the node restarted during the phase (its start time changed, or its counters went back)")

// since is what happened between an earlier reading and this one; an
// error if the node restarted meanwhile: its process start time changed
// (where its page gives one), or a counter went back.
func (c serverCounters) since(earlier serverCounters) (*serverFigures, error) {
	if c.restartedSince(earlier) {
		return nil, errNodeRestarted
	}
	figures := &serverFigures{SyncRounds: int(c.rounds - earlier.rounds), GroupSyncs: int(c.groupSyncs - earlier.groupSyncs),
		Persists: int(c.persists - earlier.persists), GatherWaits: int(c.gatherWaits - earlier.gatherWaits),
		RequestMs: map[string]float64{}}
	if figures.SyncRounds > 0 {
		rounds := float64(figures.SyncRounds)
		figures.RecordsPerRound = (c.records - earlier.records) / rounds
		figures.FsyncsPerRound = (c.fsyncs - earlier.fsyncs) / rounds
	}
	if figures.Persists > 0 {
		figures.PersistMs = 1000 * (c.persistSeconds - earlier.persistSeconds) / float64(figures.Persists)
	}
	for name, requests := range c.requests {
		if requests -= earlier.requests[name]; requests > 0 {
			figures.RequestMs[name] = 1000 * (c.requestSeconds[name] - earlier.requestSeconds[name]) / requests
		}
	}
	return figures, nil
}

// restartedSince says whether the node's process changed between the
// two readings: its start time differs, or a counter went back.
func (c serverCounters) restartedSince(earlier serverCounters) bool {
	if c.startTime != earlier.startTime || c.rounds < earlier.rounds || c.records < earlier.records ||
		c.fsyncs < earlier.fsyncs || c.groupSyncs < earlier.groupSyncs || c.gatherWaits < earlier.gatherWaits ||
		c.persists < earlier.persists {
		return true
	}
	for name, requests := range c.requests {
		if requests < earlier.requests[name] {
			return true
		}
	}
	return false
}

// printServer prints the server's figures of each phase that has them,
// and why a phase has none.
func (a *app) printServer(report benchReport) {
	for _, phase := range []struct {
		serverPhase
		figures *phaseFigures
	}{{producePhase, &report.Produce}, {drainPhase, report.Consume}} {
		switch {
		case phase.figures == nil:
		case phase.figures.Server != nil:
			fmt.Fprintf(a.stdout, "server (%s): %s\n", phase.label, phase.figures.Server.describe(phase.serverPhase))
		case phase.figures.ServerError != "":
			fmt.Fprintf(a.stdout, "server (%s): no figures (%s)\n", phase.label, phase.figures.ServerError)
		}
	}
}

// describe puts the figures in words: the rounds (for a produce phase),
// then the time each route's requests spent in the server's handler.
func (f *serverFigures) describe(phase serverPhase) string {
	var parts []string
	if phase.rounds {
		parts = append(parts, f.describeRounds())
	}
	var times []string
	for _, route := range phase.routes {
		if ms, found := f.RequestMs[route.name]; found {
			times = append(times, fmt.Sprintf("%s %.2f ms", route.name, ms))
		}
	}
	if len(times) > 0 {
		parts = append(parts, "time in the handler per request: "+strings.Join(times, ", "))
	} else {
		parts = append(parts, "no request of this phase's routes seen")
	}
	return strings.Join(parts, "; ")
}

func (f *serverFigures) describeRounds() string {
	rounds := "no sync round made records durable at this node"
	if f.SyncRounds > 0 {
		rounds = fmt.Sprintf("%d sync rounds of %.1f records, %.2f fsyncs each", f.SyncRounds, f.RecordsPerRound, f.FsyncsPerRound)
	}
	return fmt.Sprintf("%s, %d group syncs; %d persists of %.2f ms; the loop waited to gather %d times",
		rounds, f.GroupSyncs, f.Persists, f.PersistMs, f.GatherWaits)
}
