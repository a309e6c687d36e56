package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/node"
)

// readMetrics show the metastore leader's reads of its own state (the
// quorum confirmations its 404s and 400s about a topic wait for,
// node/readbarrier.go) against their bound, and the requests refused at
// once for a bound of the held requests (narad_held_requests and its max
// are in Metrics). The node counts; the loop publishes the counts at
// each inventory poll.
type readMetrics struct {
	// outstanding are the leader's reads no quorum confirmed yet;
	// outstandingMax is their bound (meta.ReadRequestsMax).
	outstanding, outstandingMax prometheus.Gauge
	// confirmed follows node.Stats.MetaReadsConfirmed; confirmedSeen is
	// the value last added.
	confirmed     prometheus.Counter
	confirmedSeen uint64
	// refused counts the requests answered 503 at once by reason
	// (held_full); refusedSeen is the node's count last added.
	refused     *prometheus.CounterVec
	refusedSeen uint64
}

func newReadMetrics(reg prometheus.Registerer) *readMetrics {
	r := &readMetrics{
		outstanding: sampledGauge("meta_reads_outstanding",
			"Read requests of this node, leading the metastore, not yet confirmed by a quorum: its 404s and 400s about a topic, and its answers to other nodes' questions, wait for one."),
		outstandingMax: sampledGauge("meta_reads_outstanding_max",
			"Cap of meta_reads_outstanding (meta.ReadRequestsMax), a backstop: the node asks one read at a time."),
		confirmed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Name: "meta_reads_confirmed_total",
			Help: "Read requests of this node, leading the metastore, that a quorum confirmed: each lets every request held before it was asked be answered."}),
		refused: counterVec("held_requests_refused_total",
			"Requests answered 503 at once for a bound of the held requests: held_full (held_requests_max were held).",
			[]string{"reason"}),
	}
	reg.MustRegister(r.outstanding, r.outstandingMax, r.confirmed, r.refused)
	return r
}

// set publishes the node's numbers, adding to the counters what the node
// counted since the last call (setInventory's caller runs on the loop).
func (r *readMetrics) set(s node.Stats) {
	r.outstanding.Set(float64(s.MetaReadsOutstanding))
	r.outstandingMax.Set(float64(s.MetaReadsMax))
	r.confirmed.Add(float64(s.MetaReadsConfirmed - r.confirmedSeen))
	r.confirmedSeen = s.MetaReadsConfirmed
	r.refused.WithLabelValues("held_full").Add(float64(s.HeldRefusedFull - r.refusedSeen))
	r.refusedSeen = s.HeldRefusedFull
}
