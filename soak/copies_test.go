package soak

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
)

// The fast tests of the per-topic audit of the fan-out child and the
// dead-letter topic.

// idsWhere returns the first count ids "s1.N" whose poisonousness is
// want.
func idsWhere(t *testing.T, want bool, count int) []string {
	var ids []string
	for n := 1; len(ids) < count; n++ {
		require.Less(t, n, 100_000)
		if id := fmt.Sprintf("s1.%d", n); poisonous(id) == want {
			ids = append(ids, id)
		}
	}
	return ids
}

func TestPoisonIsAFixedShareOfTheIDs(t *testing.T) {
	poison := 0
	for n := range 10_000 {
		if poisonous(fmt.Sprintf("s1.%d", n)) {
			poison++
		}
	}
	assert.InDelta(t, poisonPercent*100, poison, poisonPercent*100/2, "about %d%% of the ids", poisonPercent)
	id := idsWhere(t, true, 1)[0]
	assert.True(t, poisonous(id), "the same id, the same answer")
}

// stored builds the stored logs of one topic from (offset, message) pairs
// on partition 0.
func storedOf(t *testing.T, topic string, records map[int64]client.Message) *storedLogs {
	logs := newStoredLogs()
	for offset, m := range records {
		logs.add(placement{topic: topic, partition: m.Partition, offset: offset}, m)
	}
	return logs
}

func keyed(m client.Message, key string) client.Message {
	m.Key = key
	return m
}

func TestAuditChildFindsMissingKeysAndStrangers(t *testing.T) {
	acknowledged := map[string]ledgerEntry{"a": {ID: "a", Topic: hotTopic}, "b": {ID: "b", Topic: hotTopic},
		"cold.1": {ID: "cold.1", Topic: coldTopic}}
	stored := topicLogs{
		hotTopic: storedOf(t, hotTopic, map[int64]client.Message{0: keyed(message(t, "a", 0, 0), "k1"), 1: message(t, "b", 0, 1),
			2: message(t, "x", 0, 2)}), // x: stored without a 202, copied too
		childTopic: storedOf(t, childTopic, map[int64]client.Message{0: keyed(message(t, "a", 0, 0), "k1"),
			1: keyed(message(t, "a", 0, 1), "k1"), 2: message(t, "x", 0, 2), 3: message(t, "y", 0, 3), 4: keyed(message(t, "a", 0, 4), "k2")}),
	}
	audit := auditChild(stored, acknowledged)
	assert.Equal(t, 2, audit.Expected, "the cold topic has no child")
	assert.Equal(t, 1, audit.Copied)
	assert.Equal(t, 1, audit.MissingCount, "b")
	assert.Equal(t, 5, audit.RecordsRead)
	assert.Equal(t, 1, audit.DuplicatedIDs, "a")
	assert.Equal(t, 1, audit.KeyMismatches, "a with k2")
	assert.Equal(t, 1, audit.Unexpected, "y is not in the parent")
	assert.Len(t, audit.Anomalies, 2)
}

func deadLetter(m client.Message, partition int, offset int64, deliveries int) client.Message {
	m.DeadLetter = &client.DeadLetter{Topic: hotTopic, Partition: partition, Offset: offset, DeliveryCount: deliveries}
	return m
}

func TestAuditDeadLettersChecksOriginsAndWhatHadToArrive(t *testing.T) {
	poison := idsWhere(t, true, 3)
	plain := idsWhere(t, false, 3)
	lettered, missing, pending := poison[0], poison[1], poison[2]
	exhausted, ackedLater, stranger := plain[0], plain[1], plain[2]
	acknowledged := map[string]ledgerEntry{}
	for _, id := range append(slices.Clone(poison), plain...) {
		acknowledged[id] = ledgerEntry{ID: id, Topic: hotTopic}
	}
	copies := copySnapshot{
		exhaustedAtMs:   map[string]int64{exhausted: 50, ackedLater: 60},
		ackedAtMs:       map[string]int64{ackedLater: 70, stranger: 10},
		lastDeliveredMs: map[string]int64{missing: 80, pending: 150},
		atLimit:         map[string]bool{exhausted: true, ackedLater: true},
	}
	stored := topicLogs{
		hotTopic: storedOf(t, hotTopic, map[int64]client.Message{0: keyed(message(t, lettered, 0, 0), "k"), 1: message(t, exhausted, 0, 1),
			2: message(t, stranger, 0, 2)}),
		deadTopic: storedOf(t, deadTopic, map[int64]client.Message{
			0: deadLetter(keyed(message(t, lettered, 0, 0), "k"), 0, 0, hotMaxDeliveries),
			1: deadLetter(message(t, exhausted, 0, 1), 0, 2, hotMaxDeliveries), // names the stranger's offset
			2: deadLetter(message(t, stranger, 0, 2), 0, 2, hotMaxDeliveries),  // never seen exhausted
			3: deadLetter(message(t, lettered, 0, 3), 0, 0, 1),                 // too few deliveries, and no key
			4: message(t, lettered, 0, 4),                                      // no origin
		}),
	}
	audit := auditDeadLetters(stored, acknowledged, copies, 100)
	assert.Equal(t, 4, audit.Expected, "three poison records and one seen exhausted")
	assert.Equal(t, []int{3, 1}, []int{audit.Poison, audit.Exhausted})
	assert.Equal(t, 2, audit.DeadLettered, "the lettered poison record and the exhausted one")
	assert.Equal(t, 1, audit.InSource, "delivered after the drain began")
	assert.Equal(t, 1, audit.MissingCount, "last delivered before the drain, and not dead-lettered")
	assert.Contains(t, audit.Missing[0], missing)
	assert.Equal(t, 1, audit.AckedAfterRestart)
	assert.Equal(t, 5, audit.RecordsRead)
	assert.Equal(t, 2, audit.OriginsMatched, "the lettered one and the stranger's")
	assert.Equal(t, 3, audit.OriginMismatches)
	assert.Equal(t, 1, audit.Unexpected, "the stranger")

	report := &Report{Audit: AuditResult{DeadLetters: audit}}
	report.judgeCopies()
	assert.Len(t, report.Failures, 2, "a missing dead letter; mismatched origins and a stranger")
}

func TestLedgerTracksCopiesAndExhaustion(t *testing.T) {
	l, err := newLedger(filepath.Join(t.TempDir(), "ledger.ndjson"), time.Now())
	require.NoError(t, err)
	defer l.close()
	poison, plain := idsWhere(t, true, 1)[0], idsWhere(t, false, 2)
	ids := []string{poison, plain[0], plain[1]}
	l.attempt(hotTopic, ids)
	require.NoError(t, l.acknowledge(hotTopic, ids, []client.Placement{{}, {Offset: 1}, {Offset: 2}}, "n1", true))
	uncopied, undead := l.waitingCopies()
	assert.Equal(t, len(ids), len(uncopied))
	assert.Equal(t, []string{poison}, undead, "a poison record must reach the dead-letter topic")

	for _, id := range ids {
		l.deliver("n1", childTopic, message(t, id, 0, 0))
	}
	last := message(t, plain[0], 0, 1)
	last.DeliveryCount = hotMaxDeliveries
	l.deliver("n1", hotTopic, last)
	l.settled(last, deliveryFailed) // its ack failed at the limit
	l.settled(message(t, plain[1], 0, 2), deliveryRefused)
	unanswered := message(t, plain[1], 0, 2)
	unanswered.DeliveryCount = hotMaxDeliveries
	l.settled(unanswered, deliveryUnknown) // its ack may have been applied
	uncopied, undead = l.waitingCopies()
	assert.Empty(t, uncopied)
	assert.ElementsMatch(t, []string{poison, plain[0]}, undead, "below the limit an unacked delivery is only a redelivery")
	l.deliver("n2", deadTopic, message(t, poison, 0, 0))
	l.deliver("n2", deadTopic, message(t, plain[0], 0, 0))
	_, undead = l.waitingCopies()
	assert.Empty(t, undead)
	assert.Equal(t, []deliveryOutcome{deliveryAcked, deliveryFailed, deliveryUnknown}, []deliveryOutcome{outcomeOf(204), outcomeOf(410), outcomeOf(0)})
	distinct, total, _, _ := l.deliveryCounts()
	assert.Equal(t, []int{1, 6}, []int{distinct, total}, "copies count as deliveries, not as deliveries of the hot topic's records")
}

func TestReportPrintsTheAuditPerTopic(t *testing.T) {
	report := &Report{Load: LoadCounters{Refused: map[int]int{}}, Producing: 10 * time.Second, Audit: AuditResult{
		AcknowledgedIn: map[string]int{hotTopic: 40, coldTopic: 6}, DurableIn: map[string]int{hotTopic: 40, coldTopic: 5},
		Child:       ChildAudit{Expected: 40, Copied: 39, MissingCount: 1, Missing: []string{"s1.7"}},
		DeadLetters: DeadLetterAudit{Expected: 2, DeadLettered: 2, RecordsRead: 2, OriginsMatched: 2}}}
	text := strings.Join(report.Lines(), "\n")
	for _, want := range []string{"audit soak: 40 of 40 records durable", "audit soak-cold: 5 of 6 records durable",
		"audit soak-child (fan-out child of soak): 39 of 40 acknowledged records of soak copied", "not copied s1.7",
		"audit soak-dead (dead letters of soak, max_deliveries 4): 2 of 2 exhausted records dead-lettered", "4 records/s"} {
		assert.Contains(t, text, want)
	}
	report.judgeCopies()
	assert.Equal(t, []string{"1 of 40 records answered 202 in soak never reached soak-child"}, report.Failures)
}
