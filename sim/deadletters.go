package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"narad/httpapi"
	"narad/msg"
	"narad/node"
)

// The dead-letters scenario (Options.DeadLetters): the simulated topic
// names a dead-letter topic and a small max_deliveries, so that the
// consumers' nacks and forgotten leases exhaust some records, and a
// consumer drains the dead-letter topic. Its checkers:
//
//   - durable first: when a node acknowledges a record in its topic as a
//     dead letter (node.DeadLetterObserver), the copy's offset must already
//     be durable at some node of the dead-letter partition;
//   - never neither: a record consumed from the dead-letter topic counts
//     as delivered, so the no-loss accounting at the end holds a record
//     that exhausted its deliveries to being consumed from its topic or
//     from the dead-letter topic;
//   - every message of the dead-letter topic names the simulated topic as
//     its origin, with a delivery count of at least max_deliveries.

// Shape of the scenario.
const (
	// deadLetterRelaysInFlightMax is the nodes' relay bound in the
	// scenario: one batch of dead letters (or of fan-out) at a time, so
	// that exhausted records of another partition wait for it.
	deadLetterRelaysInFlightMax = 1
	deadLetterPartitions        = 3
	deadLetterConsumeWaitMs     = 500
	deadLetterConsumeMax        = 10
	deadLetterThinkMsMax        = 200
	deadLetterMaxDeliveryMin    = 1
	deadLetterMaxDeliveryMax    = 2
)

// deadLetters is the scenario's state.
type deadLetters struct {
	w     *World
	topic string
	// maxDeliveries is the simulated topic's setting, drawn at start.
	maxDeliveries int
	rng           *rand.Rand
	// settled counts the records nodes acknowledged as dead letters;
	// delivered the dead letters the consumer got.
	settled, delivered int
	// doomed is the doomed topic's operator (deadletters_doomed.go); nil
	// unless Options.DeadLettersAimed in a cluster.
	doomed *doomed
}

func newDeadLetters(w *World) *deadLetters {
	rng := newRand(w.opts.Seed, deadLettersStream)
	return &deadLetters{w: w, topic: w.topic + ".dead", rng: rng,
		maxDeliveries: deadLetterMaxDeliveryMin + rng.IntN(deadLetterMaxDeliveryMax-deadLetterMaxDeliveryMin+1)}
}

// createTopicFields is the part of the simulated topic's create body that
// sets its dead letters.
func (d *deadLetters) createTopicFields() string {
	return fmt.Sprintf(`,"max_deliveries":%d,"dead_letter_topic":%q`, d.maxDeliveries, d.topic)
}

// createDeadLetterTopic creates the dead-letter topic, then calls then.
func (cl *client) createDeadLetterTopic(d *deadLetters, then func()) {
	body := fmt.Sprintf(`{"name":%q,"partitions":%d}`, d.topic, deadLetterPartitions)
	c := &call{kind: "create-topic", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics", "application/json", body)}
	c.onDone = func(response *httpapi.Response) {
		switch {
		case response != nil && (response.Status == http.StatusCreated || response.Status == http.StatusConflict):
			then()
		case response != nil && response.Status < 500:
			cl.w.fail("client", "create dead-letter topic answered %d: %s", response.Status, response.Body)
		default:
			cl.later(100, func() { cl.createDeadLetterTopic(d, then) })
		}
	}
	cl.send(c)
}

// spawn starts the dead-letter topic's consumer.
func (d *deadLetters) spawn() {
	c := newClient(d.w, "dead1", roleConsumer)
	d.w.clients = append(d.w.clients, c)
	c.later(int64(d.rng.IntN(50)), func() { d.consumeNext(c) })
	d.spawnDoomed()
}

// consumeNext long-polls the dead-letter topic for a batch.
func (d *deadLetters) consumeNext(cl *client) {
	target := fmt.Sprintf("/v1/topics/%s/consume?wait=%dms&max=%d", d.topic, deadLetterConsumeWaitMs, deadLetterConsumeMax)
	c := &call{kind: "consume-dead", httpRequest: newHTTPRequest(http.MethodGet, target, "", ""), timeoutMs: deadLetterConsumeWaitMs + longPollGraceMs}
	c.onDone = func(response *httpapi.Response) { d.consumed(cl, c, response) }
	cl.send(c)
}

// deadLetterMessage is a consumed message of the dead-letter topic.
type deadLetterMessage struct {
	wireMessage
	DeadLetter *struct {
		Topic         string `json:"topic"`
		Partition     int    `json:"partition"`
		Offset        uint64 `json:"offset"`
		DeliveryCount int    `json:"delivery_count"`
	} `json:"dead_letter"`
}

func (d *deadLetters) consumed(cl *client, c *call, response *httpapi.Response) {
	if response == nil || response.Status >= 500 || response.Status == http.StatusMisdirectedRequest {
		cl.later(50, func() { d.consumeNext(cl) })
		return
	}
	var body struct {
		Messages []deadLetterMessage `json:"messages"`
	}
	if response.Status != http.StatusOK || json.Unmarshal(response.Body, &body) != nil {
		cl.unexpected(c, response)
		return
	}
	var handles []string
	for _, m := range body.Messages {
		if !d.received(c, m) {
			return
		}
		handles = append(handles, m.ReceiptHandle)
	}
	if len(handles) == 0 {
		cl.later(int64(d.rng.IntN(deadLetterThinkMsMax)), func() { d.consumeNext(cl) })
		return
	}
	d.ack(cl, handles)
}

// received checks one dead letter's origin and counts its record as
// delivered.
func (d *deadLetters) received(c *call, m deadLetterMessage) bool {
	if doomed, ok := d.receivedDoomed(c, m); doomed || !ok {
		return ok
	}
	id, err := m.id()
	switch {
	case err != nil:
		d.w.fail("client", "%s: %v", c.describe(), err)
		return false
	case m.DeadLetter == nil || m.DeadLetter.Topic != d.w.topic || m.DeadLetter.DeliveryCount < d.maxDeliveries:
		d.w.fail("dead-letter-origin", "%s: dead letter %s names origin %+v; want topic %s with at least %d deliveries",
			c.describe(), id, m.DeadLetter, d.w.topic, d.maxDeliveries)
		return false
	}
	d.delivered++
	d.w.history.deliveredDeadLetter(id, d.w.nowMs)
	return true
}

// ack acknowledges a batch of dead letters once; a lost or refused ack
// only makes them come back.
func (d *deadLetters) ack(cl *client, handles []string) {
	body := `{"receipt_handles":["` + strings.Join(handles, `","`) + `"]}`
	c := &call{kind: "ack-dead", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics/"+d.topic+"/ack", "application/json", body)}
	c.onDone = func(*httpapi.Response) {
		cl.later(int64(d.rng.IntN(deadLetterThinkMsMax)), func() { d.consumeNext(cl) })
	}
	cl.send(c)
}

// settledAt checks, when a node acknowledges a record as a dead letter,
// that its copy is already durable in the dead-letter topic.
func (d *deadLetters) settledAt(n *simNode, origin msg.DeadLetterOrigin, deadLetterTopic string, placement msg.Placement) {
	d.settled++
	d.w.leases.deadLettered(origin.Topic, origin.Partition, origin.Offset)
	if d.w.opts.BlackBox {
		return
	}
	dir := node.PartitionDir(deadLetterTopic, placement.Partition)
	if durable := d.w.checker.durableAnywhere(d.w, dir); placement.Offset >= durable {
		d.w.fail("dead-letter-durable-first", "%s acknowledged %s as a dead letter at %s@%d, but only %d records are durable there at any node",
			n.id, partitionName(origin.Topic, origin.Partition), dir, placement.Offset, durable)
	}
}

// settledCount and deliveredCount are the report's counts; 0 without the
// scenario.
func (d *deadLetters) settledCount() int {
	if d == nil {
		return 0
	}
	return d.settled
}

func (d *deadLetters) deliveredCount() int {
	if d == nil {
		return 0
	}
	return d.delivered
}

// DeadLettered is a record the node acknowledged as a dead letter
// (node.DeadLetterObserver).
func (o nodeObserver) DeadLettered(origin msg.DeadLetterOrigin, deadLetterTopic string, placement msg.Placement) {
	if o.n.w.deadLetters != nil {
		o.n.w.deadLetters.settledAt(o.n, origin, deadLetterTopic, placement)
	}
}

var _ node.DeadLetterObserver = nodeObserver{}
