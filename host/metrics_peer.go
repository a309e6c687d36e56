package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/meta"
	"narad/peer"
)

// newPeerMarkedDown registers narad_peer_marked_down: per peer, 1 while
// the node refuses forwards to it (node.PeerMarkedDown), set by the loop
// at each peer check (loop.checkUnreachable).
func newPeerMarkedDown(reg prometheus.Registerer) *prometheus.GaugeVec {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "narad", Name: "peer_marked_down",
		Help: "1 while the node treats the peer as unreachable: requests for its partitions get a 503 at once instead of a forward."}, []string{"peer"})
	reg.MustRegister(gauge)
	return gauge
}

// peerCollector exposes the transport's counters (peer.Stats), read at
// each scrape: the transport already counts, so nothing is copied on the
// hot path.
type peerCollector struct {
	// stats snapshots the transport's counters; safe from any goroutine.
	stats func() peer.Stats

	sent, dropped, connections, dialFailures, authFailures *prometheus.Desc
	shortConnections                                       *prometheus.Desc
	connected, queued, queuedBytes                         *prometheus.Desc
	delivered, unroutable, inboundRefused                  *prometheus.Desc
	inboundAuthFailures, inboundBroken                     *prometheus.Desc
	inboundHandshakeErrors, handshakesShed                 *prometheus.Desc
	inboundConnections, handshakesInFlight                 *prometheus.Desc
}

func newPeerCollector(stats func() peer.Stats) *peerCollector {
	perPeer := []string{"peer"}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("narad", "peer", name), help, labels, nil)
	}
	return &peerCollector{
		stats: stats,
		sent:  desc("sent_total", "Envelopes written to the peer's connection.", perPeer),
		dropped: desc("dropped_total",
			"Envelopes to the peer discarded (their share of the send queue full, unreachable, write failed), by kind: control (Raft messages, heartbeats, joins) or data (forwarded requests and their answers).",
			[]string{"peer", "kind"}),
		connections:  desc("connections_total", "Authenticated connections to the peer established.", perPeer),
		dialFailures: desc("dial_failures_total", "Failed TCP connects to the peer.", perPeer),
		authFailures: desc("auth_failures_total", "Handshakes with the peer that failed after connecting.", perPeer),
		shortConnections: desc("short_connections_total",
			"Authenticated connections to the peer that ended within a second (each followed by a backoff pause before the redial).", perPeer),
		connected:           desc("connected", "1 while an authenticated connection to the peer is up.", perPeer),
		queued:              desc("queued", "Envelopes waiting in the peer's send queue.", perPeer),
		queuedBytes:         desc("queued_bytes", "Payload bytes of the envelopes waiting in the peer's send queue.", perPeer),
		delivered:           desc("delivered_total", "Envelopes received from peers and handed to the node loop.", nil),
		unroutable:          desc("unroutable_total", "Envelopes addressed to no known peer.", nil),
		inboundRefused:      desc("inbound_refused_total", "Accepted connections closed at once: too many open.", nil),
		inboundAuthFailures: desc("inbound_auth_failures_total", "Accepted connections whose dialer failed to prove the cluster secret.", nil),
		inboundHandshakeErrors: desc("inbound_handshake_errors_total",
			"Accepted connections whose handshake failed otherwise (timeout, not a peer, wrong node, TLS).", nil),
		handshakesShed: desc("handshakes_shed_total", "Handshakes closed to admit a newer connection: too many in flight.", nil),
		inboundBroken:  desc("inbound_broken_total", "Authenticated connections closed for a bad frame or envelope.", nil),
		inboundConnections: desc("inbound_connections",
			"Authenticated connections from peers open now (at most 1,024).", nil),
		handshakesInFlight: desc("handshakes_in_flight",
			"Accepted connections on the peer port still in their handshake (at most 64; past it the oldest is shed).", nil),
	}
}

// Describe implements prometheus.Collector.
func (c *peerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sent, c.dropped, c.connections, c.dialFailures, c.authFailures, c.shortConnections,
		c.connected, c.queued, c.queuedBytes, c.delivered, c.unroutable, c.inboundRefused, c.inboundAuthFailures, c.inboundBroken,
		c.inboundHandshakeErrors, c.handshakesShed, c.inboundConnections, c.handshakesInFlight} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *peerCollector) Collect(ch chan<- prometheus.Metric) {
	stats := c.stats()
	counter := func(d *prometheus.Desc, value uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(value), labels...)
	}
	gauge := func(d *prometheus.Desc, value float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, value, labels...)
	}
	for id, p := range stats.Peers { //determinism:ok host is not the core; the registry sorts series
		counter(c.sent, p.Sent, id)
		counter(c.dropped, p.DroppedData, id, "data")
		counter(c.dropped, p.DroppedControl, id, "control")
		counter(c.connections, p.Connections, id)
		counter(c.dialFailures, p.DialFailures, id)
		counter(c.authFailures, p.AuthFailures, id)
		counter(c.shortConnections, p.ShortConnections, id)
		gauge(c.connected, boolFloat(p.Connected), id)
		gauge(c.queued, float64(p.Queued), id)
		gauge(c.queuedBytes, float64(p.QueuedBytes), id)
	}
	counter(c.delivered, stats.Delivered)
	counter(c.unroutable, stats.Unroutable)
	counter(c.inboundRefused, stats.InboundRefused)
	counter(c.inboundAuthFailures, stats.InboundAuthFailures)
	counter(c.inboundBroken, stats.InboundBroken)
	counter(c.inboundHandshakeErrors, stats.InboundHandshakeErrors)
	counter(c.handshakesShed, stats.HandshakesShed)
	gauge(c.inboundConnections, float64(stats.InboundConnections))
	gauge(c.handshakesInFlight, float64(stats.HandshakesInFlight))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// newMetaGauges expose the replica's Raft positions, evaluated at each
// scrape: a replica whose applied index stays behind the others' is cut
// off from the log.
func newMetaGauges(status func() meta.Status) []prometheus.Collector {
	gauge := func(name, help string, value func(meta.Status) uint64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "narad", Name: name, Help: help},
			func() float64 { return float64(value(status())) })
	}
	return []prometheus.Collector{
		gauge("meta_term", "Raft term of this node's metadata replica.", func(s meta.Status) uint64 { return s.Term }),
		gauge("meta_commit_index", "Highest metadata log index this replica knows committed.", func(s meta.Status) uint64 { return s.Commit }),
		gauge("meta_applied_index", "Metadata log index this replica has applied.", func(s meta.Status) uint64 { return s.Applied }),
		gauge("meta_snapshot_index", "Index of this replica's latest metadata snapshot (the log before it is compacted).",
			func(s meta.Status) uint64 { return s.SnapshotIndex }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "narad", Name: "meta_snapshots_installed_total",
			Help: "Metadata snapshots received from the leader and installed since this process started (a replica too far behind, or a node that joined after compaction)."},
			func() float64 { return float64(status().SnapshotsInstalled) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "narad", Name: "meta_snapshots_too_large_total",
			Help: "Metadata snapshots this node, leading, did not send because their message was over the transport's bound (meta.SnapshotMessageBytesMax): a follower that needs one cannot catch up; fewer topics or partitions shrink it."},
			func() float64 { return float64(status().SnapshotsTooLarge) }),
	}
}

// newLeaderGauge exposes whether this node leads the metastore's group
// (narad_meta_leader), evaluated at each scrape.
func newLeaderGauge(isLeader func() bool) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "narad", Name: "meta_leader",
		Help: "1 if this node leads the metadata (Raft) group, as seen from the leader messages it sends."},
		func() float64 { return boolFloat(isLeader()) })
}
