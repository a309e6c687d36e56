package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/node"
)

// moveMetrics are the partition-move metrics (docs/operations.md#metrics):
// moves in flight in the cluster (this node's replica of the placement), and,
// for the moves into this node, outcomes, durations and bytes copied; for the
// partitions this node froze as a source, how long each freeze lasted.
type moveMetrics struct {
	inflight prometheus.Gauge
	sessions prometheus.Gauge
	frozen   prometheus.Gauge
	resting  prometheus.Gauge
	total    *prometheus.CounterVec
	duration prometheus.Histogram
	bytes    prometheus.Counter
	freeze   prometheus.Histogram
}

func newMoveMetrics(reg prometheus.Registerer) *moveMetrics {
	m := &moveMetrics{
		inflight: sampledGauge("moves_inflight", "Partition moves in flight in the cluster (targets set)."),
		sessions: sampledGauge("moves_sessions", "Moves into this node that it is copying."),
		frozen:   sampledGauge("moves_frozen_partitions", "Partitions this node keeps frozen (no produce) as the source of a move."),
		resting: sampledGauge("moves_resting_destinations",
			"Members the leader gives no new partition for a while, after moves to them kept ending without their flip (0 on followers)."),
		total: counterVec("moves_total", "Moves into this node that ended, by outcome (completed, force_promoted, aborted).",
			[]string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "narad", Name: "moves_duration_seconds",
			Help: "Duration of the moves into this node, start to end.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "moves_bytes_total",
			Help: "Bytes copied by moves into this node."}),
		freeze: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "narad", Name: "moves_freeze_duration_seconds",
			Help: "How long this node kept a partition frozen as the source of a move.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	for _, outcome := range []string{"completed", "force_promoted", "aborted"} {
		m.total.WithLabelValues(outcome)
	}
	reg.MustRegister(m.inflight, m.sessions, m.frozen, m.resting, m.total, m.duration, m.bytes, m.freeze)
	return m
}

// MoveEnded implements node.MoveObserver.
func (m *Metrics) MoveEnded(outcome string, durationMs, bytesCopied int64) {
	m.moves.total.WithLabelValues(outcome).Inc()
	m.moves.duration.Observe(float64(durationMs) / 1000)
	m.logger.Info("move ended", "outcome", outcome, "duration_ms", durationMs, "bytes", bytesCopied)
}

// MoveCopied implements node.MoveObserver.
func (m *Metrics) MoveCopied(bytes int64) { m.moves.bytes.Add(float64(bytes)) }

// FreezeEnded implements node.MoveObserver.
func (m *Metrics) FreezeEnded(durationMs int64) { m.moves.freeze.Observe(float64(durationMs) / 1000) }

var _ node.MoveObserver = (*Metrics)(nil)
