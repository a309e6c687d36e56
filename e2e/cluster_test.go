package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Shape of the load of TestClusterKillNineOfFollowerAndLeaderLosesNothing.
const (
	loadTopic             = "load"
	loadPartitions        = 6
	loadVisibilityMs      = 5_000 // leases of a consumer cut off by a kill come back soon
	producersPerNode      = 2
	consumersPerNode      = 2
	producePause          = 5 * time.Millisecond // per producer, between records
	consumeBatch          = 100
	consumeWait           = time.Second
	retryPause            = 100 * time.Millisecond // after a failed request
	loadWarmupRecords     = 300                    // acknowledged before the first kill
	loadMinimumRecords    = 1000                   // acknowledged in all, or the test proves little
	downtime              = 6 * time.Second        // a killed node stays down past the forward timeout (5 s)
	loadAfterRestarts     = 3 * time.Second
	drainTimeout          = 45 * time.Second
	failoverTimeout       = 30 * time.Second
	failoverProbeInterval = 50 * time.Millisecond
	testTimeout           = 2 * time.Minute
)

// TestClusterKillNineOfFollowerAndLeaderLosesNothing runs three processes,
// produces single records through n1 and n2 and consumes through n3 and n2
// while it kills -9 first a follower and then the metadata leader (each
// restarted on its data), and checks that every record answered 202 is
// consumed at least once. It logs how long the metadata group took to
// accept a write after the leader was killed, and what the producers were
// refused while nodes were down (clients retry; only 202s are promises).
func TestClusterKillNineOfFollowerAndLeaderLosesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	n1, n2, n3 := c.nodes[0], c.nodes[1], c.nodes[2]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: loadTopic, Partitions: loadPartitions, VisibilityTimeoutMs: loadVisibilityMs})

	load := newLoad()
	producing, stopProducing := context.WithCancel(ctx)
	consuming, stopConsuming := context.WithCancel(ctx)
	defer stopConsuming()
	load.startProducers(producing, n1, n2)
	load.startConsumers(consuming, n3, n2)
	load.waitAcknowledged(ctx, t, loadWarmupRecords)

	follower := c.follower(ctx)
	t.Logf("killing follower %s (-9) with %d records acknowledged", follower.id, load.acknowledgedCount())
	c.kill(follower)
	time.Sleep(downtime)
	c.start(follower)
	c.waitReady(follower)
	t.Logf("follower %s ready again with %d records acknowledged", follower.id, load.acknowledgedCount())

	leader := c.leader(ctx)
	t.Logf("killing leader %s (-9) with %d records acknowledged", leader.id, load.acknowledgedCount())
	killedAt := time.Now()
	c.kill(leader)
	t.Logf("metadata failover: a topic create through a survivor succeeded %s after the leader was killed",
		c.firstMetadataWrite(ctx, killedAt).Round(time.Millisecond))
	time.Sleep(max(0, downtime-time.Since(killedAt)))
	c.start(leader)
	c.waitReady(leader)
	t.Logf("old leader %s ready again with %d records acknowledged", leader.id, load.acknowledgedCount())

	time.Sleep(loadAfterRestarts)
	load.waitAcknowledged(ctx, t, loadMinimumRecords) // a slow machine runs the load longer
	stopProducing()
	load.producers.Wait()
	load.report(t)
	missing := load.drain(ctx, drainTimeout)
	stopConsuming()
	load.consumers.Wait()
	require.Empty(t, missing, "records answered 202 and never consumed (payload: partition/offset; at most %d shown), of %d acknowledged", missingShownMax, load.acknowledgedCount())
}

// createTopic creates a topic through n, retrying while the cluster
// answers 503 (no leader yet).
func createTopic(ctx context.Context, t *testing.T, n *clusterNode, req client.CreateTopicRequest) {
	t.Helper()
	for {
		_, err := n.client.CreateTopic(ctx, req)
		if err == nil {
			return
		}
		require.True(t, client.IsStatus(err, 503), "create topic %s through %s: %v", req.Name, n.id, err)
		require.NoError(t, proc.SleepContext(ctx, retryPause), "create topic %s through %s: still 503", req.Name, n.id)
	}
}

// follower returns a running node that is not the metadata leader,
// preferring the last (n1 takes the topic create and produces).
func (c *testCluster) follower(ctx context.Context) *clusterNode {
	leader := c.leader(ctx)
	running := c.running()
	for i := len(running) - 1; i >= 0; i-- {
		if running[i] != leader {
			return running[i]
		}
	}
	c.t.Fatal("no follower running")
	return nil
}

// firstMetadataWrite starts a topic create through a running node every
// failoverProbeInterval (alternating nodes, each with its own timeout, so
// a create stuck on the dead leader does not hide a later one that
// succeeds), and returns the time from since to the first success.
func (c *testCluster) firstMetadataWrite(ctx context.Context, since time.Time) time.Duration {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, failoverTimeout)
	defer cancel()
	succeeded := make(chan time.Duration, 1)
	var probes sync.WaitGroup
	defer probes.Wait()
	survivors := c.running()
	for attempt := 0; ; attempt++ {
		n := survivors[attempt%len(survivors)]
		probes.Go(func() {
			_, err := n.client.CreateTopic(ctx, client.CreateTopicRequest{Name: fmt.Sprintf("failover-probe-%d", attempt)})
			if err == nil {
				select {
				case succeeded <- time.Since(since):
				default:
				}
			}
		})
		select {
		case elapsed := <-succeeded:
			cancel()
			return elapsed
		case <-ctx.Done():
			c.t.Fatalf("no metadata write succeeded within %s of the leader's kill", failoverTimeout)
		case <-time.After(failoverProbeInterval):
		}
	}
}

// load is the producers' and consumers' shared record of what happened.
type load struct {
	producers, consumers sync.WaitGroup

	mu sync.Mutex
	// acknowledged maps each payload answered 202 to where it landed.
	acknowledged map[string]client.Placement
	// consumed holds every payload delivered to a consumer.
	consumed map[string]bool
	// refused counts produce answers by non-2xx status; transportErrors
	// counts produces with no answer (connection refused, timeout).
	refused         map[int]int
	transportErrors int
	// consumeErrors counts failed consumes and acks (retried).
	consumeErrors int
}

func newLoad() *load {
	return &load{acknowledged: map[string]client.Placement{}, consumed: map[string]bool{}, refused: map[int]int{}}
}

// startProducers runs producersPerNode producers against each node until
// ctx ends, each sending single records with unique payloads.
func (l *load) startProducers(ctx context.Context, nodes ...*clusterNode) {
	for i, n := range nodes {
		for j := range producersPerNode {
			name := fmt.Sprintf("%s-p%d-%d", n.id, i, j)
			l.producers.Go(func() { l.produce(ctx, n, name) })
		}
	}
}

func (l *load) produce(ctx context.Context, n *clusterNode, name string) {
	for sequence := 0; ctx.Err() == nil; sequence++ {
		payload := fmt.Sprintf("%s-%d", name, sequence)
		placement, err := n.client.Produce(ctx, loadTopic, []byte(payload), client.ProduceOptions{})
		if ctx.Err() != nil {
			return // an answer cut short by the end of the run proves nothing either way
		}
		l.recordProduce(payload, placement, err)
		pause := producePause
		if err != nil {
			pause = retryPause
		}
		_ = proc.SleepContext(ctx, pause)
	}
}

func (l *load) recordProduce(payload string, placement client.Placement, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var replyError *client.Error
	switch {
	case err == nil:
		l.acknowledged[payload] = placement
	case errors.As(err, &replyError):
		l.refused[replyError.Status]++
	default:
		l.transportErrors++
	}
}

// startConsumers runs consumersPerNode consumers against each node until
// ctx ends: consume a batch, record it, ack it.
func (l *load) startConsumers(ctx context.Context, nodes ...*clusterNode) {
	for _, n := range nodes {
		for range consumersPerNode {
			l.consumers.Go(func() { l.consume(ctx, n) })
		}
	}
}

func (l *load) consume(ctx context.Context, n *clusterNode) {
	for ctx.Err() == nil {
		messages, err := n.client.ConsumeBatch(ctx, loadTopic, consumeBatch, client.ConsumeOptions{Wait: consumeWait})
		if err == nil && len(messages) > 0 {
			err = l.recordConsumed(ctx, n, messages)
		}
		if err != nil && ctx.Err() == nil {
			l.mu.Lock()
			l.consumeErrors++
			l.mu.Unlock()
			_ = proc.SleepContext(ctx, retryPause)
		}
	}
}

// recordConsumed notes the payloads and acks them (an ack that fails only
// means a redelivery later).
func (l *load) recordConsumed(ctx context.Context, n *clusterNode, messages []client.Message) error {
	handles := make([]string, 0, len(messages))
	l.mu.Lock()
	for _, m := range messages {
		payload, err := m.Payload()
		if err == nil {
			l.consumed[string(payload)] = true
		}
		handles = append(handles, m.ReceiptHandle)
	}
	l.mu.Unlock()
	_, err := n.client.AckBatch(ctx, loadTopic, handles, client.AckModeCommit)
	return err
}

// waitAcknowledged waits until at least count records were answered 202.
func (l *load) waitAcknowledged(ctx context.Context, t *testing.T, count int) {
	t.Helper()
	for l.acknowledgedCount() < count {
		require.NoError(t, proc.SleepContext(ctx, clusterPollInterval), "only %d of %d records acknowledged before the deadline",
			l.acknowledgedCount(), count)
	}
}

func (l *load) acknowledgedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acknowledged)
}

// drain waits, up to timeout, until every acknowledged record was
// consumed; it returns those that were not (payload: partition/offset).
func (l *load) drain(ctx context.Context, timeout time.Duration) map[string]string {
	deadline := time.Now().Add(timeout)
	for {
		missing := l.missing()
		if len(missing) == 0 || time.Now().After(deadline) || proc.SleepContext(ctx, clusterPollInterval) != nil {
			return missing
		}
	}
}

// missingShownMax bounds the missing records a failure lists.
const missingShownMax = 20

func (l *load) missing() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := map[string]string{}
	for _, payload := range slices.Sorted(maps.Keys(l.acknowledged)) {
		if !l.consumed[payload] && len(missing) < missingShownMax {
			placement := l.acknowledged[payload]
			missing[payload] = fmt.Sprintf("p%d/%d", placement.Partition, placement.Offset)
		}
	}
	return missing
}

func (l *load) report(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("produce: %d answered 202; refused by status %v; %d without an answer (node down); consume/ack errors so far %d",
		len(l.acknowledged), l.refused, l.transportErrors, l.consumeErrors)
}
