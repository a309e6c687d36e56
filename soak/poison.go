package soak

import (
	"context"
	"hash/fnv"
	"net/http"

	"narad/client"
)

// The dead-letter setting of the hot topic and the share of its records
// the consumers refuse (poison records), so that some exhaust their
// deliveries and move to the dead-letter topic.
const (
	hotMaxDeliveries = 4
	poisonPercent    = 2
)

// poisonous reports whether the hot topic's consumers refuse record id:
// a fixed function of the id, so the audit knows which records had to
// reach the dead-letter topic.
func poisonous(id string) bool {
	hash := fnv.New32a()
	_, _ = hash.Write([]byte(id))
	return hash.Sum32()%100 < poisonPercent
}

// poisonPolicy is what a consumer does with a poison record.
type poisonPolicy int

const (
	// poisonAck acks it like any record (topics without dead letters).
	poisonAck poisonPolicy = iota
	// poisonNack releases it at once (a nack), so its next delivery
	// comes soon.
	poisonNack
	// poisonAbandon leaves its lease to lapse (the visibility timeout).
	poisonAbandon
)

// refuses reports whether the consumer will not ack m, whose record is id.
func (c *consumer) refuses(m client.Message) bool {
	if c.poison == poisonAck {
		return false
	}
	payload, err := m.Payload()
	if err != nil {
		return false
	}
	id, err := decodePayload(payload)
	return err == nil && poisonous(id)
}

// settle acks the messages the consumer accepts, nacks or abandons the
// poison ones, and tells the ledger which deliveries ended without an
// ack. A failed ack only means a redelivery.
func (c *consumer) settle(ctx context.Context, n *nodeProcess, topic string, messages []client.Message) error {
	var accepted, refused []client.Message
	for _, m := range messages {
		if c.refuses(m) {
			refused = append(refused, m)
		} else {
			accepted = append(accepted, m)
		}
	}
	statuses, err := c.ackBatch(ctx, n, topic, accepted, client.AckModeCommit)
	if c.poison == poisonNack {
		if _, nackErr := c.ackBatch(ctx, n, topic, refused, client.AckModeRelease); err == nil {
			err = nackErr
		}
	}
	if topic == hotTopic {
		for _, m := range accepted {
			c.load.ledger.settled(m, outcomeOf(statuses[m.ReceiptHandle]))
		}
		for _, m := range refused {
			c.load.ledger.settled(m, deliveryRefused)
		}
	}
	return err
}

// deliveryOutcome is how a delivery of the hot topic ended, as its
// consumer knows it.
type deliveryOutcome int

const (
	// deliveryAcked: the ack was answered 204.
	deliveryAcked deliveryOutcome = iota + 1
	// deliveryRefused: the consumer nacked or abandoned it; deliveryFailed:
	// its ack was answered with another status (the lease had lapsed).
	// Either way the delivery ended without an ack.
	deliveryRefused
	deliveryFailed
	// deliveryUnknown: the ack got no answer; it may have been applied.
	deliveryUnknown
)

func outcomeOf(status int) deliveryOutcome {
	switch status {
	case 0:
		return deliveryUnknown
	case http.StatusNoContent:
		return deliveryAcked
	}
	return deliveryFailed
}

// ackBatch applies mode to the messages' handles and returns the status
// the server answered for each (none when the request got no answer).
func (c *consumer) ackBatch(ctx context.Context, n *nodeProcess, topic string, messages []client.Message, mode client.AckMode) (map[string]int, error) {
	statuses := map[string]int{}
	if len(messages) == 0 {
		return statuses, nil
	}
	handles := make([]string, len(messages))
	for i, m := range messages {
		handles[i] = m.ReceiptHandle
	}
	results, err := n.client.AckBatch(ctx, topic, handles, mode)
	stale := 0
	for _, result := range results {
		statuses[result.ReceiptHandle] = result.Status
		if result.Status == http.StatusGone {
			stale++
		}
	}
	c.load.count(func(counters *LoadCounters) {
		counters.AcksStale += stale
		if err != nil {
			counters.AckErrors++
		}
	})
	return statuses, err
}
