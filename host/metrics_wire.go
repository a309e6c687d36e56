package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/wire"
)

// registerWireVersion shows the wire version this binary speaks to its
// peers: nodes of two versions refuse each other's connections, so a
// scrape of each node tells which of them can run side by side (a node
// started on another release than the rest serves nothing).
func registerWireVersion(reg prometheus.Registerer) {
	version := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Name: "wire_version",
		Help: "The node-to-node wire version this binary speaks; nodes of different versions refuse each other."})
	version.Set(wire.Version)
	reg.MustRegister(version)
}
