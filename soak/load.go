package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"syscall"
	"time"

	"narad/client"
	"narad/proc"
)

// The topics of the load. The hot topic takes the steady load; the cold
// topic is filled once before the faults and never written again, so a
// move of one of its partitions copies a log that does not grow, and
// each of its partitions is larger than the CatchUp lag bound (4 MiB), so
// CatchUp copies it before the freeze (the forced-recovery step needs
// both, see forced.go; a test checks the sizes).
const (
	hotTopic            = "soak"
	hotPartitions       = 12
	childTopic          = "soak-child" // a fan-out child of hotTopic, with as many partitions
	deadTopic           = "soak-dead"  // hotTopic's dead-letter topic
	deadPartitions      = 3
	coldTopic           = "soak-cold"
	coldPartitions      = 6
	coldRecords         = 8400
	coldPayloadBytes    = 4000
	coldBatchRecords    = 240
	visibilityTimeoutMs = 5_000 // leases cut off by a kill come back soon
)

// The shape of the steady load.
const (
	singleProducers     = 3
	batchProducers      = 2
	singleConsumers     = 2
	batchConsumers      = 3 // on the hot topic; one more drains each of the cold, child and dead-letter topics
	singleProducePause  = 20 * time.Millisecond
	batchProducePause   = 250 * time.Millisecond
	batchRecordsMax     = 60
	payloadBytesMin     = 100
	payloadBytesMax     = 2000
	keyedRecordsPercent = 50
	keysDistinct        = 97
	consumeBatchMax     = 50
	consumeWait         = time.Second
	retryPause          = 100 * time.Millisecond
	// problemsKeptMax bounds the unexpected answers the load remembers;
	// refusalsShownPerStatus the refusals it quotes per status.
	problemsKeptMax        = 20
	refusalsShownPerStatus = 3
)

// LoadCounters are the load's totals; a copy is a snapshot.
type LoadCounters struct {
	// ProduceRequests counts produce requests sent (retries included).
	ProduceRequests int
	// Refused counts produce requests answered with a status other than
	// 202, by status; Unanswered those that got no answer (connection
	// refused or reset, timeout), of which NotConnected found no process
	// listening (connection refused: the node picked was down), so the
	// rest are answers a running node owed and did not give in time.
	Refused      map[int]int
	Unanswered   int
	NotConnected int
	// Abandoned counts records never answered 202 because the load
	// stopped or the answer was final (a 4xx).
	Abandoned int
	// ConsumeErrors counts failed consume requests; AckErrors failed ack
	// requests; AcksStale handles answered 410 (the record comes back).
	ConsumeErrors, AckErrors, AcksStale int
}

func (c LoadCounters) refusedTotal() int {
	total := 0
	for _, count := range c.Refused {
		total += count
	}
	return total
}

// load drives producers and consumers against the rotation's nodes and
// keeps the ledger.
type load struct {
	cluster *cluster
	ledger  *ledger
	// seed derives each goroutine's generator.
	seed                 uint64
	producers, consumers sync.WaitGroup

	// mu protects counters and problems.
	mu       sync.Mutex
	counters LoadCounters
	// problems keeps the first unexpected answers (not 202, 503, 421 or
	// a lost connection), for the report.
	problems []string
	// refusals quotes the first refusals of each status.
	refusals map[int][]string
}

func newLoad(c *cluster, l *ledger, seed uint64) *load {
	return &load{cluster: c, ledger: l, seed: seed, counters: LoadCounters{Refused: map[int]int{}}, refusals: map[int][]string{}}
}

// snapshot returns a copy of the counters.
func (l *load) snapshot() LoadCounters {
	l.mu.Lock()
	defer l.mu.Unlock()
	copied := l.counters
	copied.Refused = map[int]int{}
	for status, count := range l.counters.Refused {
		copied.Refused[status] = count
	}
	return copied
}

func (l *load) count(update func(c *LoadCounters)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	update(&l.counters)
}

func (l *load) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < problemsKeptMax {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

func (l *load) takeProblems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.problems...)
}

// quoteRefusal keeps the first refusals of each status.
func (l *load) quoteRefusal(status int, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.refusals[status]) < refusalsShownPerStatus {
		l.refusals[status] = append(l.refusals[status], text)
	}
}

// refusalQuotes returns the quoted refusals, by status.
func (l *load) refusalQuotes() map[int][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	quotes := map[int][]string{}
	for status, texts := range l.refusals {
		quotes[status] = append([]string(nil), texts...)
	}
	return quotes
}

// rng returns a generator for one goroutine of the load.
func (l *load) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(l.seed, stream))
}

// startProducers runs the producers until ctx ends.
func (l *load) startProducers(ctx context.Context) {
	for i := range singleProducers {
		p := &producer{load: l, name: fmt.Sprintf("s%d", i+1), rng: l.rng(uint64(100 + i))}
		l.producers.Go(func() { p.run(ctx, singleProducePause, p.singleRequest) })
	}
	for i := range batchProducers {
		p := &producer{load: l, name: fmt.Sprintf("b%d", i+1), rng: l.rng(uint64(200 + i))}
		l.producers.Go(func() { p.run(ctx, batchProducePause, p.batchRequest) })
	}
}

// startConsumers runs the consumers until ctx ends: those of the hot
// topic nack (even ones) or abandon (odd ones) its poison records; one
// batch consumer each acks everything of the cold, child and dead-letter
// topics.
func (l *load) startConsumers(ctx context.Context) {
	for i := range singleConsumers + batchConsumers {
		c := &consumer{load: l, topic: hotTopic, batch: i >= singleConsumers, poison: poisonNack, rng: l.rng(uint64(300 + i))}
		if i%2 == 1 {
			c.poison = poisonAbandon
		}
		l.consumers.Go(func() { c.run(ctx) })
	}
	for i, topic := range []string{coldTopic, childTopic, deadTopic} {
		c := &consumer{load: l, topic: topic, batch: true, poison: poisonAck, rng: l.rng(uint64(400 + i))}
		l.consumers.Go(func() { c.run(ctx) })
	}
}

// producer is one producing goroutine; only that goroutine uses it.
type producer struct {
	load *load
	name string
	rng  *rand.Rand
	// sequence numbers the producer's records.
	sequence int
}

// produceRequest is one produce request, sendable again with the same
// records.
type produceRequest struct {
	ids   []string
	batch bool
	keyed bool
	send  func(ctx context.Context, c *client.Client) ([]client.Placement, error)
}

func (r produceRequest) kind() string {
	switch {
	case r.batch:
		return "batch produce"
	case r.keyed:
		return "keyed produce"
	}
	return "keyless produce"
}

func (p *producer) nextID() string {
	p.sequence++
	return fmt.Sprintf("%s.%d", p.name, p.sequence)
}

func (p *producer) payloadBytes() int {
	return payloadBytesMin + p.rng.IntN(payloadBytesMax-payloadBytesMin+1)
}

// singleRequest builds a single produce, keyed or not.
func (p *producer) singleRequest() produceRequest {
	id := p.nextID()
	body := encodePayload(id, p.payloadBytes())
	var options client.ProduceOptions
	if p.rng.IntN(100) < keyedRecordsPercent {
		options.Key = fmt.Sprintf("k%d", p.rng.IntN(keysDistinct))
	}
	return produceRequest{ids: []string{id}, keyed: options.Key != "", send: func(ctx context.Context, c *client.Client) ([]client.Placement, error) {
		placement, err := c.Produce(ctx, hotTopic, body, options)
		return []client.Placement{placement}, err
	}}
}

// batchRequest builds an NDJSON batch of keyless records.
func (p *producer) batchRequest() produceRequest {
	count := 1 + p.rng.IntN(batchRecordsMax)
	ids := make([]string, count)
	records := make([]client.BatchRecord, count)
	for i := range count {
		ids[i] = p.nextID()
		records[i] = client.NewBatchRecord(encodePayload(ids[i], p.payloadBytes()), client.ProduceOptions{})
	}
	return produceRequest{ids: ids, batch: true, send: func(ctx context.Context, c *client.Client) ([]client.Placement, error) {
		result, err := c.ProduceBatch(ctx, hotTopic, records)
		return result.Records, err
	}}
}

// run sends requests until ctx ends, each until it is answered 202.
func (p *producer) run(ctx context.Context, pause time.Duration, next func() produceRequest) {
	for ctx.Err() == nil {
		p.load.sendUntilAccepted(ctx, p.rng, hotTopic, next())
		_ = proc.SleepContext(ctx, pause)
	}
}

// sendUntilAccepted sends req to nodes of the rotation until one answers
// 202, the answer is final, or ctx ends (the records are then abandoned).
func (l *load) sendUntilAccepted(ctx context.Context, rng *rand.Rand, topic string, req produceRequest) {
	for ctx.Err() == nil {
		n := l.cluster.pick(rng)
		if n == nil {
			_ = proc.SleepContext(ctx, retryPause)
			continue
		}
		l.ledger.attempt(topic, req.ids)
		placements, err := req.send(ctx, n.client)
		if ctx.Err() != nil {
			break // an answer cut short by the end of the load proves nothing
		}
		l.count(func(c *LoadCounters) { c.ProduceRequests++ })
		if err == nil {
			l.accepted(topic, req, placements, n.id)
			return
		}
		if !l.refused(n.id, req, err) {
			break
		}
		_ = proc.SleepContext(ctx, retryPause)
	}
	l.count(func(c *LoadCounters) { c.Abandoned += len(req.ids) })
}

func (l *load) accepted(topic string, req produceRequest, placements []client.Placement, node string) {
	if err := l.ledger.acknowledge(topic, req.ids, placements, node, req.batch); err != nil {
		l.problem("%s: %v", node, err)
	}
}

// refused counts a failed produce and reports whether to send it again:
// after no answer, a 503 (retryable by contract) or a 421 (a node's view
// of the placement was stale; no unpinned produce should see it, which
// the report says, but the records were not all written).
func (l *load) refused(node string, req produceRequest, err error) bool {
	var reply *client.Error
	if !errors.As(err, &reply) {
		down := foundNodeDown(err)
		l.count(func(c *LoadCounters) {
			c.Unanswered++
			if down {
				c.NotConnected++
			}
		})
		return true
	}
	l.count(func(c *LoadCounters) { c.Refused[reply.Status]++ })
	text := fmt.Sprintf("%s of %d records through %s in step %s: %v", req.kind(), len(req.ids), node, l.ledger.currentStep(), err)
	l.quoteRefusal(reply.Status, text)
	if reply.Status == http.StatusServiceUnavailable || reply.Status == http.StatusMisdirectedRequest {
		return true
	}
	l.problem("%s", text)
	return false
}

// foundNodeDown reports whether a produce that got no answer found no
// process listening at the node's address (connection refused): the node
// was down, so no running node owed it an answer.
func foundNodeDown(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// consumer is one consuming goroutine of one topic; only that goroutine
// uses it.
type consumer struct {
	load  *load
	topic string
	batch bool
	// poison is what the consumer does with a poison record (poisonAck
	// for the topics that have none).
	poison poisonPolicy
	rng    *rand.Rand
}

func (c *consumer) run(ctx context.Context) {
	for ctx.Err() == nil {
		n := c.load.cluster.pick(c.rng)
		if n == nil {
			_ = proc.SleepContext(ctx, retryPause)
			continue
		}
		if err := c.consumeOnce(ctx, n, c.topic); err != nil && ctx.Err() == nil {
			_ = proc.SleepContext(ctx, retryPause)
		}
	}
}

// consumeOnce consumes (one message, or a batch), records what arrived and
// acks it.
func (c *consumer) consumeOnce(ctx context.Context, n *nodeProcess, topic string) error {
	var messages []client.Message
	var err error
	if c.batch {
		messages, err = n.client.ConsumeBatch(ctx, topic, consumeBatchMax, client.ConsumeOptions{Wait: consumeWait})
	} else {
		var message *client.Message
		message, err = n.client.Consume(ctx, topic, client.ConsumeOptions{Wait: consumeWait})
		if message != nil {
			messages = []client.Message{*message}
		}
	}
	if err != nil {
		c.load.count(func(counters *LoadCounters) { counters.ConsumeErrors++ })
		return err
	}
	for _, m := range messages {
		c.load.ledger.deliver(n.id, topic, m)
	}
	return c.settle(ctx, n, topic, messages)
}

// fillCold writes the cold topic's records (batch produce), before the
// faults start.
func (l *load) fillCold(ctx context.Context) error {
	rng := l.rng(1)
	for written := 0; written < coldRecords; written += coldBatchRecords {
		ids := make([]string, coldBatchRecords)
		records := make([]client.BatchRecord, coldBatchRecords)
		for i := range ids {
			ids[i] = fmt.Sprintf("cold.%d", written+i+1)
			records[i] = client.NewBatchRecord(encodePayload(ids[i], coldPayloadBytes), client.ProduceOptions{})
		}
		send := func(ctx context.Context, c *client.Client) ([]client.Placement, error) {
			result, err := c.ProduceBatch(ctx, coldTopic, records)
			return result.Records, err
		}
		l.sendUntilAccepted(ctx, rng, coldTopic, produceRequest{ids: ids, batch: true, send: send})
	}
	return ctx.Err()
}
