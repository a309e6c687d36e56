package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/meta"
	"narad/msg"
)

// stateBoundGauges show what the metastore holds under its cluster-wide
// bounds of users (meta.UsersMax) and of schema bytes, so that the 409s
// and 413s of a change past them can be seen coming. Each node shows its
// replica's numbers.
type stateBoundGauges struct {
	// users counts the users; usersMax is their bound.
	users, usersMax prometheus.Gauge
	// usersBytes is what the users hold (names, password hashes, grants);
	// usersBytesMax is its bound.
	usersBytes, usersBytesMax prometheus.Gauge
	// schemaBytes is the size of every kept schema version of every topic,
	// the total the metastore bounds at schemaBytesMax.
	schemaBytes, schemaBytesMax prometheus.Gauge
}

func newStateBoundGauges(reg prometheus.Registerer) stateBoundGauges {
	g := stateBoundGauges{
		users: sampledGauge("users", "Users of the cluster, the count users_max bounds."),
		usersMax: sampledGauge("users_max",
			"Bound of the cluster's users; a user create past it is refused (409)."),
		usersBytes: sampledGauge("users_bytes",
			"Bytes the cluster's users hold (names, password hashes, grants), the total users_bytes_max bounds."),
		usersBytesMax: sampledGauge("users_bytes_max",
			"Bound of users_bytes; a user create or grant change past it is refused (409)."),
		schemaBytes: sampledGauge("schema_bytes",
			"Bytes of the kept schema versions of every topic together, the total schema_bytes_max bounds."),
		schemaBytesMax: sampledGauge("schema_bytes_max",
			"Bound of schema_bytes; a create or alter with a schema past it is refused (413)."),
	}
	g.usersMax.Set(meta.UsersMax)
	g.usersBytesMax.Set(meta.UsersBytesMax)
	g.schemaBytesMax.Set(meta.SchemaBytesTotalMax)
	reg.MustRegister(g.users, g.usersMax, g.usersBytes, g.usersBytesMax, g.schemaBytes, g.schemaBytesMax)
	registerWireVersion(reg) // a constant beside the constant bounds
	return g
}

// set publishes the numbers (setStateBounds' caller runs on the loop).
func (g stateBoundGauges) set(users, usersBytes, schemaBytes int) {
	g.users.Set(float64(users))
	g.usersBytes.Set(float64(usersBytes))
	g.schemaBytes.Set(float64(schemaBytes))
}

// setStateBounds updates the gauges of the users and schemas held.
func (m *Metrics) setStateBounds(users, usersBytes, schemaBytes int) {
	m.inventory.Lock()
	defer m.inventory.Unlock()
	m.stateBounds.set(users, usersBytes, schemaBytes)
}

// schemaBytesOf sums the documents of every topic's kept schema versions,
// as the metastore counts them against its bound.
func schemaBytesOf(byTopic map[string][]msg.SchemaVersion) int {
	total := 0
	for _, versions := range byTopic { //determinism:ok a sum does not depend on order
		for _, version := range versions {
			total += len(version.Document)
		}
	}
	return total
}
