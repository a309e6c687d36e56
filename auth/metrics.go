package auth

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the series of an Authenticator (narad_auth_*).
type metrics struct {
	// attempts counts Verify outcomes by result: cached, verified,
	// unknown_user, no_users, wrong_password, rejected_cached, throttled
	// (the user's bucket is empty), source_throttled (the client
	// address's bucket is), unavailable.
	attempts *prometheus.CounterVec
	// bcryptRuns counts bcrypt runs by op: verify or hash.
	bcryptRuns *prometheus.CounterVec
}

func newMetrics(a *Authenticator, reg prometheus.Registerer) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "narad", Subsystem: "auth",
			Name: "attempts_total", Help: "Credential checks by result."}, []string{"result"}),
		bcryptRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "narad", Subsystem: "auth",
			Name: "bcrypt_runs_total", Help: "bcrypt runs by operation (verify, hash)."}, []string{"op"}),
	}
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "auth", Name: "bcrypt_waiting",
		Help: fmt.Sprintf("bcrypt runs (verify or hash) waiting for a turn now; a verification waits at most %s for one, then answers 503.", a.cfg.BcryptWaitMax)},
		func() float64 { return float64(a.bcryptWaiting.Load()) })
	sources := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "auth", Name: "sources_tracked",
		Help: fmt.Sprintf("Client addresses (IPv6: /64 prefixes) whose bucket of failed authentication attempts is not full; at most %d.", a.cfg.SourcesMax)},
		func() float64 { return float64(a.sourcesTracked()) })
	reg.MustRegister(m.attempts, m.bcryptRuns, waiting, sources, &tableCollector{a: a})
	return m
}

var (
	tableEntriesDesc = prometheus.NewDesc("narad_auth_table_entries", "Entries of the authentication tables.", []string{"table"}, nil)
	tableLimitDesc   = prometheus.NewDesc("narad_auth_table_entries_max", "Bounds of the authentication tables.", []string{"table"}, nil)
)

// tableCollector reports the size and bound of each table.
type tableCollector struct{ a *Authenticator }

func (c *tableCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tableEntriesDesc
	ch <- tableLimitDesc
}

func (c *tableCollector) Collect(ch chan<- prometheus.Metric) {
	verified, rejected, buckets, hashers, bucketsRoom := c.a.tableSizes()
	cfg := c.a.cfg
	for _, row := range []struct {
		table       string
		size, bound int
	}{{"verified", verified, cfg.VerifiedUsersMax}, {"rejected", rejected, cfg.RejectedUsersMax},
		{"buckets", buckets, bucketsRoom}, {"bcrypt_turns", len(c.a.bcryptTurns), cfg.BcryptConcurrencyMax},
		{"bcrypt_hash_turns", len(c.a.hashTurns), cfg.hashTurnsMax()}, {"hashers", hashers, hashersMax}} {
		ch <- prometheus.MustNewConstMetric(tableEntriesDesc, prometheus.GaugeValue, float64(row.size), row.table)
		ch <- prometheus.MustNewConstMetric(tableLimitDesc, prometheus.GaugeValue, float64(row.bound), row.table)
	}
}
