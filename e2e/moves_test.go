package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Shape and bounds of TestClusterScaleUpAndDecommissionUnderLoad.
const (
	scaleTopic        = "moving"
	scalePartitions   = 12
	scaleVisibilityMs = 5_000 // leases lost with a move come back soon
	// scaleFillRecords records of fillPayloadBytes (96 MiB, 8 MiB a
	// partition: more than one CatchUp pass at the 4 MiB lag bound) are
	// written before the load starts, and scaleWarmupRecords of the load
	// are acknowledged before the fourth node starts, so that the moves
	// copy data written long before them as well as during.
	scaleFillRecords   = 6_144
	scaleWarmupRecords = 3_000
	// scaleRebalanceTimeout bounds each phase's wait for a balanced
	// placement (join, then decommission).
	scaleRebalanceTimeout = 60 * time.Second
	// scaleVoterRemovalTimeout bounds the wait for the leader to propose
	// the drained node's removal from the voter set.
	scaleVoterRemovalTimeout = 20 * time.Second
	// scaleLoadBetweenPhases keeps the load running on each new
	// placement before the next change.
	scaleLoadBetweenPhases = 3 * time.Second
	scaleDrainTimeout      = 45 * time.Second
	// scaleQuorumTimeout bounds the proof that the voter set shrank.
	scaleQuorumTimeout = 30 * time.Second
	// scaleQuorumAttemptTimeout bounds one metadata write of that proof.
	scaleQuorumAttemptTimeout = 5 * time.Second
	scaleTestTimeout          = 4 * time.Minute
)

// TestClusterScaleUpAndDecommissionUnderLoad runs three processes under a
// steady load of keyless single and batch produces and of consumes with
// acks through every node, starts a fourth that joins the cluster and
// receives its share of the twelve partitions, then decommissions n2
// with the CLI until it owns nothing and the leader removes it from the
// voter set. No produce may be refused or go unanswered (no node is ever
// down), every record answered 202 must be consumed, and a replay read
// of each must find it at the partition and offset its 202 reported.
// Finally n2 and n4 are killed: if n2 left the voter set, n1 and n3 are
// a quorum of the three voters left and accept a metadata write. It logs
// the records, duplicates, moves by outcome, freeze times, copy
// throughput and the wall time of each phase.
func TestClusterScaleUpAndDecommissionUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scaleTestTimeout)
	defer cancel()
	run := startScaleRun(ctx, t)
	run.joinFourthNode()
	run.decommissionSecondNode()
	run.stopLoadAndCheck()
	run.c.proveVoterRemoved(ctx, run.c.node("n2"), run.c.node("n4"))
}

// scaleRun is one run of TestClusterScaleUpAndDecommissionUnderLoad: the
// cluster, its load, and when each phase began and ended.
type scaleRun struct {
	ctx     context.Context
	t       *testing.T
	c       *testCluster
	load    *moveLoad
	clients map[string]*nodeClients
	// Phase boundaries, set as the run reaches them.
	joinStarted, joinBalancedAt, decommissionStarted, drainedAt time.Time
}

// startScaleRun starts n1..n3, creates the topic, prefills it and starts
// the load through every node, until the warmup is acknowledged.
func startScaleRun(ctx context.Context, t *testing.T) *scaleRun {
	c := startTestCluster(t, 3)
	n1 := c.nodes[0]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: scaleTopic, Partitions: scalePartitions, VisibilityTimeoutMs: scaleVisibilityMs})
	waitPlacement(ctx, t, n1, scaleRebalanceTimeout, "initial placement over n1..n3", func(p placement) bool {
		return p.balancedOver(scalePartitions, "n1", "n2", "n3")
	})
	run := &scaleRun{ctx: ctx, t: t, c: c, load: newMoveLoad(scaleTopic), clients: map[string]*nodeClients{}}
	run.load.prefill(ctx, t, n1, scaleFillRecords)
	for _, n := range c.nodes {
		run.clients[n.id] = run.load.attach(ctx, n)
	}
	run.load.waitAcknowledged(ctx, t, scaleFillRecords+scaleWarmupRecords)
	return run
}

// joinFourthNode starts n4, puts load on it too, and waits until it owns
// its share and no move is in flight; the load then runs a while longer.
func (r *scaleRun) joinFourthNode() {
	r.joinStarted = time.Now()
	r.t.Logf("starting n4 (joins n1..n3) with %d records acknowledged", r.load.acknowledgedCount())
	n4 := r.c.addJoiningNode("n4")
	r.c.waitReady(n4)
	joinReady := time.Since(r.joinStarted)
	r.clients[n4.id] = r.load.attach(r.ctx, n4)
	joined := waitPlacement(r.ctx, r.t, r.c.nodes[0], scaleRebalanceTimeout, "placement balanced over n1..n4", func(p placement) bool {
		return p.balancedOver(scalePartitions, "n1", "n2", "n3", "n4")
	})
	r.joinBalancedAt = time.Now()
	r.t.Logf("join: n4 ready after %s, placement balanced after %s: %v", joinReady.Round(time.Millisecond),
		r.joinBalancedAt.Sub(r.joinStarted).Round(time.Millisecond), joined)
	require.NoError(r.t, proc.SleepContext(r.ctx, scaleLoadBetweenPhases))
}

// decommissionSecondNode decommissions n2 with the CLI, waits until it
// owns nothing and the leader proposed its removal from the voter set,
// then takes it out of the clients' rotation, as an operator would.
func (r *scaleRun) decommissionSecondNode() {
	n1, n2 := r.c.nodes[0], r.c.nodes[1]
	r.decommissionStarted = time.Now()
	runCLI(r.t, r.c.nodes[2], "cluster", "decommission", n2.id)
	drained := waitPlacement(r.ctx, r.t, n1, scaleRebalanceTimeout, "n2 drained and the placement balanced over n1, n3, n4", func(p placement) bool {
		m, ok := p.member(n2.id)
		return ok && m.Draining && p.balancedOver(scalePartitions, "n1", "n3", "n4")
	})
	r.drainedAt = time.Now()
	removal := r.c.waitEvent(r.ctx, "voter-removal-proposed", n2.id+" ", scaleVoterRemovalTimeout)
	r.t.Logf("decommission: n2 drained after %s (%v); %s proposed its removal from the voter set %s after the decommission",
		r.drainedAt.Sub(r.decommissionStarted).Round(time.Millisecond), drained, removal.Node,
		removal.Time.Sub(r.decommissionStarted).Round(time.Millisecond))
	r.clients[n2.id].stopProducing()
	r.clients[n2.id].stopConsuming()
	require.NoError(r.t, proc.SleepContext(r.ctx, scaleLoadBetweenPhases))
}

// stopLoadAndCheck stops the producers, drains, audits, logs the figures
// and checks them.
func (r *scaleRun) stopLoadAndCheck() {
	t, remaining := r.t, []string{"n1", "n3", "n4"}
	for _, id := range remaining {
		r.clients[id].stopProducing()
	}
	missingShown, missing := r.load.drain(r.ctx, scaleDrainTimeout)
	for _, id := range remaining {
		r.clients[id].stopConsuming()
	}
	totals := r.load.totals()
	totals.log(t)
	r.logLatencies()
	audit := r.load.audit(r.ctx, []*clusterNode{r.c.node("n1"), r.c.node("n3"), r.c.node("n4")})
	t.Logf("audit: %d records read back by replay, %d not where their 202 said (%d reads answered 503 or not at all, retried)",
		totals.acknowledged, audit.wrong, audit.retried)
	moves := r.c.logMoveReport(r.ctx, t)

	assert.Empty(t, totals.refusals, "produce requests refused while every node was up")
	assert.Empty(t, totals.unanswered, "produce requests with no answer while every node was up")
	assert.Zero(t, missing, "records answered 202 and never consumed (first %d: %v)", moveLoadShownMax, missingShown)
	assert.Zero(t, audit.wrong, "records not found by replay at their 202's placement (first %d: %v)", moveLoadShownMax, audit.shown)
	assert.Zero(t, totals.corruptDeliveries, "delivered payloads that differ from what was produced")
	assert.Zero(t, moves.byOutcome["force_promoted"], "moves force-promoted although no node died")
}

// logLatencies logs the produce latencies of each phase.
func (r *scaleRun) logLatencies() {
	r.t.Logf("produce latency: before the join %s; join to balanced %s; decommission to drained %s; afterwards %s",
		latencyText(r.load.latenciesBetween("", time.Time{}, r.joinStarted)),
		latencyText(r.load.latenciesBetween("", r.joinStarted, r.joinBalancedAt)),
		latencyText(r.load.latenciesBetween("", r.decommissionStarted, r.drainedAt)),
		latencyText(r.load.latenciesBetween("", r.drainedAt, time.Now())))
}

// waitEvent waits until a node's log holds a node event of kind whose
// detail starts with detailPrefix, and returns the first such event.
func (c *testCluster) waitEvent(ctx context.Context, kind, detailPrefix string, timeout time.Duration) proc.LogRecord {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, e := range eventsOfKind(c.clusterEvents(), kind) {
			if strings.HasPrefix(e.Detail(), detailPrefix) {
				return e
			}
		}
		require.NoError(c.t, proc.SleepContext(ctx, placementPollInterval), "waiting for a %s event", kind)
	}
	c.t.Fatalf("no node logged a %s event for %q within %s", kind, detailPrefix, timeout)
	return proc.LogRecord{}
}

// logMoveReport logs what the nodes' metrics and logs say about the moves
// and returns the metrics' summary.
func (c *testCluster) logMoveReport(ctx context.Context, t *testing.T) moveSummary {
	t.Helper()
	summary := summarizeMoveMetrics(c.clusterMetrics(ctx))
	t.Logf("moves (metrics summed over nodes): completed %.0f, force_promoted %.0f, aborted %.0f; %.0f bytes copied in %.2f s of moves: %.2f MB/s",
		summary.byOutcome["completed"], summary.byOutcome["force_promoted"], summary.byOutcome["aborted"],
		summary.bytesCopied, summary.durationSeconds, summary.copyMegabytesPerSecond())
	t.Logf("freeze (histogram, %.0f freezes): p50 <= %s, p99 <= %s", summary.freezeObservations,
		secondsText(summary.freezeP50Bound), secondsText(summary.freezeP99Bound))
	events := c.clusterEvents()
	freezes := freezesFromLogs(events)
	var durations []time.Duration
	flipped := 0
	for _, f := range freezes {
		durations = append(durations, f.duration)
		if f.flipped {
			flipped++
		}
	}
	t.Logf("freeze (log lines partition-frozen to moved-away/unfrozen): %d freezes (%d ended by a flip), p50 %s, p99 %s, max %s",
		len(freezes), flipped, proc.Percentile(durations, 0.50), proc.Percentile(durations, 0.99), proc.Percentile(durations, 1))
	for _, e := range events {
		if e.Message == proc.MoveEndedMessage {
			t.Logf("  move into %s ended at %s: %s in %s ms, %s bytes", e.Node, e.Time.Format("15:04:05.000"),
				e.Text("outcome"), e.Text("duration_ms"), e.Text("bytes"))
		}
	}
	for _, kind := range []string{"move-planned", "move-started", "move-catchup-done", "move-completed", "move-aborted", "move-restarted",
		"freeze-expired", "move-abort-planned", "voter-removal-proposed", "voter-removal-deferred", "voter-removal-refused", "leadership-transfer"} {
		if count := len(eventsOfKind(events, kind)); count > 0 {
			t.Logf("  log events %s: %d", kind, count)
		}
	}
	return summary
}

// latencyText describes produce latencies: quantiles, maximum, count.
func latencyText(durations []time.Duration) string {
	if len(durations) == 0 {
		return "(no requests)"
	}
	return fmt.Sprintf("p50 %s p99 %s max %s (%d requests)", proc.Percentile(durations, 0.5).Round(100*time.Microsecond),
		proc.Percentile(durations, 0.99).Round(100*time.Microsecond), proc.Percentile(durations, 1).Round(100*time.Microsecond), len(durations))
}

func secondsText(seconds float64) string {
	if seconds != seconds { // NaN: no observations
		return "n/a"
	}
	return fmt.Sprintf("%gs", seconds)
}

// proveVoterRemoved kills removed and one more voter: if removed really
// left the voter set, the two survivors are a majority of the three
// voters left and a metadata write (a topic create) succeeds through them.
func (c *testCluster) proveVoterRemoved(ctx context.Context, removed, another *clusterNode) {
	c.t.Helper()
	c.kill(removed)
	c.kill(another)
	killedAt := time.Now()
	survivors := c.running()
	for attempt := 0; time.Since(killedAt) < scaleQuorumTimeout; attempt++ {
		n := survivors[attempt%len(survivors)]
		attemptCtx, cancel := context.WithTimeout(ctx, scaleQuorumAttemptTimeout)
		_, err := n.client.CreateTopic(attemptCtx, client.CreateTopicRequest{Name: fmt.Sprintf("quorum-probe-%d", attempt)})
		cancel()
		if err == nil {
			c.t.Logf("voter set: with %s and %s killed, a topic create through %s succeeded after %s: %s left the voter set",
				removed.id, another.id, n.id, time.Since(killedAt).Round(time.Millisecond), removed.id)
			return
		}
		require.NoError(c.t, proc.SleepContext(ctx, moveLoadRetryPause))
	}
	c.t.Errorf("with %s and %s killed, no metadata write succeeded through %v within %s: %s is still a voter (or the quorum is lost)",
		removed.id, another.id, nodeIDsOf(survivors), scaleQuorumTimeout, removed.id)
}

func nodeIDsOf(nodes []*clusterNode) []string {
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, n.id)
	}
	return ids
}
