package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Shape of TestClusterAcksSettleWhileAnOwnerIsKilled. The records,
// consumers and kills may be raised for a longer run through the
// environment (ackShapeEnv), within ackShapeMax.
const (
	ackTopic            = "acks"
	ackPartitions       = 6
	ackVisibilityMs     = 5_000
	ackRecordsDefault   = 1_200
	ackProduceBatch     = 100
	ackConsumersDefault = 4
	ackKillsDefault     = 1
	ackConsumeMax       = 10
	ackDowntime         = 6 * time.Second
	ackSettleTimeout    = 45 * time.Second
	ackTestTimeout      = 90 * time.Second
	ackAttemptTimeout   = 6 * time.Second // past the server's forward timeout (5 s)
	// ackRepeatEvery: every so many acks answered 204, a consumer acks
	// again, as a client does whose answer was lost.
	ackRepeatEvery = 7
	// ackTimePerRecord is added to the settle and test timeouts per
	// record, and ackTimePerKill per kill, for the longer runs.
	ackTimePerRecord = 2 * time.Millisecond
	ackTimePerKill   = 15 * time.Second
)

// ackShapeEnv names the variables that raise the run's shape:
// NARAD_ACK_E2E_RECORDS, _CONSUMERS and _KILLS; ackShapeMax bounds each.
var (
	ackShapeEnv = [3]string{"NARAD_ACK_E2E_RECORDS", "NARAD_ACK_E2E_CONSUMERS", "NARAD_ACK_E2E_KILLS"}
	ackShapeMax = [3]int{100_000, 32, 6}
)

// ackShape is the size of one run.
type ackShape struct {
	records, consumers, kills int
}

// ackShapeFromEnv reads the shape, defaults for what is unset.
func ackShapeFromEnv(t *testing.T) ackShape {
	t.Helper()
	values := [3]int{ackRecordsDefault, ackConsumersDefault, ackKillsDefault}
	for i, name := range ackShapeEnv {
		text := os.Getenv(name)
		if text == "" {
			continue
		}
		value, err := strconv.Atoi(text)
		require.NoError(t, err, "%s=%q", name, text)
		require.True(t, value >= 1 && value <= ackShapeMax[i], "%s=%d: want 1..%d", name, value, ackShapeMax[i])
		values[i] = value
	}
	return ackShape{records: values[0] / ackProduceBatch * ackProduceBatch, consumers: values[1], kills: values[2]}
}

// budget is the extra time a larger shape gets.
func (s ackShape) budget() time.Duration {
	return time.Duration(s.records)*ackTimePerRecord + time.Duration(s.kills-1)*ackTimePerKill
}

// TestClusterAcksSettleWhileAnOwnerIsKilled runs three processes,
// produces a fixed set of records, and consumes and acks them all through
// n1 while another node, owner of some partitions, is killed with -9 and
// restarted six seconds later (with more kills, n2 and n3 in turn). Acks go through client.AckRetrying (503s
// and lost answers retried with the same handle). Every record must end
// acknowledged in the clients' eyes: an ack whose first attempt landed
// but whose answer was lost must not be answered 410 on retry, since its
// record would then never come back. Some records are acked twice on
// purpose; the second ack must not answer 410 unless a kill came in
// between (a 503 that outlasts the retries proves nothing either way).
func TestClusterAcksSettleWhileAnOwnerIsKilled(t *testing.T) {
	shape := ackShapeFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), ackTestTimeout+shape.budget())
	defer cancel()
	c := startTestCluster(t, 3)
	n1 := c.nodes[0]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: ackTopic, Partitions: ackPartitions, VisibilityTimeoutMs: ackVisibilityMs})
	produced := produceAckRecords(ctx, t, n1, shape.records)
	t.Logf("owners of %s: %v", ackTopic, owners(ctx, t, n1))

	run := newAckRun(produced, ackSettleTimeout+shape.budget())
	consuming, stopConsuming := context.WithCancel(ctx)
	var consumers sync.WaitGroup
	for range shape.consumers {
		consumers.Go(func() { run.consume(consuming, n1) })
	}
	defer func() { stopConsuming(); consumers.Wait() }()
	for kill := range shape.kills {
		// n1 serves its own partitions first: past its third of the
		// records, the acks in flight go to the other owners.
		require.NoError(t, run.waitAcked(ctx, len(produced)*(kill+2)/(shape.kills+3)), "acks before kill %d", kill+1)
		c.killAndRestart(t, run, c.nodes[1+kill%2])
	}

	err := run.waitAcked(ctx, len(produced))
	stopConsuming()
	consumers.Wait()
	t.Log(run.figure())
	require.NoError(t, err, "every record produced is acked in the clients' eyes")
	require.Zero(t, run.repeatFailed, "repeated acks of records acked with no kill in between answered 410 (first %d: %v)",
		repeatFailuresShownMax, run.repeatFailures)
}

// owners lists the owner of each partition of the test topic, as n sees
// it.
func owners(ctx context.Context, t *testing.T, n *clusterNode) []string {
	t.Helper()
	topic, err := n.client.GetTopic(ctx, ackTopic, nil)
	require.NoError(t, err)
	var ids []string
	for _, stats := range topic.PartitionStats {
		ids = append(ids, stats.OwnerNode)
	}
	return ids
}

// killAndRestart kills victim with -9 and restarts it ackDowntime later.
func (c *testCluster) killAndRestart(t *testing.T, run *ackRun, victim *clusterNode) {
	t.Helper()
	run.kills.Add(1)
	t.Logf("killing %s (-9) with %d of %d records acked", victim.id, run.ackedCount(), len(run.produced))
	c.kill(victim)
	run.kills.Add(1) // the process is gone: see ackRun.kills
	time.Sleep(ackDowntime)
	c.start(victim)
	c.waitReady(victim)
	t.Logf("%s ready again with %d records acked", victim.id, run.ackedCount())
}

// produceAckRecords produces count distinct payloads through n in
// batches, spread evenly over the partitions (a keyless record would stay
// on n's own), retrying a batch that fails, and returns the payloads.
func produceAckRecords(ctx context.Context, t *testing.T, n *clusterNode, count int) []string {
	t.Helper()
	var payloads []string
	for start := 0; start < count; start += ackProduceBatch {
		var batch []client.BatchRecord
		for i := start; i < start+ackProduceBatch; i++ {
			payload := fmt.Sprintf("record-%05d", i)
			payloads = append(payloads, payload)
			batch = append(batch, client.NewBatchRecord([]byte(payload), client.ProduceOptions{Partition: client.Ptr(i % ackPartitions)}))
		}
		for {
			_, err := n.client.ProduceBatch(ctx, ackTopic, batch)
			if err == nil {
				break
			}
			require.NoError(t, proc.SleepContext(ctx, retryPause), "produce through %s: %v", n.id, err)
		}
	}
	return payloads
}

// repeatFailuresShownMax bounds the failed repeats a failure lists.
const repeatFailuresShownMax = 10

// ackRun is what the consumers did and saw.
type ackRun struct {
	// kills counts twice per kill, as it begins and once the process is
	// gone: a repeated ack is judged only when it did not change between
	// its first attempt and its answer, so neither a kill begun meanwhile
	// nor one under way when the first attempt started (that attempt may
	// land on the dying process, whose acks the restart forgets).
	kills atomic.Int64
	// ackSequence numbers the acks that answered 204, to pick those
	// repeated.
	ackSequence atomic.Int64

	// settleTimeout bounds each waitAcked.
	settleTimeout time.Duration

	mu sync.Mutex // guards the fields below
	// produced is the set of payloads produced.
	produced map[string]bool
	// deliveries counts deliveries per payload; acked holds the payloads
	// whose ack answered 204.
	deliveries map[string]int
	acked      map[string]bool
	// acksRetried counts acks that needed more than one attempt; their
	// outcomes are in retriedOutcome (204, 410, or 0 for gave up).
	acksRetried    int
	retriedOutcome map[int]int
	acksGone       int
	acksGaveUp     int
	// repeats counts the acks sent again after a 204; repeatFailed those
	// answered 410 with no kill in between, the first few described in
	// repeatFailures.
	repeats        int
	repeatFailed   int
	repeatFailures []string
}

func newAckRun(produced []string, settleTimeout time.Duration) *ackRun {
	run := &ackRun{settleTimeout: settleTimeout, produced: map[string]bool{}, deliveries: map[string]int{}, acked: map[string]bool{},
		retriedOutcome: map[int]int{}}
	for _, payload := range produced {
		run.produced[payload] = true
	}
	return run
}

// consume reserves batches through n and acks each message alone, with
// retries, until ctx ends.
func (r *ackRun) consume(ctx context.Context, n *clusterNode) {
	for ctx.Err() == nil {
		messages, err := n.client.ConsumeBatch(ctx, ackTopic, ackConsumeMax, client.ConsumeOptions{Wait: time.Second})
		if err != nil {
			_ = proc.SleepContext(ctx, retryPause)
			continue
		}
		for _, m := range messages {
			payload, err := m.Payload()
			if err != nil || ctx.Err() != nil {
				continue
			}
			r.delivered(string(payload))
			r.ack(ctx, n, string(payload), m.ReceiptHandle)
		}
	}
}

func (r *ackRun) delivered(payload string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deliveries[payload]++
}

// ack acks one message with retries and, for every ackRepeatEvery-th
// ack answered 204, acks it again the way a client whose answer was lost
// does.
func (r *ackRun) ack(ctx context.Context, n *clusterNode, payload, handle string) {
	policy := client.DefaultAckRetry()
	policy.AttemptTimeout = ackAttemptTimeout
	killsBefore := r.kills.Load()
	retries, err := n.client.AckRetrying(ctx, ackTopic, handle, policy)
	if ctx.Err() != nil {
		return
	}
	r.noteAck(payload, retries, err)
	if err != nil || r.ackSequence.Add(1)%ackRepeatEvery != 0 {
		return
	}
	_, again := n.client.AckRetrying(ctx, ackTopic, handle, policy)
	if ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.repeats++
	if client.IsStatus(again, http.StatusGone) && r.kills.Load() == killsBefore {
		r.repeatFailed++
		if len(r.repeatFailures) < repeatFailuresShownMax {
			r.repeatFailures = append(r.repeatFailures, fmt.Sprintf("%s (%s): %v", payload, handle, again))
		}
	}
}

func (r *ackRun) noteAck(payload string, retries int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	outcome := http.StatusNoContent
	switch {
	case err == nil:
		r.acked[payload] = true
	case client.IsStatus(err, http.StatusGone):
		outcome = http.StatusGone
		r.acksGone++
	default:
		outcome = 0
		r.acksGaveUp++
	}
	if retries > 0 {
		r.acksRetried++
		r.retriedOutcome[outcome]++
	}
}

func (r *ackRun) ackedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked)
}

// waitAcked waits until count produced records are acked in the clients'
// eyes, or the run's settle timeout passes.
func (r *ackRun) waitAcked(ctx context.Context, count int) error {
	deadline := time.Now().Add(r.settleTimeout)
	for r.ackedCount() < count {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d records acked after %s", r.ackedCount(), count, r.settleTimeout)
		}
		if err := proc.SleepContext(ctx, clusterPollInterval); err != nil {
			return fmt.Errorf("%d of %d records acked: %w", r.ackedCount(), count, err)
		}
	}
	return nil
}

// figure is the run's one-line summary.
func (r *ackRun) figure() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	duplicates, unexpected := 0, 0
	for payload, count := range r.deliveries {
		duplicates += count - 1
		if !r.produced[payload] {
			unexpected++
		}
	}
	return fmt.Sprintf("records produced %d, acked in the clients' eyes %d, duplicate deliveries %d, unexpected %d; "+
		"acks that needed a retry %d (ended: 204 %d, 410 %d, gave up %d); acks ended 410 %d, gave up %d; "+
		"repeated acks %d (410 with no kill between: %d)",
		len(r.produced), len(r.acked), duplicates, unexpected, r.acksRetried, r.retriedOutcome[http.StatusNoContent],
		r.retriedOutcome[http.StatusGone], r.retriedOutcome[0], r.acksGone, r.acksGaveUp, r.repeats, r.repeatFailed)
}
