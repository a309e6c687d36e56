package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Shape of TestMoveBenchLargePartition (make move-bench).
const (
	// moveBenchEnv must be set (to anything) for the benchmark to run: it
	// writes gigabytes and takes minutes, so make test skips it.
	moveBenchEnv = "NARAD_MOVE_BENCH"
	// moveBenchBytesEnv sets the size the partition is filled to, in
	// bytes of record payload (default moveBenchBytesDefault).
	moveBenchBytesEnv     = "NARAD_MOVE_BENCH_BYTES"
	moveBenchBytesDefault = 1 << 30
	moveBenchBytesMin     = 1 << 20
	moveBenchTopic        = "bench-move"
	moveBenchPartitions   = 3
	// moveBenchPartition is the partition filled and moved.
	moveBenchPartition = 0
	// moveBenchRecordBytes is the payload of one fill record (a JSON
	// string, so it travels unencoded); moveBenchBatchRecords of them make
	// a batch of about 7.2 MB, under the 8 MiB cap of a batch request.
	moveBenchRecordBytes  = 900_000
	moveBenchBatchRecords = 8
	// moveBenchFillers is the fill requests in flight at once.
	moveBenchFillers = 2
	// moveBenchPollInterval is how often the moves are read during the
	// move; moveBenchProgressInterval how often progress is logged.
	moveBenchPollInterval     = 100 * time.Millisecond
	moveBenchProgressInterval = 5 * time.Second
	// moveBenchWarmupRecords of the load are acknowledged before the
	// decommission.
	moveBenchWarmupRecords = 1_000
	moveBenchMoveTimeout   = 20 * time.Minute
	moveBenchTimeout       = 40 * time.Minute
	// slowSyncRoundSeconds: persist rounds slower than this are counted.
	slowSyncRoundSeconds = 0.2
)

// TestMoveBenchLargePartition measures the move of one large partition
// (1 GiB by default) between real processes under load: three nodes, a
// topic of three partitions (one per node), partition 0 filled by batch
// produces, then its owner decommissioned while producers keep writing
// keyless batches through every node. It logs the time from the move's
// start to the flip, the bytes copied and the copy rate, the freeze, the
// produce latency around the freeze, and checks that no produce was
// refused and that every record the producers wrote is where its 202
// said. It runs only when NARAD_MOVE_BENCH is set (make move-bench).
func TestMoveBenchLargePartition(t *testing.T) {
	if os.Getenv(moveBenchEnv) == "" {
		t.Skipf("set %s=1 to run (make move-bench): it writes gigabytes", moveBenchEnv)
	}
	targetBytes := moveBenchBytes(t)
	ctx, cancel := context.WithTimeout(context.Background(), moveBenchTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	createTopic(ctx, t, c.nodes[0], client.CreateTopicRequest{Name: moveBenchTopic, Partitions: moveBenchPartitions})
	owner := c.partitionOwner(ctx, moveBenchTopic, moveBenchPartition)

	fillStarted := time.Now()
	filled := fillPartition(ctx, t, owner, targetBytes)
	fillTook := time.Since(fillStarted)
	t.Logf("fill: %d bytes of payload into partition %d on %s (%d bytes on disk) in %s: %.1f MB/s",
		targetBytes, moveBenchPartition, owner.id, filled.SizeBytes, fillTook.Round(time.Millisecond), float64(targetBytes)/fillTook.Seconds()/1e6)

	load := newMoveLoad(moveBenchTopic)
	var producers []*nodeClients
	for _, n := range c.nodes {
		producers = append(producers, load.attachProducers(ctx, n))
	}
	load.waitAcknowledged(ctx, t, moveBenchWarmupRecords)
	leaderBefore := c.leader(ctx)
	decommissioned := time.Now()
	require.NoError(t, c.nodes[1].client.Decommission(ctx, owner.id, false), "decommission %s", owner.id)
	watch := c.watchMove(ctx, t, owner)
	movedAt := time.Now()
	for _, p := range producers {
		p.stopProducing()
	}
	watch.log(t, decommissioned)
	t.Logf("metadata leader: %s before the decommission, %s after the move", leaderBefore.id, c.leader(ctx).id)
	c.logBenchMove(ctx, t, load, decommissioned, movedAt)

	totals := load.totals()
	totals.log(t)
	audit := load.audit(ctx, c.nodes)
	t.Logf("audit: %d records of the load read back by replay, %d not where their 202 said (%d reads answered 503 or not at all, retried)",
		totals.acknowledged, audit.wrong, audit.retried)
	newOwner := c.partitionOwner(ctx, moveBenchTopic, moveBenchPartition)
	moved := partitionStats(ctx, t, newOwner, moveBenchTopic, moveBenchPartition)
	t.Logf("partition %d now on %s: high watermark %d (%d filled), %d bytes", moveBenchPartition, newOwner.id, moved.HighWatermark, filled.HighWatermark, moved.SizeBytes)

	assert.NotEqual(t, owner.id, newOwner.id, "the partition moved")
	assert.GreaterOrEqual(t, moved.HighWatermark, filled.HighWatermark, "the moved partition holds every filled record")
	assert.Empty(t, totals.refusals, "produce requests refused during the move")
	assert.Empty(t, totals.unanswered, "produce requests unanswered during the move")
	assert.Zero(t, audit.wrong, "records not found by replay at their 202's placement (first %d: %v)", moveLoadShownMax, audit.shown)
	checkFilledEnds(ctx, t, newOwner, filled.HighWatermark)
}

// moveBenchBytes reads the partition size to fill from the environment.
func moveBenchBytes(t *testing.T) int64 {
	t.Helper()
	text := os.Getenv(moveBenchBytesEnv)
	if text == "" {
		return moveBenchBytesDefault
	}
	size, err := strconv.ParseInt(text, 10, 64)
	require.NoError(t, err, "%s", moveBenchBytesEnv)
	require.GreaterOrEqual(t, size, int64(moveBenchBytesMin), "%s", moveBenchBytesEnv)
	return size
}

// partitionOwner returns the node that owns partition index of topic,
// as the first node reports it.
func (c *testCluster) partitionOwner(ctx context.Context, topic string, index int) *clusterNode {
	c.t.Helper()
	stats := partitionStats(ctx, c.t, c.running()[0], topic, index)
	return c.node(stats.OwnerNode)
}

// partitionStats describes partition index of topic, through a node.
func partitionStats(ctx context.Context, t *testing.T, through *clusterNode, topic string, index int) client.PartitionStats {
	t.Helper()
	described, err := through.client.GetTopic(ctx, topic, client.Ptr(index))
	require.NoError(t, err, "describe partition %d of %s", index, topic)
	require.Len(t, described.PartitionStats, 1, "stats of partition %d of %s", index, topic)
	return described.PartitionStats[0]
}

// fillPayload is a fill record: a JSON string of moveBenchRecordBytes
// that starts with its sequence number.
func fillPayload(sequence int) json.RawMessage {
	prefix := fmt.Sprintf(`"%d-`, sequence)
	return json.RawMessage(prefix + strings.Repeat("x", moveBenchRecordBytes-len(prefix)-1) + `"`)
}

// fillPartition writes batches pinned to moveBenchPartition through its
// owner until targetBytes of payload are acknowledged, and returns the
// partition's stats then.
func fillPartition(ctx context.Context, t *testing.T, owner *clusterNode, targetBytes int64) client.PartitionStats {
	t.Helper()
	var written atomic.Int64
	var sequence atomic.Int64
	var failure atomic.Value
	var fillers sync.WaitGroup
	for range moveBenchFillers {
		fillers.Go(func() {
			for written.Load() < targetBytes && ctx.Err() == nil && failure.Load() == nil {
				batch := make([]client.BatchRecord, moveBenchBatchRecords)
				for i := range batch {
					batch[i] = client.BatchRecord{Partition: client.Ptr(moveBenchPartition), Payload: fillPayload(int(sequence.Add(1)))}
				}
				if _, err := owner.client.ProduceBatch(ctx, moveBenchTopic, batch); err != nil {
					failure.Store(err.Error())
					return
				}
				written.Add(moveBenchBatchRecords * moveBenchRecordBytes)
			}
		})
	}
	fillers.Wait()
	require.Nil(t, failure.Load(), "a fill batch failed")
	require.NoError(t, ctx.Err(), "fill: %d of %d bytes before the deadline", written.Load(), targetBytes)
	return partitionStats(ctx, t, owner, moveBenchTopic, moveBenchPartition)
}

// checkFilledEnds replays the first and the last filled record on the
// new owner.
func checkFilledEnds(ctx context.Context, t *testing.T, owner *clusterNode, filledHWM int64) {
	t.Helper()
	for _, offset := range []int64{0, filledHWM - 1} {
		message, err := owner.client.Replay(ctx, moveBenchTopic, moveBenchPartition, offset)
		if assert.NoError(t, err, "replay offset %d", offset) && assert.NotNil(t, message, "replay offset %d", offset) {
			assert.Len(t, []byte(message.RawPayload), moveBenchRecordBytes, "the record at offset %d", offset)
		}
	}
}

// moveWatch is what polling the moves saw of the benchmark's move.
type moveWatch struct {
	// phaseSeen maps each phase to when a poll first reported it.
	phaseSeen   map[string]time.Time
	phases      []string
	lastCopied  int64
	total       int64
	from, to    string
	drainedSeen time.Time
}

// watchMove polls the moves (through a node other than source) until the
// source owns nothing and no move is in flight, logging the progress.
func (c *testCluster) watchMove(ctx context.Context, t *testing.T, source *clusterNode) moveWatch {
	t.Helper()
	through := c.nodes[0]
	if through == source {
		through = c.nodes[1]
	}
	watch := moveWatch{phaseSeen: map[string]time.Time{}}
	deadline := time.Now().Add(moveBenchMoveTimeout)
	nextProgress := time.Now().Add(moveBenchProgressInterval)
	for time.Now().Before(deadline) {
		p, err := readPlacement(ctx, through)
		if err == nil && watch.note(p, source.id) {
			return watch
		}
		if time.Now().After(nextProgress) {
			nextProgress = time.Now().Add(moveBenchProgressInterval)
			t.Logf("  move %s -> %s: phases %v, %d of %d bytes copied", watch.from, watch.to, watch.phases, watch.lastCopied, watch.total)
		}
		require.NoError(t, proc.SleepContext(ctx, moveBenchPollInterval))
	}
	t.Fatalf("the partition did not leave %s within %s (phases seen %v)", source.id, moveBenchMoveTimeout, watch.phases)
	return watch
}

// note records a reading; it reports whether the source is drained.
func (w *moveWatch) note(p placement, source string) bool {
	for _, m := range p.moves {
		if m.Topic != moveBenchTopic || m.Partition != moveBenchPartition {
			continue
		}
		w.from, w.to = m.From, m.To
		if m.Phase != "" {
			if _, seen := w.phaseSeen[m.Phase]; !seen {
				w.phaseSeen[m.Phase] = time.Now()
				w.phases = append(w.phases, m.Phase)
			}
		}
		w.lastCopied, w.total = max(w.lastCopied, m.BytesCopied), max(w.total, m.BytesTotal)
	}
	m, ok := p.member(source)
	if ok && m.OwnedPartitions == 0 && len(p.moves) == 0 {
		w.drainedSeen = time.Now()
		return true
	}
	return false
}

func (w moveWatch) log(t *testing.T, since time.Time) {
	t.Helper()
	var seen []string
	for _, phase := range w.phases {
		seen = append(seen, fmt.Sprintf("%s at +%s", phase, w.phaseSeen[phase].Sub(since).Round(time.Millisecond)))
	}
	t.Logf("move %s -> %s as polled every %s (times since the decommission): %s; drained at +%s; last progress %d of %d bytes",
		w.from, w.to, moveBenchPollInterval, strings.Join(seen, ", "), w.drainedSeen.Sub(since).Round(time.Millisecond), w.lastCopied, w.total)
}

// logBenchMove logs the move as the nodes' logs and metrics tell it, and
// the produce latencies around its freeze.
func (c *testCluster) logBenchMove(ctx context.Context, t *testing.T, load *moveLoad, decommissioned, movedAt time.Time) {
	t.Helper()
	events := c.clusterEvents()
	find := func(kind string) proc.LogRecord {
		for _, e := range eventsOfKind(events, kind) {
			if strings.Contains(e.Detail(), fmt.Sprintf("%s/%d", moveBenchTopic, moveBenchPartition)) ||
				strings.HasPrefix(e.Detail(), fmt.Sprintf("topics/%s/p%05d", moveBenchTopic, moveBenchPartition)) {
				return e
			}
		}
		return proc.LogRecord{}
	}
	planned, started, caughtUp := find("move-planned"), find("move-started"), find("move-catchup-done")
	frozen, movedAway := find("partition-frozen"), find("partition-moved-away")
	for _, e := range []proc.LogRecord{planned, started, caughtUp, frozen, movedAway} {
		if !e.Time.IsZero() {
			t.Logf("  %s +%s on %s: %s", e.Time.Format("15:04:05.000"), e.Time.Sub(decommissioned).Round(time.Millisecond), e.Node, e.Detail())
		}
	}
	for _, e := range events {
		if e.Message == proc.MoveEndedMessage {
			bytes, _ := e.Number("bytes")
			durationMs, _ := e.Number("duration_ms")
			t.Logf("move ended on %s: %s, %s ms from start to flip, %s bytes copied: %.1f MB/s", e.Node, e.Text("outcome"),
				e.Text("duration_ms"), e.Text("bytes"), bytes/durationMs/1e3)
		}
	}
	if !started.Time.IsZero() && !caughtUp.Time.IsZero() && !movedAway.Time.IsZero() && !frozen.Time.IsZero() {
		t.Logf("start to flip %s (catch-up %s, handoff to freeze %s, freeze %s)", movedAway.Time.Sub(started.Time).Round(time.Millisecond),
			caughtUp.Time.Sub(started.Time).Round(time.Millisecond), frozen.Time.Sub(caughtUp.Time).Round(time.Millisecond),
			movedAway.Time.Sub(frozen.Time).Round(time.Millisecond))
		logEventsBetween(t, events, frozen.Time, movedAway.Time)
		for _, n := range c.nodes {
			t.Logf("  produce latency through %s: before the move %s; during catch-up %s; during the freeze %s", n.id,
				latencyText(load.latenciesBetween(n.id, time.Time{}, started.Time)),
				latencyText(load.latenciesBetween(n.id, started.Time, frozen.Time)),
				latencyText(load.latenciesBetween(n.id, frozen.Time, movedAway.Time)))
		}
	}
	c.logSlowestSyncRounds(ctx, t)
	summary := summarizeMoveMetrics(c.clusterMetrics(ctx))
	t.Logf("metrics: moves completed %.0f, aborted %.0f; %.0f bytes copied; freeze histogram p50 <= %s p99 <= %s; drained %s after the decommission",
		summary.byOutcome["completed"], summary.byOutcome["aborted"], summary.bytesCopied, secondsText(summary.freezeP50Bound),
		secondsText(summary.freezeP99Bound), movedAt.Sub(decommissioned).Round(time.Millisecond))
}

// logSlowestSyncRounds logs, per node, the bucket bound of its slowest
// persist round (the Syncs of one Ready, which the node's loop waits
// for): a move's finalize job runs in such a round on the destination.
func (c *testCluster) logSlowestSyncRounds(ctx context.Context, t *testing.T) {
	t.Helper()
	var slowest []string
	for _, n := range c.running() {
		metrics, err := scrape(ctx, n)
		require.NoError(t, err, "scrape the metrics of %s", n.id)
		bound := metrics.HistogramQuantileBound("narad_storage_sync_round_duration_seconds", 1)
		over := metrics.HistogramCountAbove("narad_storage_sync_round_duration_seconds", slowSyncRoundSeconds)
		slowest = append(slowest, fmt.Sprintf("%s <= %s (%.0f rounds over %gs)", n.id, secondsText(bound), over, slowSyncRoundSeconds))
	}
	t.Logf("slowest persist round (the node loop waits for it): %s", strings.Join(slowest, ", "))
}

// freezeEventsShownMax bounds the log events logEventsBetween shows.
const freezeEventsShownMax = 20

// logEventsBetween logs the node events of every node in [from, to], in
// time order: what happened while the partition was frozen.
func logEventsBetween(t *testing.T, events []proc.LogRecord, from, to time.Time) {
	t.Helper()
	var during []proc.LogRecord
	for _, e := range events {
		if e.Kind() != "" && !e.Time.Before(from) && !e.Time.After(to) {
			during = append(during, e)
		}
	}
	slices.SortStableFunc(during, func(a, b proc.LogRecord) int { return a.Time.Compare(b.Time) })
	for i, e := range during {
		if i == freezeEventsShownMax {
			t.Logf("  ... and %d more events during the freeze", len(during)-i)
			return
		}
		t.Logf("  during the freeze: %s on %s: %s %s", e.Time.Format("15:04:05.000"), e.Node, e.Kind(), e.Detail())
	}
}
