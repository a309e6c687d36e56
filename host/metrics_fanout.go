package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/node"
)

// fanoutMetrics are the metrics of the copies from parents into their
// children (docs/operations.md#metrics).
type fanoutMetrics struct {
	copied  *prometheus.CounterVec
	stalled *prometheus.CounterVec
	dropped *prometheus.CounterVec
	// lag is rebuilt from the node's cursors at every inventory poll.
	lag *prometheus.GaugeVec
	// cursors and steps follow node.Stats.FanoutCursors and
	// FanoutCursorSteps at every inventory poll; stepsSeen is the
	// FanoutCursorSteps already added to steps.
	cursors   prometheus.Gauge
	steps     prometheus.Counter
	stepsSeen uint64
}

func newFanoutMetrics(reg prometheus.Registerer) *fanoutMetrics {
	pc := []string{"parent", "child"}
	f := &fanoutMetrics{
		copied:  counterVec("fanout_committed_total", "Records copied from a parent into a child and durable there (at least once: a retry after a crash or a move counts again).", pc),
		stalled: counterVec("fanout_stalled_total", "Copy batches that did not reach the child: it refused or failed them, the parent's records could not be read, or this node's relays held their bytes bound; only that child's cursor waits to retry.", pc),
		dropped: counterVec("fanout_child_dropped_messages", "Parent records that expired before their copy reached the child (data loss for the child).", pc),
		lag:     sampledGaugeVec("fanout_lag_messages", "Parent records not yet copied into the child, summed over the parent partitions this node owns.", pc),
		cursors: sampledGauge("fanout_cursors", "Fan-out cursors loaded on this node: one per child and parent partition it owns."),
		steps: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "fanout_cursor_steps_total",
			Help: "Times the node's loop stepped a fan-out cursor (looked for a batch to copy); a cursor that waits (caught up, or for its linger, retry or due time) is not stepped."}),
	}
	reg.MustRegister(f.copied, f.stalled, f.dropped, f.lag, f.cursors, f.steps)
	return f
}

// setFanoutWork publishes the cursors and their steps.
func (m *Metrics) setFanoutWork(s node.Stats) {
	m.fanout.cursors.Set(float64(s.FanoutCursors))
	m.fanout.steps.Add(float64(s.FanoutCursorSteps - m.fanout.stepsSeen))
	m.fanout.stepsSeen = s.FanoutCursorSteps
}

// FanoutCopied implements node.FanoutObserver.
func (m *Metrics) FanoutCopied(parent, child string, _ int, records int) {
	m.fanout.copied.WithLabelValues(parent, child).Add(float64(records))
}

// FanoutStalled implements node.FanoutObserver.
func (m *Metrics) FanoutStalled(parent, child string, _ int) {
	m.fanout.stalled.WithLabelValues(parent, child).Inc()
}

// FanoutDropped implements node.FanoutObserver.
func (m *Metrics) FanoutDropped(parent, child string, _ int, records uint64) {
	m.fanout.dropped.WithLabelValues(parent, child).Add(float64(records))
}

// setFanoutLags rebuilds the lag gauges, one per child, so that links
// that went away (a detach, a move of the last partition) disappear.
func (m *Metrics) setFanoutLags(lags []node.FanoutLinkLag, dropped uint64) {
	m.inventory.Lock()
	defer m.inventory.Unlock()
	if m.seriesDropped.Load() != dropped {
		return // taken before a link's series were dropped (setInventory)
	}
	m.fanout.lag.Reset()
	for _, lag := range lags {
		m.fanout.lag.WithLabelValues(lag.Parent, lag.Child).Set(float64(lag.Messages))
	}
}

// FanoutLinkGone implements node.FanoutDetachObserver: a detached link
// (or one whose topic was deleted) leaves no series behind.
func (m *Metrics) FanoutLinkGone(parent, child string) {
	m.inventory.Lock()
	defer m.inventory.Unlock()
	m.seriesDropped.Add(1)
	for _, vec := range []partialDeleter{m.fanout.copied, m.fanout.stalled, m.fanout.dropped, m.fanout.lag} {
		vec.DeletePartialMatch(prometheus.Labels{"parent": parent, "child": child})
	}
}
