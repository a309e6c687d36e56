package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Shape of the load that runs while partitions move.
const (
	// moveLoadPayloadBytes is the size of every record of the steady load:
	// its id, a separator and a filler that the audit checks byte for
	// byte.
	moveLoadPayloadBytes = 512
	// fillPayloadBytes is the size of the records of a prefill (ids with
	// fillIDPrefix), which gives the partitions some bulk to copy.
	fillPayloadBytes = 16 << 10
	fillIDPrefix     = "fill-"
	// fillBatchRecords is the records of one prefill batch (about 1.4 MB
	// of request once base64-encoded, under the 8 MiB cap).
	fillBatchRecords = 64
	// moveLoadBatchRecords is the records of one batch produce.
	moveLoadBatchRecords = 20
	// moveLoadSinglePause and moveLoadBatchPause are each producer's pause
	// between two requests.
	moveLoadSinglePause = 5 * time.Millisecond
	moveLoadBatchPause  = 40 * time.Millisecond
	// moveLoadConsumeBatch and moveLoadConsumeWait shape one consume.
	moveLoadConsumeBatch = 100
	moveLoadConsumeWait  = time.Second
	// moveLoadRetryPause follows a failed request.
	moveLoadRetryPause = 100 * time.Millisecond
	// moveLoadShownMax bounds the refusals and missing records a report
	// lists.
	moveLoadShownMax = 10
	// auditWorkers is the replay reads the audit runs at once.
	auditWorkers = 8
	// auditRetryWindow bounds how long one replay read is retried while
	// it is answered 503 or not at all (retryable: a node may still avoid
	// an owner that was slow to answer a moment ago).
	auditRetryWindow = 15 * time.Second
)

// moveLoad is the shared ledger of the producers and consumers that run
// against a cluster while its partitions move. Every record's payload is
// derived from its id (recordPayload), so the ledger keeps ids only.
type moveLoad struct {
	topic string

	mu sync.Mutex
	// acknowledged maps the id of each record answered 202 to the
	// partition and offset the answer reported.
	acknowledged map[string]client.Placement
	// deliveries counts the deliveries of each id to a consumer.
	deliveries map[string]int
	// singles and batches count the produce requests answered 202.
	singles, batches int
	// refusals are the produce requests answered with a non-2xx status;
	// unanswered are those that got no answer at all (no node of these
	// tests is ever down, so both count against the broker).
	refusals, unanswered []produceFailure
	// latencies holds every answered produce request's duration.
	latencies []produceLatency
	// corruptDeliveries counts delivered payloads that are not what their
	// id says; consumeFailures and ackFailures count failed requests
	// (retried; a lost ack only means a redelivery).
	corruptDeliveries            int
	consumeFailures, ackFailures int
}

// produceFailure is one produce request that was not answered 202.
type produceFailure struct {
	node   string
	at     time.Time
	status int // 0 when there was no answer
	batch  bool
	err    string
}

func (f produceFailure) String() string {
	kind := "single"
	if f.batch {
		kind = "batch"
	}
	return fmt.Sprintf("%s %s produce through %s: status %d: %s", f.at.Format("15:04:05.000"), kind, f.node, f.status, f.err)
}

func newMoveLoad(topic string) *moveLoad {
	return &moveLoad{topic: topic, acknowledged: map[string]client.Placement{}, deliveries: map[string]int{}}
}

// recordPayload is the payload of the record with id: the id, "|", and a
// filler up to moveLoadPayloadBytes (fillPayloadBytes for a prefill's).
func recordPayload(id string) []byte {
	const filler = "abcdefghijklmnopqrstuvwxyz0123456789"
	size := moveLoadPayloadBytes
	if strings.HasPrefix(id, fillIDPrefix) {
		size = fillPayloadBytes
	}
	payload := make([]byte, 0, size)
	payload = append(payload, id...)
	payload = append(payload, '|')
	for len(payload) < size {
		payload = append(payload, filler[len(payload)%len(filler)])
	}
	return payload
}

// recordID is the id of a payload made by recordPayload.
func recordID(payload []byte) string {
	id, _, _ := bytes.Cut(payload, []byte("|"))
	return string(id)
}

// nodeClients are the producers and the consumer that talk to one node;
// each side stops on its own.
type nodeClients struct {
	stopProducers, stopConsumers context.CancelFunc
	producers, consumers         sync.WaitGroup
}

// attach starts, against n, a producer of single records, a producer of
// batches (all keyless, so spread over the partitions) and a consumer
// that acks what it receives.
func (l *moveLoad) attach(ctx context.Context, n *clusterNode) *nodeClients {
	clients := l.attachProducers(ctx, n)
	consuming, stopConsumers := context.WithCancel(ctx)
	clients.stopConsumers = stopConsumers
	clients.consumers.Go(func() { l.consume(consuming, n) })
	return clients
}

// attachProducers starts the two producers of attach only.
func (l *moveLoad) attachProducers(ctx context.Context, n *clusterNode) *nodeClients {
	producing, stopProducers := context.WithCancel(ctx)
	clients := &nodeClients{stopProducers: stopProducers, stopConsumers: func() {}}
	clients.producers.Go(func() { l.produceSingles(producing, n) })
	clients.producers.Go(func() { l.produceBatches(producing, n) })
	return clients
}

// stopProducing ends the node's producers and waits for them.
func (c *nodeClients) stopProducing() {
	c.stopProducers()
	c.producers.Wait()
}

// stopConsuming ends the node's consumer and waits for it.
func (c *nodeClients) stopConsuming() {
	c.stopConsumers()
	c.consumers.Wait()
}

func (l *moveLoad) produceSingles(ctx context.Context, n *clusterNode) {
	for sequence := 0; ctx.Err() == nil; sequence++ {
		id := fmt.Sprintf("%s-s-%d", n.id, sequence)
		answer := produceAnswer{node: n.id, ids: []string{id}, started: time.Now()}
		placement, err := n.client.Produce(ctx, l.topic, recordPayload(id), client.ProduceOptions{})
		if ctx.Err() != nil {
			return // an answer cut short by the end of the run proves nothing either way
		}
		answer.placements, answer.err, answer.took = []client.Placement{placement}, err, time.Since(answer.started)
		l.recordProduce(answer)
		_ = proc.SleepContext(ctx, pauseAfter(err, moveLoadSinglePause))
	}
}

func (l *moveLoad) produceBatches(ctx context.Context, n *clusterNode) {
	for sequence := 0; ctx.Err() == nil; sequence++ {
		ids := make([]string, moveLoadBatchRecords)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-b-%d-%d", n.id, sequence, i)
		}
		answer := l.produceBatch(ctx, n, ids)
		if ctx.Err() != nil {
			return
		}
		l.recordProduce(answer)
		_ = proc.SleepContext(ctx, pauseAfter(answer.err, moveLoadBatchPause))
	}
}

// produceBatch sends the records of ids as one keyless batch through n.
func (l *moveLoad) produceBatch(ctx context.Context, n *clusterNode, ids []string) produceAnswer {
	records := make([]client.BatchRecord, len(ids))
	for i, id := range ids {
		records[i] = client.NewBatchRecord(recordPayload(id), client.ProduceOptions{})
	}
	answer := produceAnswer{node: n.id, ids: ids, batch: true, started: time.Now()}
	result, err := n.client.ProduceBatch(ctx, l.topic, records)
	answer.placements, answer.err, answer.took = result.Records, err, time.Since(answer.started)
	return answer
}

// prefill produces that many keyless records of fillPayloadBytes through n
// in batches, retrying a batch that is not answered 202 (only 202s enter
// the ledger; a refusal is noted like any other).
func (l *moveLoad) prefill(ctx context.Context, t *testing.T, n *clusterNode, records int) {
	t.Helper()
	for first := 0; first < records; first += fillBatchRecords {
		count := min(fillBatchRecords, records-first)
		ids := make([]string, count)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s%d", fillIDPrefix, first+i)
		}
		answer := l.produceBatch(ctx, n, ids)
		require.NoError(t, ctx.Err(), "prefill: %d of %d records written before the deadline", first, records)
		l.recordProduce(answer)
		if answer.err != nil {
			first -= fillBatchRecords // the same ids again
			require.NoError(t, proc.SleepContext(ctx, moveLoadRetryPause))
		}
	}
}

func pauseAfter(err error, pause time.Duration) time.Duration {
	if err != nil {
		return moveLoadRetryPause
	}
	return pause
}

// produceAnswer is the outcome of one produce request.
type produceAnswer struct {
	node       string
	ids        []string
	placements []client.Placement
	err        error
	batch      bool
	started    time.Time
	took       time.Duration
}

// produceLatency is how long one answered produce request took.
type produceLatency struct {
	node    string
	started time.Time
	took    time.Duration
}

// recordProduce notes the answer to a produce. A 202 whose placements do
// not match the records is noted with placement -1/-1, which the audit
// reports.
func (l *moveLoad) recordProduce(answer produceAnswer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var replyError *client.Error
	failure := produceFailure{node: answer.node, at: time.Now(), batch: answer.batch}
	if answer.err != nil {
		failure.err = answer.err.Error()
	}
	switch {
	case answer.err == nil:
		l.acknowledge(answer)
	case errors.As(answer.err, &replyError):
		failure.status = replyError.Status
		l.refusals = append(l.refusals, failure)
	default:
		l.unanswered = append(l.unanswered, failure)
	}
	if replyError != nil || answer.err == nil {
		l.latencies = append(l.latencies, produceLatency{node: answer.node, started: answer.started, took: answer.took})
	}
}

// acknowledge enters a 202's records in the ledger; l.mu is held.
func (l *moveLoad) acknowledge(answer produceAnswer) {
	for i, id := range answer.ids {
		placement := client.Placement{Partition: -1, Offset: -1}
		if len(answer.placements) == len(answer.ids) {
			placement = answer.placements[i]
		}
		l.acknowledged[id] = placement
	}
	if answer.batch {
		l.batches++
	} else {
		l.singles++
	}
}

// latenciesBetween returns the latencies of the produce requests through
// node (any node when "") that started in [from, to).
func (l *moveLoad) latenciesBetween(node string, from, to time.Time) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var durations []time.Duration
	for _, latency := range l.latencies {
		if (node == "" || latency.node == node) && !latency.started.Before(from) && latency.started.Before(to) {
			durations = append(durations, latency.took)
		}
	}
	return durations
}

func (l *moveLoad) consume(ctx context.Context, n *clusterNode) {
	for ctx.Err() == nil {
		messages, err := n.client.ConsumeBatch(ctx, l.topic, moveLoadConsumeBatch, client.ConsumeOptions{Wait: moveLoadConsumeWait})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.count(&l.consumeFailures)
			_ = proc.SleepContext(ctx, moveLoadRetryPause)
			continue
		}
		if len(messages) == 0 {
			continue
		}
		handles := l.recordDeliveries(messages)
		if _, err := n.client.AckBatch(ctx, l.topic, handles, client.AckModeCommit); err != nil && ctx.Err() == nil {
			l.count(&l.ackFailures)
		}
	}
}

func (l *moveLoad) count(counter *int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*counter++
}

// recordDeliveries notes the delivered records and returns their receipt
// handles.
func (l *moveLoad) recordDeliveries(messages []client.Message) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	handles := make([]string, 0, len(messages))
	for _, m := range messages {
		handles = append(handles, m.ReceiptHandle)
		payload, err := m.Payload()
		id := recordID(payload)
		if err != nil || !bytes.Equal(payload, recordPayload(id)) {
			l.corruptDeliveries++
			continue
		}
		l.deliveries[id]++
	}
	return handles
}

func (l *moveLoad) acknowledgedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acknowledged)
}

// waitAcknowledged waits until at least count records were answered 202.
func (l *moveLoad) waitAcknowledged(ctx context.Context, t *testing.T, count int) {
	t.Helper()
	for l.acknowledgedCount() < count {
		require.NoError(t, proc.SleepContext(ctx, clusterPollInterval), "only %d of %d records acknowledged before the deadline",
			l.acknowledgedCount(), count)
	}
}

// drain waits, up to timeout, until every acknowledged record was
// delivered; it returns those that were not (id: partition/offset), at
// most moveLoadShownMax of them, and how many there are.
func (l *moveLoad) drain(ctx context.Context, timeout time.Duration) ([]string, int) {
	deadline := time.Now().Add(timeout)
	for {
		shown, missing := l.undelivered()
		if missing == 0 || time.Now().After(deadline) || proc.SleepContext(ctx, clusterPollInterval) != nil {
			return shown, missing
		}
	}
}

func (l *moveLoad) undelivered() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var shown []string
	missing := 0
	for _, id := range slices.Sorted(maps.Keys(l.acknowledged)) {
		if l.deliveries[id] > 0 {
			continue
		}
		missing++
		if len(shown) < moveLoadShownMax {
			placement := l.acknowledged[id]
			shown = append(shown, fmt.Sprintf("%s: p%d/%d", id, placement.Partition, placement.Offset))
		}
	}
	return shown, missing
}

// loadTotals is what the ledger holds once the load stopped.
type loadTotals struct {
	acknowledged, singles, batches    int
	delivered, deliveries, duplicates int
	refusals, unanswered              []produceFailure
	corruptDeliveries                 int
	consumeFailures, ackFailures      int
}

func (l *moveLoad) totals() loadTotals {
	l.mu.Lock()
	defer l.mu.Unlock()
	totals := loadTotals{acknowledged: len(l.acknowledged), singles: l.singles, batches: l.batches,
		refusals: slices.Clone(l.refusals), unanswered: slices.Clone(l.unanswered), corruptDeliveries: l.corruptDeliveries,
		consumeFailures: l.consumeFailures, ackFailures: l.ackFailures}
	for _, count := range l.deliveries {
		totals.delivered++
		totals.deliveries += count
		totals.duplicates += count - 1
	}
	return totals
}

func (totals loadTotals) log(t *testing.T) {
	t.Helper()
	t.Logf("load: %d records answered 202 (%d single and %d batch requests); %d distinct records delivered, %d deliveries, %d duplicates; "+
		"%d produce requests refused, %d unanswered; %d corrupt deliveries; %d consume and %d ack requests failed (retried)",
		totals.acknowledged, totals.singles, totals.batches, totals.delivered, totals.deliveries, totals.duplicates,
		len(totals.refusals), len(totals.unanswered), totals.corruptDeliveries, totals.consumeFailures, totals.ackFailures)
	for i, failure := range append(slices.Clone(totals.refusals), totals.unanswered...) {
		if i == moveLoadShownMax {
			t.Logf("  ... and %d more", len(totals.refusals)+len(totals.unanswered)-i)
			break
		}
		t.Logf("  %v", failure)
	}
}

// auditResult is what an audit found: the records not where their 202
// said (at most moveLoadShownMax shown), and how many replay reads were
// answered 503 or not at all and retried.
type auditResult struct {
	shown          []string
	wrong, retried int
}

// audit reads back, by replay through the given nodes in turn, every
// acknowledged record at the partition and offset its 202 reported.
func (l *moveLoad) audit(ctx context.Context, nodes []*clusterNode) auditResult {
	l.mu.Lock()
	ids := slices.Sorted(maps.Keys(l.acknowledged))
	placements := maps.Clone(l.acknowledged)
	l.mu.Unlock()

	work := make(chan string)
	var mu sync.Mutex
	var result auditResult
	var workers sync.WaitGroup
	for worker := range auditWorkers {
		workers.Go(func() {
			for id := range work {
				problem, retried := l.auditRecord(ctx, nodes[worker%len(nodes)], id, placements[id])
				mu.Lock()
				result.retried += retried
				if problem != "" {
					result.wrong++
					if len(result.shown) < moveLoadShownMax {
						result.shown = append(result.shown, problem)
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	workers.Wait()
	return result
}

// auditRecord checks one record; it returns "" when the replay read at its
// placement returns its payload, else what it found, and how many reads
// it retried.
func (l *moveLoad) auditRecord(ctx context.Context, n *clusterNode, id string, placement client.Placement) (string, int) {
	if placement.Partition < 0 || placement.Offset < 0 {
		return fmt.Sprintf("%s: its 202 reported no placement", id), 0
	}
	message, retried, err := replayRetrying(ctx, n, l.topic, placement)
	where := fmt.Sprintf("p%d/%d", placement.Partition, placement.Offset)
	switch {
	case err != nil:
		return fmt.Sprintf("%s at %s: replay through %s failed: %v", id, where, n.id, err), retried
	case message == nil:
		return fmt.Sprintf("%s at %s: past the high watermark (204)", id, where), retried
	}
	payload, err := message.Payload()
	if err != nil || !bytes.Equal(payload, recordPayload(id)) {
		return fmt.Sprintf("%s at %s: found %q instead (%v)", id, where, truncate(string(payload), 40), err), retried
	}
	return "", retried
}

// replayRetrying reads one record by replay, retrying for up to
// auditRetryWindow while the answer is 503 or missing.
func replayRetrying(ctx context.Context, n *clusterNode, topic string, placement client.Placement) (*client.Message, int, error) {
	deadline := time.Now().Add(auditRetryWindow)
	for retried := 0; ; retried++ {
		message, err := n.client.Replay(ctx, topic, placement.Partition, placement.Offset)
		var replyError *client.Error
		retryable := err != nil && (!errors.As(err, &replyError) || replyError.Status == http.StatusServiceUnavailable)
		if !retryable || ctx.Err() != nil || time.Now().After(deadline) {
			return message, retried, err
		}
		_ = proc.SleepContext(ctx, moveLoadRetryPause)
	}
}

func truncate(text string, length int) string {
	if len(text) <= length {
		return text
	}
	return strings.ToValidUTF8(text[:length], "") + "..."
}
