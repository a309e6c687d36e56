package soak

import "time"

// Bounds of the harness: every wait is bounded, and every bound is named
// here with its unit last.
const (
	// readyTimeout bounds the wait for a node's /readyz after a (re)start:
	// a restarted node replays its metastore and finds the leader.
	readyTimeout = 60 * time.Second
	// pollInterval is the pause between two probes of a condition.
	pollInterval = 100 * time.Millisecond
	// requestTimeout bounds one client request (a long poll gets its wait
	// added); the broker's own forward timeout is shorter.
	requestTimeout = 10 * time.Second
	// probeTimeout bounds one probe of a node (metrics, members, moves).
	probeTimeout = 3 * time.Second
	// terminateTimeout bounds a graceful stop (SIGTERM): the shutdown grace
	// is 10 s, so a node still running past this is a finding.
	terminateTimeout = 30 * time.Second
	// startTriesMax bounds the starts of the initial cluster, each on new
	// ports, when another process took a port meanwhile.
	startTriesMax = 3
	// leaderTimeout bounds the wait for exactly one node to report that it
	// leads the metadata group.
	leaderTimeout = 60 * time.Second
	// settleTimeout bounds the wait for the placement to settle (no move in
	// flight, every receiver within one partition of the others).
	settleTimeout = 5 * time.Minute
	// drainedTimeout bounds the wait for a decommissioned node to own
	// nothing and leave the voter set.
	drainedTimeout = 5 * time.Minute
	// deliveryDrainTimeout bounds the end-of-run wait for the consumers to
	// have seen every acknowledged record.
	deliveryDrainTimeout = 2 * time.Minute
)

// Bounds of the replay audit.
const (
	// auditReadersMax bounds the replay reads in flight at once.
	auditReadersMax = 16
	// auditOffsetsPerTask is how many consecutive offsets one reader task
	// replays.
	auditOffsetsPerTask = 2000
	// auditRetryMax bounds the retries of one replay read that failed
	// retryably (503, no answer) before the offset counts as unreadable.
	auditRetryMax = 50
	// auditRetryPause is the pause before such a retry.
	auditRetryPause = 200 * time.Millisecond
	// missingShownMax bounds the missing records the report lists;
	// duplicatesShownMax the duplicated ones.
	missingShownMax    = 30
	duplicatesShownMax = 10
)

// Bounds of the forced-recovery step (forced.go).
const (
	// forcedProbeTimeout bounds the hunt for a move to interrupt.
	forcedProbeTimeout = 90 * time.Second
	// forcedStopSettle is how long a source stays stopped (SIGSTOP) before
	// the destination's progress is read: replies the source sent before
	// it stopped have arrived by then (loopback).
	forcedStopSettle = 30 * time.Millisecond
	// forcedRunSlice is how long the source runs between two stops: about
	// one answer to the destination, so that no phase of the move passes
	// unseen.
	forcedRunSlice = 2 * time.Millisecond
	// forcedPollInterval is the pause between two reads of the moves while
	// the step waits for a move to reach finalize.
	forcedPollInterval = 5 * time.Millisecond
	// forcedStopsPerMoveMax bounds the stops spent on one move (with the
	// settle and run slices, about 20 s: less than the freeze TTL of 30 s,
	// past which the frozen source asks for the move's abort).
	forcedStopsPerMoveMax = 500
	// forcedPromoteSlack is added to the broker's dead-after and
	// force-promote delays before the soak stops waiting for the promotion.
	forcedPromoteSlack = 60 * time.Second
)
