package sim

import (
	"fmt"
	"sort"
	"strings"

	"narad/chaos"
)

// Report is what one run did and found.
type Report struct {
	Seed uint64
	// Nodes is the world's node count at the start (-nodes reproduces
	// it); Moves and Users say whether it ran the moves scenario
	// (-moves) and the users scenario (-users).
	Nodes int
	Moves bool
	// Weather says whether the run's safety phase had lulls (-weather).
	Weather bool
	// MediaInClusters, DiskPressure and LateSyncs are the run's options
	// of the same names (-media-clusters, -disk-pressure, -late-syncs):
	// off in regression seeds and the planted-bug sweeps unless asked, so
	// the reproduce line names them.
	MediaInClusters, DiskPressure, LateSyncs bool
	Users                                    bool
	// Fanout says whether it ran the fan-out scenario.
	Fanout  bool
	Profile string
	// DeadLetters says whether the run had the dead-letters scenario
	// (-deadletters); DeadLettersSettled counts the records nodes
	// acknowledged as dead letters, DeadLettersDelivered the dead
	// letters its consumer received.
	DeadLetters                              bool
	DeadLettersSettled, DeadLettersDelivered int
	// DeadLettersAimed says whether it had the doomed topics
	// (-deadletters-aimed); DoomedRounds counts the doomed topics deleted,
	// DoomedDelivered their dead letters the consumer took.
	DeadLettersAimed              bool
	DoomedRounds, DoomedDelivered int
	// FanoutAgedOut says whether it was the aged-out fan-out world
	// (-fanout-aged-out); AgedOutRanges counts the offset ranges retention
	// took from the topic, AgedOutExcused the records answered 202 that a
	// child lacked because retention took them first.
	FanoutAgedOut                 bool
	AgedOutRanges, AgedOutExcused int
	// SafetyMs is the run's safety phase (-duration reproduces it).
	SafetyMs    int64
	TraceHash   uint64
	Events      int
	SimMs       int64
	WallSeconds float64
	accounting
	// Faults injected, by kind, sorted by kind.
	Faults []chaos.Count
	// Marks are the coverage marks the core reached, sorted by name.
	Marks []chaos.Count
	// SitesOn says whether the core's fault sites were on (-sites),
	// SitesFirePercent how often an enabled one fired when reached, and
	// SitesFired the firings by site, sorted by name.
	SitesOn          bool
	SitesFirePercent int
	SitesFired       []chaos.Count
	// LogOperations were checked for log consistency with result
	// LogResult (the one-pass check's verdict, which porcupine confirmed
	// or, PorcupineUnknown, could not finish in its budget: that depends
	// on the machine's speed, so it stays out of the summary line).
	LogOperations    int
	LogResult        string
	PorcupineUnknown bool
	// PeerSent counts the messages nodes sent each other, by kind;
	// PeerDropped those the network lost, by cause; StepErrors those a
	// node refused, by kind. All sorted by name.
	PeerSent, PeerDropped, StepErrors []chaos.Count
	// PeerUnreachable counts the failed connection attempts the nodes
	// were told of (PeerUnreachable).
	PeerUnreachable int
	// FailoversMs are the measured failovers: from a leader's kill to the
	// first moment another node leads and applied an entry of its term.
	FailoversMs []int64
	// LateJoinMs is how long the late joiner of a moves world took from
	// its start to serving, and LateJoinCompactedAt the snapshot index the
	// cluster had then; -1 when there was no late join or it never served.
	LateJoinMs          int64
	LateJoinCompactedAt uint64
	// Owners is how many nodes own partitions of the topic at the end;
	// MovesStarted, MovesCompleted, MovesForced and MovesAborted count the
	// committed targets, flips (force-promotions among them) and aborts.
	Owners, MovesStarted, MovesCompleted, MovesForced, MovesAborted int
	// FreezeMsMax is the longest freeze a move's source held;
	// MoveOutcomes count the moves the destinations ended, by outcome,
	// sorted; MoveBytesCopied is what they copied.
	FreezeMsMax     int64
	MoveOutcomes    []chaos.Count
	MoveBytesCopied int64
	// Misdirected counts requests answered 421 (a partition that moved
	// while they were under way, or a node that had not learned of a
	// move), by kind, sorted.
	Misdirected []chaos.Count
	// AckRetries counts ack requests clients sent again (a lost answer or
	// a 503); AckRetriesLanded the handles of those whose ack had landed
	// before (each answered 204, or the run failed); RedeliveredAfterLoss
	// the deliveries of records whose ack landed and may have been lost
	// since (a restart, a move), which are allowed.
	AckRetries, AckRetriesLanded, RedeliveredAfterLoss int
	// UserChanges counts the users scenario's changes handed to nodes;
	// UsersFinal the users of the committed log at the end; RootSeeds
	// the root seeds it applied.
	UserChanges, UsersFinal, RootSeeds int
	// RemovalsJudged counts the removals of partition directories the
	// removal checker judged against the committed placement.
	RemovalsJudged int
	// RemovalsOldJobDrops counts the removals excused as a move job,
	// returning after its topic was deleted, dropping its own install.
	RemovalsOldJobDrops int
	// StaleCreationsRemoved counts the partition directories of another
	// creation of their topic that nodes removed before opening the
	// committed topic's partition there (the node's event
	// stale-partition-removed).
	StaleCreationsRemoved int
	// OracleChecks counts what the oracles checked, by oracle, sorted.
	OracleChecks []chaos.Count
	// Failure is the first checker that failed, nil for a clean run.
	Failure *Failure
	// TraceTail holds the last trace lines, for a failure report.
	TraceTail []string
}

func (w *World) report() Report {
	doomedRounds, doomedDelivered := w.deadLetters.doomedCounts()
	return Report{
		Seed: w.opts.Seed, Nodes: w.opts.Nodes, Moves: w.moves != nil, Weather: w.weather != nil, MediaInClusters: w.opts.MediaInClusters, DiskPressure: w.opts.DiskPressure, LateSyncs: w.opts.LateSyncs, Users: w.users != nil, Fanout: w.opts.Fanout, Profile: w.opts.Faults.Name, SafetyMs: w.opts.SafetyMs, TraceHash: w.trace.sum(), Events: w.trace.events,
		SimMs: w.nowMs, accounting: w.history.account(), Faults: sortedCounts(w.faults), Marks: chaos.Marks(), SitesFired: firedSites(),
		PeerSent: sortedCounts(w.peers.sent), PeerDropped: sortedCounts(w.peers.dropped), StepErrors: sortedCounts(w.stepErrors),
		PeerUnreachable: total(w.peers.unreachable),
		FailoversMs:     w.raft.failoversMs, Owners: w.owners.ownerCount(), LateJoinMs: w.lateJoinMs(),
		LateJoinCompactedAt: w.lateJoinCompactedAt(),
		MovesStarted:        w.metaLog.movesStarted, MovesCompleted: w.metaLog.movesCompleted, MovesForced: w.metaLog.movesForced,
		MovesAborted: w.metaLog.movesAborted, FreezeMsMax: w.moveStats.freezeMsMax(),
		Misdirected: sortedCounts(w.history.misdirected), MoveOutcomes: sortedCounts(w.moveStats.outcomes),
		MoveBytesCopied: w.moveStats.bytesCopied,
		AckRetries:      w.acks.retries, AckRetriesLanded: w.acks.retriedLanded, RedeliveredAfterLoss: w.acks.redeliveredAfterLoss,
		UserChanges: w.userChangesSent(), UsersFinal: len(w.metaLog.users.users), RootSeeds: w.metaLog.users.seeds,
		LogOperations: w.logOperations, LogResult: w.logResult, PorcupineUnknown: w.porcupineUnknown, OracleChecks: sortedCounts(w.oracleCounts()), RemovalsJudged: w.removals.judged, RemovalsOldJobDrops: w.removals.oldJobDrops, StaleCreationsRemoved: w.staleCreationsRemoved, Failure: w.failure, TraceTail: w.trace.last(),
		DeadLetters: w.deadLetters != nil, DeadLettersSettled: w.deadLetters.settledCount(), DeadLettersDelivered: w.deadLetters.deliveredCount(),
		DeadLettersAimed: w.opts.DeadLettersAimed, DoomedRounds: doomedRounds, DoomedDelivered: doomedDelivered,
		FanoutAgedOut: w.agedOut != nil, AgedOutRanges: w.agedOut.rangesRemoved(), AgedOutExcused: w.agedOut.excusedCount(),
	}
}

func total(counts map[string]int) int {
	sum := 0
	for _, count := range counts { //determinism:ok a sum
		sum += count
	}
	return sum
}

func sortedCounts(counts map[string]int) []chaos.Count {
	out := make([]chaos.Count, 0, len(counts))
	for name, count := range counts { //determinism:ok sorted below
		out = append(out, chaos.Count{Name: name, Count: count})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Summary is the one-line account of a run.
func (r Report) Summary() string {
	status := "ok"
	if r.Failure != nil {
		status = "FAIL " + r.Failure.Checker
	}
	cluster := ""
	if r.Nodes > 1 {
		cluster = fmt.Sprintf(" owners=%d moves_started=%d moves=%d forced=%d aborted=%d freeze_ms_max=%d move_outcomes=[%s] move_bytes=%d misdirected=[%s] failovers_ms=%v late_join_ms=%d late_join_compacted_at=%d unreachable=%d peer_sent=[%s] peer_dropped=[%s] step_errors=[%s]",
			r.Owners, r.MovesStarted, r.MovesCompleted, r.MovesForced, r.MovesAborted, r.FreezeMsMax, countsString(r.MoveOutcomes), r.MoveBytesCopied, countsString(r.Misdirected), r.FailoversMs, r.LateJoinMs, r.LateJoinCompactedAt, r.PeerUnreachable, countsString(r.PeerSent), countsString(r.PeerDropped), countsString(r.StepErrors))
	}
	if r.DeadLetters {
		cluster += fmt.Sprintf(" dead_letters_settled=%d dead_letters_delivered=%d", r.DeadLettersSettled, r.DeadLettersDelivered)
	}
	if r.DeadLettersAimed {
		cluster += fmt.Sprintf(" doomed_rounds=%d doomed_dead_letters=%d", r.DoomedRounds, r.DoomedDelivered)
	}
	if r.FanoutAgedOut {
		cluster += fmt.Sprintf(" aged_out_ranges=%d aged_out_excused=%d", r.AgedOutRanges, r.AgedOutExcused)
	}
	return fmt.Sprintf("seed=%d nodes=%d profile=%s %s acked=%d delivered=%d lost=%d duplicated=%d unexpected=%d recovered=%d ack_retries=%d ack_retries_landed=%d redelivered_after_lost_ack=%d log_ops=%d log=%s oracles=[%s] faults=[%s] marks=%d %s sim_s=%.1f wall_s=%.2f trace-hash=%016x%s",
		r.Seed, r.Nodes, r.Profile, status, r.Acked, r.Delivered, r.Lost, r.Duplicated, r.Unexpected, r.Recovered,
		r.AckRetries, r.AckRetriesLanded, r.RedeliveredAfterLoss, r.LogOperations, r.LogResult, countsString(r.OracleChecks), countsString(r.Faults), len(r.Marks), r.sitesSummary(), float64(r.SimMs)/1000, r.WallSeconds, r.TraceHash, cluster)
}

// weatherFlag is the -weather value that reproduces the run.
func (r Report) weatherFlag() WeatherMode {
	if r.Weather {
		return WeatherOn
	}
	return WeatherOff
}

// FailureText is the full account of a failed run: the checker, the last
// events and the command that reproduces it.
func (r Report) FailureText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d failed: %v\n", r.Seed, r.Failure)
	fmt.Fprintf(&b, "last %d events:\n", len(r.TraceTail))
	for _, line := range r.TraceTail {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	fmt.Fprintf(&b, "reproduce: go test ./sim -run 'TestSim$' -seed=%d -nodes=%d -moves=%t -users=%t -deadletters=%t -deadletters-aimed=%t -fanout=%t -fanout-aged-out=%t -faults=%s -sites=%s -weather=%s -disk-pressure=%t -late-syncs=%t%s -duration=%dms -v\n",
		r.Seed, r.Nodes, r.Moves, r.Users, r.DeadLetters, r.DeadLettersAimed, r.Fanout, r.FanoutAgedOut, r.Profile, r.sitesFlag(), r.weatherFlag(),
		r.DiskPressure, r.LateSyncs, r.mediaFlag(), r.SafetyMs)
	return b.String()
}

// mediaFlag is the -media-clusters flag of the reproduce line: only
// three-node moves worlds draw the media fault, and TestSim refuses the
// flag turned off elsewhere.
func (r Report) mediaFlag() string {
	if r.Nodes != 3 || !r.Moves {
		return ""
	}
	return fmt.Sprintf(" -media-clusters=%t", r.MediaInClusters)
}

func countsString(counts []chaos.Count) string {
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Count)
	}
	return strings.Join(parts, " ")
}

func formatHash(hash uint64) string { return fmt.Sprintf("%016x", hash) }
