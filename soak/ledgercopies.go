package soak

import (
	"maps"
	"slices"

	"narad/client"
)

// copyLedger is what the consumers saw of the records that travel
// between topics: the hot topic's fan-out copies in the child, its dead
// letters, and how each delivery of the hot topic ended. The ledger's
// mutex protects it; times are in ms since the run began.
type copyLedger struct {
	// copied counts the deliveries of each id from the child topic;
	// deadLettered those from the dead-letter topic.
	copied, deadLettered map[string]int
	// exhaustedAtMs holds, per hot id, the last delivery that came at
	// hotMaxDeliveries or later and ended without an ack (refused, or an
	// ack answered with a failure; an ack without an answer does not
	// count): the record had to move to the dead-letter topic.
	exhaustedAtMs map[string]int64
	// ackedAtMs holds, per hot id, the last ack answered 204; an ack
	// later than an exhaustion means a restart started the count over.
	ackedAtMs map[string]int64
	// lastDeliveredMs holds, per hot id, its last delivery.
	lastDeliveredMs map[string]int64
	// atLimit holds the hot ids a consumer received at hotMaxDeliveries
	// or later, whatever became of the delivery: only those (and poison
	// records) may reach the dead-letter topic.
	atLimit map[string]bool
}

func newCopyLedger() copyLedger {
	return copyLedger{copied: map[string]int{}, deadLettered: map[string]int{}, exhaustedAtMs: map[string]int64{},
		ackedAtMs: map[string]int64{}, lastDeliveredMs: map[string]int64{}, atLimit: map[string]bool{}}
}

// deliver notes a delivery of id from topic; it reports whether the
// delivery is a copy (child or dead letter), which the ledger's own
// delivery counts leave out.
func (c *copyLedger) deliver(topic, id string, atMs int64) bool {
	switch topic {
	case childTopic:
		c.copied[id]++
		return true
	case deadTopic:
		c.deadLettered[id]++
		return true
	case hotTopic:
		c.lastDeliveredMs[id] = atMs
	}
	return false
}

// settled notes how a delivery of the hot topic ended. One at the limit
// that ended without an ack exhausted the record; one whose ack got no
// answer proves nothing either way.
func (l *ledger) settled(m client.Message, outcome deliveryOutcome) {
	payload, err := m.Payload()
	var id string
	if err == nil {
		id, err = decodePayload(payload)
	}
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.DeliveryCount >= hotMaxDeliveries {
		l.copies.atLimit[id] = true
	}
	switch {
	case outcome == deliveryAcked:
		l.copies.ackedAtMs[id] = l.sinceMs()
	case outcome != deliveryUnknown && m.DeliveryCount >= hotMaxDeliveries:
		l.copies.exhaustedAtMs[id] = l.sinceMs()
	}
}

// deadLetterCause says why a record had to reach the dead-letter topic.
type deadLetterCause int

const (
	// causePoison: the consumers never ack it.
	causePoison deadLetterCause = iota + 1
	// causeExhausted: a consumer saw a delivery at the limit end without
	// an ack (a failed ack, a lapsed lease), and no later ack succeeded.
	causeExhausted
)

// copySnapshot is a copy of the copy ledger for the drain and the audit.
type copySnapshot struct {
	copied, deadLettered                      map[string]int
	exhaustedAtMs, ackedAtMs, lastDeliveredMs map[string]int64
	atLimit                                   map[string]bool
}

func (l *ledger) copySnapshot() copySnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.copies
	return copySnapshot{copied: maps.Clone(c.copied), deadLettered: maps.Clone(c.deadLettered),
		exhaustedAtMs: maps.Clone(c.exhaustedAtMs), ackedAtMs: maps.Clone(c.ackedAtMs), lastDeliveredMs: maps.Clone(c.lastDeliveredMs),
		atLimit: maps.Clone(c.atLimit)}
}

// deadLetterExpected returns the ids that must reach the dead-letter
// topic, with why: every acknowledged poison record of the hot topic,
// and every record seen exhausted and not acked since.
func (s copySnapshot) deadLetterExpected(acknowledged map[string]ledgerEntry) map[string]deadLetterCause {
	expected := map[string]deadLetterCause{}
	for id, entry := range acknowledged {
		if entry.Topic == hotTopic && poisonous(id) {
			expected[id] = causePoison
		}
	}
	for id, at := range s.exhaustedAtMs {
		if _, poison := expected[id]; !poison && s.ackedAtMs[id] <= at {
			expected[id] = causeExhausted
		}
	}
	return expected
}

// ackedAfterExhaustion counts the ids seen exhausted that a later ack
// took (a restart started their count over).
func (s copySnapshot) ackedAfterExhaustion() int {
	count := 0
	for id, at := range s.exhaustedAtMs {
		if s.ackedAtMs[id] > at {
			count++
		}
	}
	return count
}

// waitingCopies returns, sorted, the acknowledged hot records no
// consumer of the child has seen, and the expected dead letters no
// consumer of the dead-letter topic has seen.
func (l *ledger) waitingCopies() (uncopied, undeadLettered []string) {
	_, acknowledged := l.snapshot()
	s := l.copySnapshot()
	for id, entry := range acknowledged {
		if entry.Topic == hotTopic && s.copied[id] == 0 {
			uncopied = append(uncopied, id)
		}
	}
	for id := range s.deadLetterExpected(acknowledged) {
		if s.deadLettered[id] == 0 {
			undeadLettered = append(undeadLettered, id)
		}
	}
	slices.Sort(uncopied)
	slices.Sort(undeadLettered)
	return uncopied, undeadLettered
}
