package soak

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"narad/client"
)

// ErrPayload marks a stored record whose payload is not one the soak
// produced.
var ErrPayload = errors.New("payload is not a soak record")

// Record payloads are "soak:<id>;" followed by padding, so that replay and
// consume can recover the id of any record the soak wrote.
const (
	payloadPrefix    = "soak:"
	payloadSeparator = ';'
)

// encodePayload builds the payload of record id padded to sizeBytes.
func encodePayload(id string, sizeBytes int) []byte {
	payload := make([]byte, 0, max(sizeBytes, len(id)+len(payloadPrefix)+1))
	payload = append(payload, payloadPrefix...)
	payload = append(payload, id...)
	payload = append(payload, payloadSeparator)
	for i := 0; len(payload) < sizeBytes; i++ {
		payload = append(payload, 'a'+byte(i%26))
	}
	return payload
}

// decodePayload returns the id a payload carries.
func decodePayload(payload []byte) (string, error) {
	text := string(payload)
	rest, ok := strings.CutPrefix(text, payloadPrefix)
	end := strings.IndexByte(rest, payloadSeparator)
	if !ok || end <= 0 {
		return "", fmt.Errorf("%w: %.40q", ErrPayload, text)
	}
	return rest[:end], nil
}

// ledgerEntry is one record answered 202: what it is, where the 202 says
// it landed, and when and through which node it was acknowledged.
type ledgerEntry struct {
	ID        string `json:"id"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	// Node is the node the produce was sent to; Batch tells a batch
	// produce from a single one.
	Node  string `json:"node"`
	Batch bool   `json:"batch"`
	// AtMs is the time of the 202, in ms since the run began; Step is the
	// scenario step under way then.
	AtMs int64  `json:"at_ms"`
	Step string `json:"step"`
}

// delivery is where a consumer first saw a record.
type delivery struct {
	node      string
	partition int
	offset    int64
	atMs      int64
	count     int
}

// ledger is the soak's account of the load: every record sent, every one
// answered 202 (also appended to a file in the run directory), and what
// the consumers saw. Safe for concurrent use.
type ledger struct {
	began time.Time

	// mu protects the fields below.
	mu sync.Mutex
	// attempted holds every id sent at least once, with its topic; sends
	// counts the requests that carried it.
	attempted map[string]string
	sends     map[string]int
	// acknowledged holds every id answered 202.
	acknowledged map[string]ledgerEntry
	// delivered holds the ids consumers received, with the first delivery.
	delivered map[string]*delivery
	// deliveries counts every delivery, redeliveries included.
	deliveries int
	// unknownDeliveries counts consumed payloads that carry no soak id.
	unknownDeliveries int
	// copies holds what the consumers saw of the child and dead-letter
	// topics, and how the hot topic's deliveries ended.
	copies copyLedger
	// file receives one JSON line per acknowledged record; fileErr is its
	// first write error.
	file    *os.File
	writer  *bufio.Writer
	fileErr error
	// step names the scenario step under way (set by the scenario).
	step string
}

func newLedger(path string, began time.Time) (*ledger, error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &ledger{began: began, attempted: map[string]string{}, sends: map[string]int{}, acknowledged: map[string]ledgerEntry{},
		delivered: map[string]*delivery{}, copies: newCopyLedger(), file: file, writer: bufio.NewWriter(file), step: "start"}, nil
}

func (l *ledger) sinceMs() int64 { return time.Since(l.began).Milliseconds() }

func (l *ledger) currentStep() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.step
}

func (l *ledger) setStep(step string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.step = step
}

// attempt notes ids about to be sent to topic (again).
func (l *ledger) attempt(topic string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.attempted[id] = topic
		l.sends[id]++
	}
}

// sentOnce reports whether id was carried by a single request.
func (l *ledger) sentOnce(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sends[id] == 1
}

// acknowledge records ids answered 202 with their placements (in request
// order), sent to node.
func (l *ledger) acknowledge(topic string, ids []string, placements []client.Placement, node string, batch bool) error {
	if len(placements) != len(ids) {
		return fmt.Errorf("a 202 for %d records of %s carried %d placements", len(ids), topic, len(placements))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	atMs := l.sinceMs()
	for i, id := range ids {
		entry := ledgerEntry{ID: id, Topic: topic, Partition: placements[i].Partition, Offset: placements[i].Offset,
			Node: node, Batch: batch, AtMs: atMs, Step: l.step}
		l.acknowledged[id] = entry
		l.write(entry)
	}
	return nil
}

func (l *ledger) write(entry ledgerEntry) {
	line, err := json.Marshal(entry)
	if err == nil {
		_, err = l.writer.Write(append(line, '\n'))
	}
	if err != nil && l.fileErr == nil {
		l.fileErr = err
	}
}

// deliver records a message consumed from topic.
func (l *ledger) deliver(node, topic string, m client.Message) {
	payload, err := m.Payload()
	var id string
	if err == nil {
		id, err = decodePayload(payload)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deliveries++
	if err != nil {
		l.unknownDeliveries++
		return
	}
	if l.copies.deliver(topic, id, l.sinceMs()) {
		return
	}
	if first, seen := l.delivered[id]; seen {
		first.count++
		return
	}
	l.delivered[id] = &delivery{node: node, partition: m.Partition, offset: m.Offset, atMs: l.sinceMs(), count: 1}
}

// undelivered returns the acknowledged ids no consumer has seen, sorted.
func (l *ledger) undelivered() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for id := range l.acknowledged {
		if l.delivered[id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// snapshot returns copies of the ledger's maps for the audit.
func (l *ledger) snapshot() (attempted map[string]string, acknowledged map[string]ledgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.attempted), maps.Clone(l.acknowledged)
}

// firstDelivery returns where a consumer first saw id, if one did.
func (l *ledger) firstDelivery(id string) (delivery, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.delivered[id]
	if !ok {
		return delivery{}, false
	}
	return *d, true
}

// deliveryCounts returns the delivery totals.
func (l *ledger) deliveryCounts() (distinct, total, redelivered, unknown int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, d := range l.delivered {
		if _, ok := l.acknowledged[id]; ok {
			distinct++
		}
		if d.count > 1 {
			redelivered++
		}
	}
	return distinct, l.deliveries, redelivered, l.unknownDeliveries
}

// close flushes and closes the file.
func (l *ledger) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.fileErr, l.writer.Flush(), l.file.Close())
}

// flush pushes buffered lines to the file (so a failed run's ledger is
// complete up to the failure).
func (l *ledger) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.fileErr, l.writer.Flush())
}
