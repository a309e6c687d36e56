package host

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"narad/httpapi"
	"narad/loglimit"
	"narad/msg"
	"narad/node"
)

// eventLogsPerSecond is how many warnings of one kind Event logs per
// second: the node emits some per request (forward-timed-out, one for
// each forward a flooded peer did not answer), and a line each buried the
// log. The metrics count every one.
const eventLogsPerSecond = 1

// Metrics holds the node-level Prometheus metrics
// (docs/operations.md#metrics) and turns node events into them and into log
// lines. It implements node.Observer.
type Metrics struct {
	logger *slog.Logger
	// eventLogs rate-limits the warnings Event logs to eventLogsPerSecond
	// per kind. Fixed at creation.
	eventLogs *loglimit.Limiter
	// inventory serialises the inventory setters (setInventory,
	// setFanoutLags, setStateBounds): the inventory poll's goroutine sets
	// them (loop.requestStats), and the counters they keep (the last
	// figures seen, to add the difference) must not be read and written
	// by two at once.
	inventory sync.Mutex
	// seriesDropped counts the drops of series that a sample rebuilds (a
	// deleted topic's, a detached fan-out link's); a drop bumps it under
	// inventory. A sample taken on the loop carries the count as of its
	// taking, and a setter given a sample older than a drop keeps the
	// series as they are rather than set the dropped ones again (the next
	// sample, 5 s on, rebuilds them).
	seriesDropped atomic.Uint64

	producedMessages *prometheus.CounterVec
	producedBytes    *prometheus.CounterVec
	consumedMessages *prometheus.CounterVec
	consumedBytes    *prometheus.CounterVec
	// returned counts the records handed back undelivered (AckReturn),
	// each counted in consumedMessages when it was reserved.
	returned       *prometheus.CounterVec
	consumePolls   *prometheus.CounterVec
	consumeEmpty   *prometheus.CounterVec
	consumeWait    *prometheus.HistogramVec
	consumerLag    *prometheus.GaugeVec
	inflight       *prometheus.GaugeVec
	ackedAhead     *prometheus.GaugeVec
	ackRejected    *prometheus.CounterVec
	ackRepeated    *prometheus.CounterVec
	ackExtended    *prometheus.CounterVec
	nacks          *prometheus.CounterVec
	deadLetters    *prometheus.CounterVec
	relaysInFlight prometheus.Gauge
	relaysMax      prometheus.Gauge
	relayBytes     prometheus.Gauge
	relayBytesMax  prometheus.Gauge
	held           prometheus.Gauge
	heldMax        prometheus.Gauge
	diskFree       prometheus.Gauge
	diskReserve    prometheus.Gauge
	diskLow        prometheus.Gauge
	// diskRefusals follows node.Stats.DiskReserveRefusals;
	// diskRefusalsSeen is the count it was last brought to.
	diskRefusals     prometheus.Counter
	diskRefusalsSeen uint64
	corruptSkipped   *prometheus.CounterVec
	consumerDropped  *prometheus.CounterVec
	retentionBytes   *prometheus.CounterVec
	retentionRecords *prometheus.CounterVec
	errors           *prometheus.CounterVec
	events           *prometheus.CounterVec
	syncRound        prometheus.Histogram
	roundRecords     prometheus.Histogram
	gatherWaits      prometheus.Counter // rounds the loop held in the gather window
	// consumesUnclaimed counts consume replies not sent (the client left,
	// the reply budget refused them, the caller lost its right); their
	// records were handed back.
	consumesUnclaimed prometheus.Counter
	bootSeconds       prometheus.Gauge
	topics            prometheus.Gauge
	partitions        prometheus.Gauge
	openLogs          prometheus.Gauge
	zeroTailBytes     prometheus.Gauge
	keptLogs          prometheus.Gauge
	keptLogBytes      prometheus.Gauge
	openLogIndexBytes prometheus.Gauge
	leasesHeld        prometheus.Gauge
	leasesMax         prometheus.Gauge
	keptLogBytesMax   prometheus.Gauge
	openLogsMax       prometheus.Gauge
	// logEvictions follows node.Stats.LogEvictions; logEvictionsSeen is
	// the value last added (setInventory runs on the loop only).
	logEvictions     prometheus.Counter
	logEvictionsSeen uint64
	parkedPolls      prometheus.Gauge
	// parkedPollsMax is the bound of parkedPolls (node.Config.WaitersMax),
	// set once as the host starts.
	parkedPollsMax prometheus.Gauge
	peerStepErrors prometheus.Counter
	peerUnsent     prometheus.Counter
	// peerMarkedDown is 1 per peer while the node refuses forwards to it
	// (node.PeerMarkedDown), set by the loop at each peer check.
	peerMarkedDown *prometheus.GaugeVec
	moves          *moveMetrics
	// reads are the metastore leader's reads and the held requests
	// refused at once (metrics_reads.go).
	reads *readMetrics
	// placement shows the placement limits and this node's count under
	// them, so that their 409s can be seen coming.
	placement placementGauges
	// stateBounds show the metastore's users and schema bytes under their
	// cluster-wide bounds.
	stateBounds stateBoundGauges
	// flowMu guards flows: the produced or consumed counters (messages,
	// bytes) of each partition seen, so that a record counted does not
	// format and hash its labels again. Its keys are the label sets of
	// those four vectors, which hold the same series.
	flowMu sync.Mutex
	flows  map[flowKey]flowCounters
	// fanout are the metrics of the copies into fan-out children.
	fanout *fanoutMetrics
	// forgetters drop the per-topic series kept outside these metrics
	// (the HTTP layer's); set by forgetTopicsIn before the loop starts.
	forgetters []httpapi.TopicForgetter
}

// flowKey names one partition's produced or consumed counters.
type flowKey struct {
	topic     string
	partition int
	consumed  bool
}

// flowCounters are one partition's messages and bytes, produced or
// consumed.
type flowCounters struct{ messages, bytes prometheus.Counter }

// storageBuckets span 100 µs to about 1.6 s.
var storageBuckets = prometheus.ExponentialBuckets(0.0001, 2, 15)

// roundRecordsBuckets span 1 to 4096 records per sync round.
var roundRecordsBuckets = prometheus.ExponentialBuckets(1, 2, 13)

// registerFsyncs exposes the fsyncs counted by the node's file system
// (partition logs, hwm, consumer offsets and directories; the metastore's
// bbolt file is not included), and the file-system syncs that stood in for
// several of them (group sync).
func registerFsyncs(reg prometheus.Registerer, fsyncs, groupSyncs func() uint64) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "narad", Name: "storage_fsyncs_total",
		Help: "fsyncs run on partition files and directories (the metastore's own are not counted)."},
		func() float64 { return float64(fsyncs()) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "narad", Name: "storage_group_syncs_total",
		Help: "syncfs calls that made the records of several partitions durable at once (storage.group_sync)."},
		func() float64 { return float64(groupSyncs()) }))
}

// NewMetrics registers the node metrics on reg.
func NewMetrics(reg prometheus.Registerer, logger *slog.Logger) *Metrics {
	tp := []string{"topic", "partition"}
	m := &Metrics{
		logger: logger, eventLogs: loglimit.New(eventLogsPerSecond),
		flows:            map[flowKey]flowCounters{},
		producedMessages: counterVec("messages_produced_total", "Records appended at this owner.", tp),
		producedBytes:    counterVec("bytes_produced_total", "Payload bytes appended at this owner.", tp),
		consumedMessages: counterVec("messages_consumed_total", "Records reserved for consumes at this owner, and records read by replays; records handed back undelivered (messages_returned_total) are counted, and counted again when delivered again.", tp),
		consumedBytes:    counterVec("bytes_consumed_total", "Payload bytes of the records counted in messages_consumed_total.", tp),
		returned:         counterVec("messages_returned_total", "Records reserved here and handed back undelivered (a consume reply whose client left before it was sent, that the reply budget refused, or whose caller lost the right to consume while it waited; a probe's records for a poll answered meanwhile); each was counted in messages_consumed_total.", []string{"topic"}),
		consumePolls:     counterVec("consume_polls_total", "Consume requests answered, by outcome: hit (delivered records, waiting or not), no_wait (did not wait, answered at once with nothing), timeout (waited, answered with nothing), cancelled, moved, waiters_full.", []string{"topic", "outcome"}),
		consumeEmpty:     counterVec("consume_empty_total", "Consume requests answered with nothing: the no_wait and timeout outcomes.", []string{"topic"}),
		consumeWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "narad", Name: "consume_wait_seconds",
			Help: "How long consumes were parked, by outcome.", Buckets: []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60}}, []string{"topic", "outcome"}),
		consumerLag:      sampledGaugeVec("consumer_lag_messages", "High-watermark minus committed offset, per open partition log and per partition with a backlog whose log is closed (as it closed, or, not opened since start, as its files hold it).", tp),
		inflight:         sampledGaugeVec("inflight_size", "Reserved, unacked records, for the partitions of narad_consumer_lag_messages.", tp),
		ackedAhead:       sampledGaugeVec("acked_ahead_size", "Records acked above the committed offset, for the partitions of narad_consumer_lag_messages.", tp),
		ackRejected:      counterVec("ack_rejected_total", "Acks refused, by reason: stale (410), cap (503: the acked-ahead set full), error (any other failure of the lease table, 500).", []string{"reason"}),
		ackRepeated:      counterVec("ack_repeated_total", "Acks of records already acknowledged (a retried ack that had landed), answered 204.", []string{"topic"}),
		ackExtended:      counterVec("ack_extended_total", "Leases extended.", []string{"topic"}),
		nacks:            counterVec("nack_total", "Leases released for redelivery.", []string{"topic"}),
		deadLetters:      counterVec("dead_letters_total", "Records that ran out of deliveries, acknowledged in their topic once their copy was durable in its dead-letter topic.", []string{"topic"}),
		relaysInFlight:   sampledGauge("relays_in_flight", "Writes this node makes into topics on its own behalf (batches of dead letters, batches of fan-out copies) not yet durable."),
		relaysMax:        sampledGauge("relays_in_flight_max", "Cap of relays_in_flight; past it exhausted records wait."),
		relayBytes:       sampledGauge("relay_bytes_in_flight", "Key and payload bytes of relays_in_flight."),
		relayBytesMax:    sampledGauge("relay_bytes_in_flight_max", "Cap of relay_bytes_in_flight; past it a new relay waits (one alone always goes)."),
		held:             sampledGauge("held_requests", "Requests waiting for their topic, or the partition they pin, to reach this node's replica of the metadata (a topic just created or grown elsewhere)."),
		heldMax:          sampledGauge("held_requests_max", "Cap of held_requests; past it such a request is answered 503 at once."),
		diskFree:         sampledGauge("disk_free_bytes", "Bytes the data directory's file system has free for the node as it estimates them: the last read (statfs, about once a second) less what it appended since."),
		diskReserve:      sampledGauge("disk_reserve_bytes", "Free space the node keeps (storage.disk_reserve_bytes): under it, it refuses writes into its partitions."),
		diskLow:          sampledGauge("disk_low", "1 while the node's free space, as it estimates it, is under its reserve and it refuses writes into its partitions."),
		corruptSkipped:   counterVec("consumer_corrupt_skipped_total", "Corrupt records skipped by consumers.", tp),
		consumerDropped:  counterVec("consumer_dropped_messages", "Unacked records deleted by retention.", tp),
		retentionBytes:   counterVec("storage_retention_bytes_deleted_total", "Bytes deleted by retention.", tp),
		retentionRecords: counterVec("storage_retention_messages_deleted_total", "Records deleted by retention.", tp),
		errors:           counterVec("errors_total", "Operational errors by component and kind.", []string{"component", "kind"}),
		events:           counterVec("node_events_total", "Every node event by kind, the routine course of moves and decommissions included.", []string{"kind"}),
		syncRound: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "narad",
			Name: "storage_sync_round_duration_seconds", Help: "Time to persist one Ready (all its fsyncs).", Buckets: storageBuckets}),
		roundRecords: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "narad",
			Name: "storage_round_records", Help: "Records made durable by one sync round that made any (all its logs).", Buckets: roundRecordsBuckets}),
		gatherWaits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "loop_gather_waits_total",
			Help: "Rounds that waited (up to the gather window) for more requests to share their sync round."}),
		consumesUnclaimed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "consume_unclaimed_total",
			Help: "Consume answers not sent: their client had left before they were sent, the reply budget refused them, or their caller lost the right to consume while it waited (401 or 403); their records were handed back for redelivery, the delivery uncounted."}),
		bootSeconds:       gauge("boot_duration_seconds", "Time from start to serving."),
		topics:            sampledGauge("topics_total", "Topics known to this node."),
		partitions:        sampledGauge("partitions_total", "Partitions of the known topics."),
		openLogs:          sampledGauge("open_partition_logs", "Partition logs open."),
		openLogsMax:       sampledGauge("open_partition_logs_max", "Cap of the partition logs open at once."),
		keptLogs:          sampledGauge("storage_kept_closed_logs", "Partition logs closed for room or idleness and kept in memory, so that their next open reads none of their segments."),
		keptLogBytes:      sampledGauge("storage_kept_closed_log_bytes", "Memory of the kept closed logs (their indexes)."),
		leasesHeld:        sampledGauge("leases_held", "Offsets the node's lease tables hold (records delivered and not acked, acks above a frontier); the node's own count is exact, moved by every change of a table."),
		leasesMax:         sampledGauge("leases_max", "Bound of narad_leases_held; at it a consume served here delivers only records delivered before and released since, and answers 503 when it finds none."),
		openLogIndexBytes: sampledGauge("storage_open_log_index_bytes", "Memory of the open partition logs' indexes (4 bytes a record of their segments)."),
		keptLogBytesMax:   sampledGauge("storage_kept_closed_log_bytes_max", "Cap of storage_kept_closed_log_bytes (storage.closed_logs_kept_bytes_max); past it the least recently closed are forgotten."),
		zeroTailBytes: sampledGauge("storage_zero_tail_bytes",
			"Disk preallocated as zeros ahead of the partition logs' frames (open logs, and logs closed since start): at most 1 MiB per open log, 64 KiB per closed one."),
		logEvictions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "partition_log_evictions_total",
			Help: "Partition logs closed to stay under the cap of open logs (they reopen on demand)."}),
		parkedPolls: sampledGauge("consume_parked_polls", "Long polls parked on this node."),
		peerStepErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "peer_step_errors_total",
			Help: "Envelopes from peers the node refused (unknown type, stale or malformed)."}),
		peerUnsent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "peer_unsent_total",
			Help: "Envelopes dropped because this node runs without a cluster transport."}),
	}
	m.register(reg)
	m.peerMarkedDown, m.placement = newPeerMarkedDown(reg), newPlacementGauges(reg)
	m.moves, m.reads, m.parkedPollsMax, m.diskRefusals = newMoveMetrics(reg), newReadMetrics(reg), newParkedPollsMax(reg), newDiskRefusals(reg)
	m.fanout, m.stateBounds = newFanoutMetrics(reg), newStateBoundGauges(reg)
	return m
}

func (m *Metrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.producedMessages, m.producedBytes, m.consumedMessages, m.consumedBytes, m.returned,
		m.consumePolls, m.consumeEmpty, m.consumeWait, m.consumerLag, m.inflight, m.ackedAhead, m.ackRejected, m.ackRepeated, m.ackExtended, m.nacks, m.deadLetters, m.relaysInFlight, m.relaysMax, m.relayBytes, m.relayBytesMax, m.held, m.heldMax, m.diskFree, m.diskReserve, m.diskLow, m.corruptSkipped,
		m.consumerDropped, m.retentionBytes, m.retentionRecords, m.errors, m.events, m.syncRound, m.roundRecords,
		m.gatherWaits, m.consumesUnclaimed, m.bootSeconds, m.topics, m.partitions, m.openLogs, m.openLogsMax, m.zeroTailBytes, m.keptLogs, m.keptLogBytes, m.keptLogBytesMax, m.openLogIndexBytes, m.leasesHeld, m.leasesMax, m.logEvictions, m.parkedPolls, m.peerStepErrors, m.peerUnsent)
}

// newParkedPollsMax registers narad_consume_parked_polls_max, the bound
// of narad_consume_parked_polls, which Start sets once: the gauge of
// the parked polls had no bound beside it to compare with.
func newParkedPollsMax(reg prometheus.Registerer) prometheus.Gauge {
	bound := gauge("consume_parked_polls_max",
		"Bound of narad_consume_parked_polls; past it a consume that would wait is answered 503 (narad_consume_polls_total outcome waiters_full).")
	reg.MustRegister(bound)
	return bound
}

// newDiskRefusals registers narad_disk_reserve_refusals_total, which
// setInventory brings up to node.Stats.DiskReserveRefusals.
func newDiskRefusals(reg prometheus.Registerer) prometheus.Counter {
	refusals := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "disk_reserve_refusals_total",
		Help: "Clients' produces (or batches) this node refused 503 because its free space was under its reserve (pinned or keyed to its partitions, or with no other owner to go to), a part another node forwarded here included, even when that node then placed it elsewhere; the node's own fan-out copies and dead letters are not counted. Brought up to date with the sampled gauges."})
	reg.MustRegister(refusals)
	return refusals
}

func counterVec(name, help string, labels []string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "narad", Name: name, Help: help}, labels)
}

func gaugeVec(name, help string, labels []string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "narad", Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Name: name, Help: help})
}

// sampledNote ends the help of the gauges setInventory (and
// setFanoutLags) publishes: the loop reads the node's numbers at start
// and every inventoryPollInterval, so a scrape shows the last sample.
const sampledNote = " Sampled at start and every 5 s, not live."

// sampledGauge is a gauge setInventory sets; its help says so.
func sampledGauge(name, help string) prometheus.Gauge { return gauge(name, help+sampledNote) }

// sampledGaugeVec is a gauge vector setInventory (or setFanoutLags)
// rebuilds; its help says so.
func sampledGaugeVec(name, help string, labels []string) *prometheus.GaugeVec {
	return gaugeVec(name, help+sampledNote, labels)
}

// Produced implements node.Observer.
func (m *Metrics) Produced(topic string, partition int, records int, bytes int64) {
	counters := m.flowOf(flowKey{topic: topic, partition: partition})
	counters.messages.Add(float64(records))
	counters.bytes.Add(float64(bytes))
}

// Consumed implements node.Observer.
func (m *Metrics) Consumed(topic string, partition int, records int, bytes int64) {
	counters := m.flowOf(flowKey{topic: topic, partition: partition, consumed: true})
	counters.messages.Add(float64(records))
	counters.bytes.Add(float64(bytes))
}

// flowOf returns a partition's produced or consumed counters, looking
// them up in the vectors the first time only.
func (m *Metrics) flowOf(key flowKey) flowCounters {
	m.flowMu.Lock()
	defer m.flowMu.Unlock()
	if counters, ok := m.flows[key]; ok {
		return counters
	}
	messages, bytes := m.producedMessages, m.producedBytes
	if key.consumed {
		messages, bytes = m.consumedMessages, m.consumedBytes
	}
	p := strconv.Itoa(key.partition)
	counters := flowCounters{messages: messages.WithLabelValues(key.topic, p), bytes: bytes.WithLabelValues(key.topic, p)}
	m.flows[key] = counters
	return counters
}

// Acked implements node.Observer.
func (m *Metrics) Acked(topic string, action msg.AckAction, outcome string) {
	if outcome == "repeat" {
		m.ackRepeated.WithLabelValues(topic).Inc()
		return
	}
	if outcome != "ok" {
		m.ackRejected.WithLabelValues(outcome).Inc()
		return
	}
	switch action {
	case msg.AckReturn:
		m.returned.WithLabelValues(topic).Inc()
	case msg.AckExtend:
		m.ackExtended.WithLabelValues(topic).Inc()
	case msg.AckNack:
		m.nacks.WithLabelValues(topic).Inc()
	}
}

// ConsumeWait implements node.Observer.
func (m *Metrics) ConsumeWait(topic, outcome string, waitedMs int64) {
	m.consumePolls.WithLabelValues(topic, outcome).Inc()
	m.consumeWait.WithLabelValues(topic, outcome).Observe(float64(waitedMs) / 1000)
	if outcome == "timeout" || outcome == "no_wait" {
		m.consumeEmpty.WithLabelValues(topic).Inc()
	}
}

// DeadLettered implements node.DeadLetterObserver: the count is by the
// record's source topic.
func (m *Metrics) DeadLettered(origin msg.DeadLetterOrigin, _ string, _ msg.Placement) {
	m.deadLetters.WithLabelValues(origin.Topic).Inc()
}

// CorruptSkipped implements node.Observer.
func (m *Metrics) CorruptSkipped(topic string, partition int) {
	m.corruptSkipped.WithLabelValues(topic, strconv.Itoa(partition)).Inc()
}

// ConsumerDropped implements node.Observer.
func (m *Metrics) ConsumerDropped(topic string, partition int, records uint64) {
	m.consumerDropped.WithLabelValues(topic, strconv.Itoa(partition)).Add(float64(records))
}

// RetentionDeleted implements node.Observer.
func (m *Metrics) RetentionDeleted(topic string, partition int, bytes int64, records uint64) {
	p := strconv.Itoa(partition)
	m.retentionBytes.WithLabelValues(topic, p).Add(float64(bytes))
	m.retentionRecords.WithLabelValues(topic, p).Add(float64(records))
}

// routineEvents are the node events that record the normal course of a
// move, a decommission or a deletion: logged at info and counted in
// narad_node_events_total only. Every other event is a warning, counted
// in narad_errors_total as well.
var routineEvents = map[string]bool{
	"move-planned": true, "move-started": true, "move-catchup-done": true, "move-completed": true,
	"partition-frozen": true, "partition-unfrozen": true, "partition-moved-away": true,
	"voter-removal-proposed": true, "voter-removal-deferred": true, "member-forget-proposed": true, "leadership-transfer": true,
	"topic-purged": true, "stale-copy-deleted": true, "log-verified": true, "root-seeded": true,
	"proposal-repeated": true, "fanout-waits-for-move": true, "disk-low-ended": true, "dead-letters-authorised": true,
}

// Event implements node.Observer: every event is counted by kind and
// logged; those that are not routine are warnings and operational errors,
// and their lines are rate-limited per kind (eventLogsPerSecond), the
// next line of a kind saying how many were suppressed.
func (m *Metrics) Event(kind, detail string) {
	m.events.WithLabelValues(kind).Inc()
	if routineEvents[kind] {
		m.logger.Info("node event", "kind", kind, "detail", detail)
		return
	}
	m.errors.WithLabelValues("node", kind).Inc()
	logged, suppressed := m.eventLogs.Allow(kind)
	if !logged {
		return
	}
	attributes := []any{"kind", kind, "detail", detail}
	if suppressed > 0 {
		attributes = append(attributes, "suppressed", suppressed)
	}
	m.logger.Warn("node event", attributes...)
}

// setInventory updates the inventory gauges from the node's numbers. The
// per-partition series (of node.PartitionBacklogs) are rebuilt each
// time, so partitions of deleted topics, or moved away, disappear;
// dropped is seriesDropped as of the sample (it is not rebuilt from a
// sample older than a drop).
func (m *Metrics) setInventory(s node.Stats, partitions []node.PartitionState, dropped uint64) {
	m.inventory.Lock()
	defer m.inventory.Unlock()
	m.moves.inflight.Set(float64(s.MovesInFlight))
	m.moves.sessions.Set(float64(s.MoveSessions))
	m.moves.resting.Set(float64(s.RestingDestinations))
	m.moves.frozen.Set(float64(s.FrozenPartitions))
	m.topics.Set(float64(s.Topics))
	m.partitions.Set(float64(s.Partitions))
	m.placement.set(s)
	m.openLogs.Set(float64(s.OpenLogs))
	m.openLogsMax.Set(float64(s.OpenLogsMax))
	m.zeroTailBytes.Set(float64(s.ZeroTailBytes))
	m.keptLogs.Set(float64(s.KeptLogs))
	m.keptLogBytes.Set(float64(s.KeptLogBytes))
	m.openLogIndexBytes.Set(float64(s.OpenLogIndexBytes))
	m.leasesHeld.Set(float64(s.LeasesHeld))
	m.leasesMax.Set(float64(s.LeasesMax))
	m.keptLogBytesMax.Set(float64(s.KeptLogBytesMax))
	m.logEvictions.Add(float64(s.LogEvictions - m.logEvictionsSeen))
	m.logEvictionsSeen = s.LogEvictions
	m.setFanoutWork(s)
	m.parkedPolls.Set(float64(s.ParkedPolls))
	m.relaysInFlight.Set(float64(s.RelaysInFlight))
	m.relaysMax.Set(float64(s.RelaysInFlightMax))
	m.relayBytes.Set(float64(s.RelayBytesInFlight))
	m.relayBytesMax.Set(float64(s.RelayBytesInFlightMax))
	m.held.Set(float64(s.HeldRequests))
	m.heldMax.Set(float64(s.HeldRequestsMax))
	m.reads.set(s)
	m.diskFree.Set(float64(s.DiskFreeBytes))
	m.diskReserve.Set(float64(s.DiskReserveBytes))
	m.diskLow.Set(boolFloat(s.DiskLow))
	m.diskRefusals.Add(float64(s.DiskReserveRefusals - m.diskRefusalsSeen))
	m.diskRefusalsSeen = s.DiskReserveRefusals
	if m.seriesDropped.Load() != dropped {
		return // taken before a topic's series were dropped: it would bring them back
	}
	m.consumerLag.Reset()
	m.inflight.Reset()
	m.ackedAhead.Reset()
	for _, p := range partitions {
		labels := []string{p.Topic, strconv.Itoa(p.Partition)}
		m.consumerLag.WithLabelValues(labels...).Set(float64(p.HWM - p.Committed))
		m.inflight.WithLabelValues(labels...).Set(float64(p.InFlight))
		m.ackedAhead.WithLabelValues(labels...).Set(float64(p.AckedAhead))
	}
}

// TopicDropped implements node.TopicObserver: the series labelled with a
// deleted (or re-created) topic are forgotten, with the cached counters
// that point at them, so topic churn leaves no series behind and a topic
// re-created under the name counts from zero.
func (m *Metrics) TopicDropped(topic string) {
	m.inventory.Lock()
	defer m.inventory.Unlock()
	m.seriesDropped.Add(1)
	byTopic := prometheus.Labels{"topic": topic}
	for _, vec := range m.topicSeries() {
		vec.DeletePartialMatch(byTopic)
	}
	for _, vec := range []partialDeleter{m.fanout.copied, m.fanout.stalled, m.fanout.dropped, m.fanout.lag} {
		vec.DeletePartialMatch(prometheus.Labels{"parent": topic})
		vec.DeletePartialMatch(prometheus.Labels{"child": topic})
	}
	for _, forgetter := range m.forgetters {
		forgetter.ForgetTopic(topic)
	}
	m.flowMu.Lock()
	defer m.flowMu.Unlock()
	for key := range m.flows { //determinism:ok host is not the core; deletes only
		if key.topic == topic {
			delete(m.flows, key)
		}
	}
}

// forgetTopicsIn makes TopicDropped also drop the series handler keeps
// per topic, when it keeps any. Called before the loop starts.
func (m *Metrics) forgetTopicsIn(handler http.Handler) {
	if forgetter, ok := handler.(httpapi.TopicForgetter); ok {
		m.forgetters = append(m.forgetters, forgetter)
	}
}

// partialDeleter is a metric vector whose series can be deleted by a
// subset of their labels.
type partialDeleter interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// topicSeries are the vectors with a topic label.
func (m *Metrics) topicSeries() []partialDeleter {
	return []partialDeleter{m.producedMessages, m.producedBytes, m.consumedMessages, m.consumedBytes, m.returned, m.consumePolls,
		m.consumeEmpty, m.consumeWait, m.consumerLag, m.inflight, m.ackedAhead, m.ackRepeated, m.ackExtended, m.nacks,
		m.deadLetters, m.corruptSkipped, m.consumerDropped, m.retentionBytes, m.retentionRecords}
}
