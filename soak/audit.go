package soak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"narad/client"
	"narad/proc"
)

// ErrUnavailable is returned when a topic's partitions do not all become
// readable in time.
var ErrUnavailable = errors.New("partitions unavailable")

// placement is one offset of one partition of one topic.
type placement struct {
	topic     string
	partition int
	offset    int64
}

func (p placement) String() string { return fmt.Sprintf("%s/p%d@%d", p.topic, p.partition, p.offset) }

// storedLogs is what replay reads found in the partitions: the record id
// at each offset read, and every offset of each id. An offset that could
// not be read is in unreadable instead.
type storedLogs struct {
	mu        sync.Mutex
	idAt      map[placement]string
	offsetsOf map[string][]placement
	// keyAt holds the key of each keyed record read; originAt the
	// dead_letter origin of each record that carries one.
	keyAt      map[placement]string
	originAt   map[placement]client.DeadLetter
	foreign    []string
	unreadable []string
	// foreignCount counts payloads that carry no soak id.
	foreignCount int
	recordsRead  int
}

func newStoredLogs() *storedLogs {
	return &storedLogs{idAt: map[placement]string{}, offsetsOf: map[string][]placement{}, keyAt: map[placement]string{},
		originAt: map[placement]client.DeadLetter{}}
}

// topicLogs holds the stored logs of each topic read.
type topicLogs map[string]*storedLogs

// merged returns one storedLogs holding the given topics' records (their
// ids do not overlap: each topic's producers name their own).
func (t topicLogs) merged(topics ...string) *storedLogs {
	all := newStoredLogs()
	for _, topic := range topics {
		s := t[topic]
		if s == nil {
			continue
		}
		maps.Copy(all.idAt, s.idAt)
		maps.Copy(all.keyAt, s.keyAt)
		maps.Copy(all.originAt, s.originAt)
		for id, offsets := range s.offsetsOf {
			all.offsetsOf[id] = append(all.offsetsOf[id], offsets...)
		}
		all.foreign = append(all.foreign, s.foreign...)
		all.unreadable = append(all.unreadable, s.unreadable...)
		all.foreignCount += s.foreignCount
		all.recordsRead += s.recordsRead
	}
	return all
}

func (s *storedLogs) add(at placement, m client.Message) {
	payload, err := m.Payload()
	id := ""
	if err == nil {
		id, err = decodePayload(payload)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordsRead++
	if err != nil {
		s.foreignCount++
		if len(s.foreign) < missingShownMax {
			s.foreign = append(s.foreign, fmt.Sprintf("%s: %v", at, err))
		}
		return
	}
	s.idAt[at] = id
	s.offsetsOf[id] = append(s.offsetsOf[id], at)
	if m.Key != "" {
		s.keyAt[at] = m.Key
	}
	if m.DeadLetter != nil {
		s.originAt[at] = *m.DeadLetter
	}
}

func (s *storedLogs) unreadableAt(at placement, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unreadable = append(s.unreadable, fmt.Sprintf("%s: %s", at, why))
}

// MissingRecord is a record answered 202 that no replay read found.
type MissingRecord struct {
	entry ledgerEntry
	// heldBy is the id now stored at the record's placement ("" if none).
	heldBy string
	// delivered says whether a consumer saw it before it went missing.
	delivered    bool
	deliveryNote string
}

func (m MissingRecord) String() string {
	e := m.entry
	text := fmt.Sprintf("%s: 202 at %dms in step %s through %s (batch %t), placed at %s/p%d@%d",
		e.ID, e.AtMs, e.Step, e.Node, e.Batch, e.Topic, e.Partition, e.Offset)
	if m.heldBy != "" {
		text += "; that offset now holds " + m.heldBy
	}
	if m.delivered {
		text += "; " + m.deliveryNote
	}
	return text
}

// AuditResult is the outcome of the replay audit.
type AuditResult struct {
	// Acknowledged counts the ledger's records (answered 202); Durable
	// those found by a replay read. AcknowledgedIn and DurableIn count
	// them by topic.
	Acknowledged, Durable     int
	AcknowledgedIn, DurableIn map[string]int
	// Missing lists the acknowledged records no read found, sorted by id.
	Missing []MissingRecord
	// Misplaced counts durable records found, but not at the offset their
	// 202 named.
	Misplaced int
	// DuplicatedIDs counts ids stored at more than one offset;
	// DuplicateCopies the copies beyond the first; DuplicatedSentOnce the
	// duplicated ids that a single request carried (the broker, not a
	// client retry, wrote them twice).
	DuplicatedIDs, DuplicateCopies, DuplicatedSentOnce int
	// DuplicatedSentOnceShown lists the first of those, with their offsets.
	DuplicatedSentOnceShown []string
	// StoredUnacknowledged counts ids stored though never answered 202 (a
	// produce whose answer was lost or refused after the write).
	StoredUnacknowledged int
	// Foreign counts stored payloads that are no soak record, or an id the
	// soak never sent; ForeignShown lists the first few.
	Foreign      int
	ForeignShown []string
	// Unreadable lists the offsets below a high watermark that replay
	// could not read.
	Unreadable []string
	// RecordsRead counts the replay reads that returned a record.
	RecordsRead int
	// Partitions counts the partitions read; Took is the audit's duration.
	Partitions int
	Took       time.Duration
	// Child audits the fan-out child, DeadLetters the dead-letter topic.
	Child       ChildAudit
	DeadLetters DeadLetterAudit
}

// auditTask replays offsets [from, to) of one partition.
type auditTask struct {
	topic     string
	partition int
	from, to  int64
}

// runAudit reads every partition of every topic the ledger knows from
// its oldest offset to its high watermark, and the child and dead-letter
// topics, and compares what it finds with the ledger. drainBeganMs is
// when the load stopped producing (ms since the run began).
func runAudit(ctx context.Context, c *cluster, l *ledger, drainBeganMs int64) (AuditResult, error) {
	began := time.Now()
	attempted, acknowledged := l.snapshot()
	produced := slices.Sorted(maps.Keys(invert(attempted)))
	topics := append(slices.Clone(produced), childTopic, deadTopic)
	var tasks []auditTask
	for _, topic := range topics {
		topicTasks, err := partitionTasks(ctx, c, topic)
		if err != nil {
			return AuditResult{}, err
		}
		tasks = append(tasks, topicTasks...)
	}
	stored := topicLogs{}
	for _, topic := range topics {
		stored[topic] = newStoredLogs()
	}
	replayAll(ctx, c, tasks, stored)
	if ctx.Err() != nil {
		return AuditResult{}, ctx.Err()
	}
	result := compare(stored.merged(produced...), attempted, acknowledged, l)
	result.RecordsRead = 0
	for _, logs := range stored {
		result.RecordsRead += logs.recordsRead
	}
	copies := l.copySnapshot()
	result.Child = auditChild(stored, acknowledged)
	result.DeadLetters = auditDeadLetters(stored, acknowledged, copies, drainBeganMs)
	result.Partitions = countPartitions(tasks)
	result.Took = time.Since(began)
	return result, nil
}

func invert(attempted map[string]string) map[string]bool {
	topics := map[string]bool{}
	for _, topic := range attempted {
		topics[topic] = true
	}
	return topics
}

func countPartitions(tasks []auditTask) int {
	seen := map[placement]bool{}
	for _, task := range tasks {
		seen[placement{topic: task.topic, partition: task.partition}] = true
	}
	return len(seen)
}

// partitionTasks splits the readable range of each partition of topic
// into tasks, once every partition's owner is available.
func partitionTasks(ctx context.Context, c *cluster, topic string) ([]auditTask, error) {
	stats, err := availableStats(ctx, c, topic)
	if err != nil {
		return nil, err
	}
	var tasks []auditTask
	for _, s := range stats {
		for from := s.OldestOffset; from < s.HighWatermark; from += auditOffsetsPerTask {
			tasks = append(tasks, auditTask{topic: topic, partition: s.Index, from: from, to: min(from+auditOffsetsPerTask, s.HighWatermark)})
		}
	}
	return tasks, nil
}

// availableStats returns the partition stats of topic once every
// partition reports available (bounded by settleTimeout).
func availableStats(ctx context.Context, c *cluster, topic string) ([]client.PartitionStats, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		var described client.Topic
		err := c.control(ctx, func(ctx context.Context, cl *client.Client) error {
			var err error
			described, err = cl.GetTopic(ctx, topic, nil)
			return err
		})
		if err == nil && allAvailable(described.PartitionStats) {
			return described.PartitionStats, nil
		}
		if proc.SleepContext(ctx, pollInterval) != nil {
			return nil, fmt.Errorf("%w: topic %s within %s (last error: %v)", ErrUnavailable, topic, settleTimeout, err)
		}
	}
}

func allAvailable(stats []client.PartitionStats) bool {
	for _, s := range stats {
		if !s.IsAvailable() {
			return false
		}
	}
	return len(stats) > 0
}

// replayAll runs the tasks with at most auditReadersMax readers.
func replayAll(ctx context.Context, c *cluster, tasks []auditTask, stored topicLogs) {
	queue := make(chan auditTask)
	var readers sync.WaitGroup
	for reader := range auditReadersMax {
		readers.Go(func() {
			for task := range queue {
				replayTask(ctx, c, reader, task, stored[task.topic])
			}
		})
	}
	for _, task := range tasks {
		queue <- task
	}
	close(queue)
	readers.Wait()
}

func replayTask(ctx context.Context, c *cluster, reader int, task auditTask, stored *storedLogs) {
	for offset := task.from; offset < task.to && ctx.Err() == nil; offset++ {
		at := placement{topic: task.topic, partition: task.partition, offset: offset}
		message, err := replayOne(ctx, c, reader, at)
		switch {
		case err != nil:
			stored.unreadableAt(at, err.Error())
		case message == nil:
			stored.unreadableAt(at, "204 below the high watermark")
		default:
			stored.add(at, *message)
		}
	}
}

// replayOne reads one offset through a serving node, retrying answers
// that say "try again" up to auditRetryMax times.
func replayOne(ctx context.Context, c *cluster, reader int, at placement) (*client.Message, error) {
	var lastErr error
	for attempt := range auditRetryMax {
		running := c.serving()
		if len(running) == 0 {
			return nil, ErrNoNode
		}
		n := running[(reader+attempt)%len(running)]
		message, err := n.client.Replay(ctx, at.topic, at.partition, at.offset)
		if err == nil || !retryable(err) {
			return message, err
		}
		lastErr = err
		if proc.SleepContext(ctx, auditRetryPause) != nil {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("no answer after %d attempts: %w", auditRetryMax, lastErr)
}

// compare matches the stored logs against the ledger.
func compare(stored *storedLogs, attempted map[string]string, acknowledged map[string]ledgerEntry, l *ledger) AuditResult {
	result := AuditResult{Acknowledged: len(acknowledged), Foreign: stored.foreignCount, ForeignShown: stored.foreign,
		Unreadable: stored.unreadable, RecordsRead: stored.recordsRead, AcknowledgedIn: map[string]int{}, DurableIn: map[string]int{}}
	for _, id := range slices.Sorted(maps.Keys(acknowledged)) {
		entry := acknowledged[id]
		result.AcknowledgedIn[entry.Topic]++
		offsets := stored.offsetsOf[id]
		if len(offsets) == 0 {
			result.Missing = append(result.Missing, missingOf(entry, stored, l))
			continue
		}
		result.Durable++
		result.DurableIn[entry.Topic]++
		if !slices.Contains(offsets, placement{topic: entry.Topic, partition: entry.Partition, offset: entry.Offset}) {
			result.Misplaced++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(stored.offsetsOf)) {
		copies := len(stored.offsetsOf[id])
		if copies > 1 {
			result.DuplicatedIDs++
			result.DuplicateCopies += copies - 1
			if l.sentOnce(id) {
				result.DuplicatedSentOnce++
				if len(result.DuplicatedSentOnceShown) < duplicatesShownMax {
					result.DuplicatedSentOnceShown = append(result.DuplicatedSentOnceShown, fmt.Sprintf("%s (202 %s) stored at %v",
						id, describeEntry(acknowledged[id]), stored.offsetsOf[id]))
				}
			}
		}
		_, wasAcknowledged := acknowledged[id]
		_, wasSent := attempted[id]
		switch {
		case !wasSent:
			result.Foreign++
			if len(result.ForeignShown) < missingShownMax {
				result.ForeignShown = append(result.ForeignShown, fmt.Sprintf("%s: id %s was never sent", stored.offsetsOf[id][0], id))
			}
		case !wasAcknowledged:
			result.StoredUnacknowledged++
		}
	}
	return result
}

func describeEntry(e ledgerEntry) string {
	if e.ID == "" {
		return "never answered"
	}
	return fmt.Sprintf("at %dms in step %s through %s, batch %t, placed at %s/p%d@%d", e.AtMs, e.Step, e.Node, e.Batch, e.Topic, e.Partition, e.Offset)
}

func missingOf(entry ledgerEntry, stored *storedLogs, l *ledger) MissingRecord {
	m := MissingRecord{entry: entry, heldBy: stored.idAt[placement{topic: entry.Topic, partition: entry.Partition, offset: entry.Offset}]}
	if d, ok := l.firstDelivery(entry.ID); ok {
		m.delivered = true
		m.deliveryNote = fmt.Sprintf("first consumed at %dms through %s from p%d@%d", d.atMs, d.node, d.partition, d.offset)
	}
	return m
}
