package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// problemsOf returns the problems a Validate error joins.
func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "Validate joins its problems")
	var found []Problem
	for _, inner := range joined.Unwrap() {
		var problem Problem
		require.True(t, errors.As(inner, &problem), "every entry is a Problem: %v", inner)
		found = append(found, problem)
	}
	return found
}

// cluster3 turns cfg into a valid three-node cluster configuration.
func cluster3(cfg *Config) {
	cfg.Cluster.NodeID = "n1"
	cfg.Cluster.Addr = "10.0.0.1:7943"
	cfg.Cluster.Peers = []string{"n1@10.0.0.1:7943", "n2@10.0.0.2:7943", "n3@10.0.0.3:7943"}
	cfg.Security.ClusterSecret = "a-cluster-secret-16+"
}

func TestValidateRules(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Config)
		wantKey string
		wantIn  string
	}{
		{"read timeout zero", func(c *Config) { c.HTTP.ReadTimeout = 0 }, "http.read_timeout", "> 0"},
		{"dead-after under three heartbeats", func(c *Config) { c.Cluster.DeadAfterMs = 2 * c.Cluster.HeartbeatIntervalMs }, "cluster.dead_after_ms", "three heartbeat intervals"},
		{"heartbeat of a day, dead-after shorter", func(c *Config) { c.Cluster.HeartbeatIntervalMs = timingMsMax }, "cluster.dead_after_ms", "three heartbeat intervals"},
		{"heartbeat zero", func(c *Config) { c.Cluster.HeartbeatIntervalMs = 0 }, "cluster.heartbeat_interval_ms", "must be in [1, 86400000]"},
		{"meta snapshot interval too small", func(c *Config) { c.Cluster.MetaSnapshotEntries = 9 }, "cluster.meta_snapshot_entries", "between 10 and 1000000"},
		{"meta snapshot interval too large", func(c *Config) { c.Cluster.MetaSnapshotEntries = 1_000_001 }, "cluster.meta_snapshot_entries", "between 10 and 1000000"},
		{"moves in flight zero", func(c *Config) { c.Moves.MaxInFlight = 0 }, "moves.max_in_flight", "between 1 and 1024"},
		{"force promote negative", func(c *Config) { c.Moves.ForcePromoteAfterMs = -1 }, "moves.force_promote_after_ms", "must be in [1, 86400000]"},
		{"stall timeout past a day", func(c *Config) { c.Moves.StallTimeoutMs = 1 << 62 }, "moves.stall_timeout_ms", "must be in [1, 86400000]"},
		{"write timeout too long", func(c *Config) { c.HTTP.WriteTimeout = 2 * time.Hour }, "http.write_timeout", "≤ 1h"},
		{"idle timeout negative", func(c *Config) { c.HTTP.IdleTimeout = -time.Second }, "http.idle_timeout", "> 0"},
		{"consume wait vs write", func(c *Config) { c.HTTP.MaxConsumeWait = 9 * time.Second; c.HTTP.WriteTimeout = 9 * time.Second },
			"http.max_consume_wait", "< http.write_timeout"},
		{"consume wait vs grace", func(c *Config) { c.HTTP.ShutdownGrace = 5 * time.Second }, "http.max_consume_wait", "≤ http.shutdown_grace"},
		// The node counts waits in milliseconds: 500µs was accepted and
		// became 0, every long poll answered at once (review finding).
		{"consume wait under a millisecond", func(c *Config) { c.HTTP.MaxConsumeWait = 500 * time.Microsecond }, "http.max_consume_wait", "at least 1ms"},
		{"http addr bad", func(c *Config) { c.HTTP.Addr = "7942" }, "http.addr", "host:port"},
		{"http addr empty", func(c *Config) { c.HTTP.Addr = "" }, "http.addr", "host:port"},
		{"http port range", func(c *Config) { c.HTTP.Addr = ":70000" }, "http.addr", "1..65535"},
		{"addr collision", func(c *Config) { c.Cluster.Addr = ":7942" }, "cluster.addr", "collides with http.addr"},
		{"wildcard collision", func(c *Config) { c.Cluster.Addr = "127.0.0.1:7942" }, "cluster.addr", "collides"},
		{"pprof collision", func(c *Config) { c.HTTP.PprofAddr = "0.0.0.0:7943" }, "http.pprof_addr", "collides with cluster.addr"},
		{"pprof bad", func(c *Config) { c.HTTP.PprofAddr = "localhost" }, "http.pprof_addr", "host:port"},
		{"node id format", func(c *Config) { c.Cluster.NodeID = "n 1" }, "cluster.node_id", "must match"},
		{"peers need node id", func(c *Config) { cluster3(c); c.Cluster.NodeID = "" }, "cluster.node_id", "required"},
		{"peers too few", func(c *Config) { cluster3(c); c.Cluster.Peers = c.Cluster.Peers[:2] }, "cluster.peers", "between 3"},
		{"peer malformed", func(c *Config) { cluster3(c); c.Cluster.Peers = append(c.Cluster.Peers, "n4") }, "cluster.peers", "id@host:port"},
		{"peer without host", func(c *Config) { cluster3(c); c.Cluster.Peers = append(c.Cluster.Peers, "n4@:7943") }, "cluster.peers", "id@host:port"},
		{"peer duplicate id", func(c *Config) { cluster3(c); c.Cluster.Peers = append(c.Cluster.Peers, "n2@10.0.0.4:7943") }, "cluster.peers", `duplicate id "n2"`},
		{"peer duplicate addr", func(c *Config) { cluster3(c); c.Cluster.Peers = append(c.Cluster.Peers, "n4@10.0.0.2:7943") }, "cluster.peers", "duplicate address"},
		{"self missing", func(c *Config) { cluster3(c); c.Cluster.NodeID = "n9" }, "cluster.peers", "must include this node"},
		{"self addr mismatch", func(c *Config) { cluster3(c); c.Cluster.Addr = "10.0.0.1:9000" }, "cluster.peers", "does not match cluster.addr"},
		{"initial member unknown", func(c *Config) { cluster3(c); c.Cluster.InitialMembers = []string{"n1", "n7"} }, "cluster.initial_members", `"n7" is not in cluster.peers`},
		{"initial member duplicate", func(c *Config) { c.Cluster.InitialMembers = []string{"n1", "n1"} }, "cluster.initial_members", "duplicate"},
		{"secret required", func(c *Config) { cluster3(c); c.Security.ClusterSecret = "" }, "security.cluster_secret", "NARAD_CLUSTER_SECRET"},
		{"secret too short", func(c *Config) { cluster3(c); c.Security.ClusterSecret = "fifteen-bytes.." }, "security.cluster_secret", "at least 16 bytes (got 15)"},
		{"admin password too long", func(c *Config) { c.Security.AdminPassword = strings.Repeat("a", 73) }, "security.admin_password", "at most 72 bytes (got 73)"},
		{"tls cert without key", func(c *Config) { c.HTTP.TLSCertFile = "c.pem" }, "http.tls_cert_file", "NARAD_HTTP_TLS_KEY_FILE"},
		{"tls key without cert", func(c *Config) { c.HTTP.TLSKeyFile = "k.pem" }, "http.tls_cert_file", "set together"},
		{"tls partial", func(c *Config) { c.Cluster.TLSCertFile = "c.pem" }, "cluster.tls_cert_file", "1 of 3"},
		{"data dir empty", func(c *Config) { c.Storage.DataDir = "" }, "storage.data_dir", "empty"},
		{"codec", func(c *Config) { c.Storage.Codec = "gzip" }, "storage.codec", "one of"},
		{"compression level", func(c *Config) { c.Storage.CompressionLevel = "max" }, "storage.compression_level", "one of"},
		{"segment too small", func(c *Config) { c.Storage.SegmentBytes = 4095 }, "storage.segment_bytes", "[4096,"},
		{"segment too large", func(c *Config) { c.Storage.SegmentBytes = 2 << 30 }, "storage.segment_bytes", "[4096,"},
		{"connections negative", func(c *Config) { c.HTTP.MaxConnections = -1 }, "http.max_connections", "0 (derive"},
		{"body budget small", func(c *Config) { c.HTTP.MaxBodyBytesInFlight = 1 << 20 }, "http.max_body_bytes_in_flight", "[16777216,"},
		{"reply budget small", func(c *Config) { c.HTTP.MaxReplyBytesInFlight = 1 << 20 }, "http.max_reply_bytes_in_flight", "[16777216,"},
		{"reply budget large", func(c *Config) { c.HTTP.MaxReplyBytesInFlight = 65 << 30 }, "http.max_reply_bytes_in_flight", "68719476736]"},
		{"max topics zero", func(c *Config) { c.Topic.MaxTopics = 0 }, "topic.max_topics", "[1,"},
		{"partitions per node huge", func(c *Config) { c.Topic.MaxPartitionsPerNode = 1<<24 + 1 }, "topic.max_partitions_per_node", "[1,"},
		{"open logs negative", func(c *Config) { c.Storage.OpenLogsMax = -1 }, "storage.open_logs_max", "0 (derive"},
		{"open logs huge", func(c *Config) { c.Storage.OpenLogsMax = 1<<20 + 1 }, "storage.open_logs_max", "[1, 1048576]"},
		{"kept logs negative", func(c *Config) { c.Storage.ClosedLogsKeptBytesMax = -1 }, "storage.closed_logs_kept_bytes_max", "[0, 68719476736]"},
		{"kept logs huge", func(c *Config) { c.Storage.ClosedLogsKeptBytesMax = 64<<30 + 1 }, "storage.closed_logs_kept_bytes_max", "[0, 68719476736]"},
		{"disk reserve negative", func(c *Config) { c.Storage.DiskReserveBytes = -1 }, "storage.disk_reserve_bytes", "[0, 1099511627776]"},
		{"disk reserve huge", func(c *Config) { c.Storage.DiskReserveBytes = 1<<40 + 1 }, "storage.disk_reserve_bytes", "[0, 1099511627776]"},
		{"idle eviction short", func(c *Config) { c.Storage.IdleLogEvictionMs = 59_999 }, "storage.idle_log_eviction_ms", "≥ 60000"},
		{"max partitions high", func(c *Config) { c.Topic.MaxPartitions = 4097 }, "topic.max_partitions", "[3, 4096]"},
		{"default partitions low", func(c *Config) { c.Topic.DefaultPartitions = 2 }, "topic.default_partitions", "[3,"},
		{"default above max", func(c *Config) { c.Topic.DefaultPartitions = 109 }, "topic.default_partitions", "max_partitions=108"},
		{"retention short", func(c *Config) { c.Topic.DefaultRetentionAgeMs = 3_599_999 }, "topic.default_retention_age_ms", "≥ 3600000"},
		{"retention negative", func(c *Config) { c.Topic.DefaultRetentionAgeMs = -1 }, "topic.default_retention_age_ms", "0 (forever)"},
		{"retention past 100 years", func(c *Config) { c.Topic.DefaultRetentionAgeMs = 3_153_600_000_001 }, "topic.default_retention_age_ms", "≤ 3153600000000 (100 years)"},
		{"visibility zero", func(c *Config) { c.Topic.DefaultVisibilityTimeoutMs = 0 }, "topic.default_visibility_timeout_ms", "[1,"},
		{"in flight cap zero", func(c *Config) { c.Topic.DefaultMaxInFlightPerPartition = 0 }, "topic.default_max_in_flight_per_partition", "[1,"},
		{"acked ahead cap huge", func(c *Config) { c.Topic.DefaultMaxAckedAheadPerPartition = 1<<20 + 1 }, "topic.default_max_acked_ahead_per_partition", "[1,"},
		{"fanout records", func(c *Config) { c.Fanout.MaxBatchRecords = 0 }, "fanout.max_batch_records", "> 0"},
		{"fanout bytes", func(c *Config) { c.Fanout.MaxBatchBytes = -1 }, "fanout.max_batch_bytes", "> 0"},
		{"fanout linger", func(c *Config) { c.Fanout.LingerMs = -1 }, "fanout.linger_ms", "must be in [0, 60000]"},
		{"fanout linger past a minute", func(c *Config) { c.Fanout.LingerMs = 60_001 }, "fanout.linger_ms", "must be in [0, 60000]"},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level", "one of"},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, "log.format", "one of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			tc.mutate(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			found := problemsOf(t, err)
			require.Len(t, found, 1, "exactly one problem: %v", err)
			assert.Equal(t, tc.wantKey, found[0].Key)
			assert.Contains(t, found[0].Text, tc.wantIn)
		})
	}
}

func TestValidateAcceptsGoodVariants(t *testing.T) {
	cases := map[string]func(*Config){
		"three node cluster":       cluster3,
		"wildcard cluster addr":    func(c *Config) { cluster3(c); c.Cluster.Addr = ":7943" },
		"initial members in peers": func(c *Config) { cluster3(c); c.Cluster.InitialMembers = []string{"n1", "n2", "n3"} },
		"joiner knows one member": func(c *Config) {
			cluster3(c)
			c.Cluster.NodeID, c.Cluster.Addr = "n4", "10.0.0.4:7943"
			c.Cluster.Peers, c.Cluster.InitialMembers = []string{"n2@10.0.0.2:7943", "n4@10.0.0.4:7943"}, []string{"n2"}
		},
		"cluster without security":  func(c *Config) { cluster3(c); c.Security.Enabled = false; c.Security.ClusterSecret = "" },
		"retention forever":         func(c *Config) { c.Topic.DefaultRetentionAgeMs = 0 },
		"idle eviction off":         func(c *Config) { c.Storage.IdleLogEvictionMs = 0 },
		"full tls":                  func(c *Config) { c.Cluster.TLSCertFile, c.Cluster.TLSKeyFile, c.Cluster.TLSCAFile = "c", "k", "ca" },
		"zstd best":                 func(c *Config) { c.Storage.Codec, c.Storage.CompressionLevel = "zstd", "best" },
		"smallest segment":          func(c *Config) { c.Storage.SegmentBytes = 4096 },
		"pprof on its own port":     func(c *Config) { c.HTTP.PprofAddr = "127.0.0.1:6060" },
		"same port other hosts":     func(c *Config) { c.HTTP.Addr = "10.0.0.1:7000"; c.Cluster.Addr = "10.0.0.2:7000" },
		"consume wait equals grace": func(c *Config) { c.HTTP.MaxConsumeWait = c.HTTP.ShutdownGrace },
		"linger zero":               func(c *Config) { c.Fanout.LingerMs = 0 },
	}
	for name, mutate := range cases {
		cfg := Default()
		mutate(&cfg)
		assert.NoError(t, cfg.Validate(), name)
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	cfg := Default()
	cfg.HTTP.ReadTimeout = 0
	cfg.Storage.DataDir = ""
	cfg.Storage.SegmentBytes = 100
	cfg.Topic.DefaultVisibilityTimeoutMs = -5
	cfg.Log.Format = "xml"
	cluster3(&cfg)
	cfg.Security.ClusterSecret = ""
	err := cfg.Validate()
	keys := []string{}
	for _, problem := range problemsOf(t, err) {
		keys = append(keys, problem.Key)
	}
	assert.Equal(t, []string{"http.read_timeout", "security.cluster_secret", "storage.data_dir",
		"storage.segment_bytes", "topic.default_visibility_timeout_ms", "log.format"}, keys)
	assert.Len(t, strings.Split(err.Error(), "\n"), 6, "one line per problem")
}

func TestParsePeer(t *testing.T) {
	peer, err := ParsePeer("node-1@narad-0.narad:7943")
	require.NoError(t, err)
	assert.Equal(t, Peer{ID: "node-1", Addr: "narad-0.narad:7943"}, peer)
	peer, err = ParsePeer("n2@[::1]:7943")
	require.NoError(t, err)
	assert.Equal(t, "[::1]:7943", peer.Addr)
	for _, bad := range []string{"", "n1", "@host:1", "n1@host", "n1@:1", "n 1@h:1", "n1@h:0", "n1@h:port"} {
		_, err := ParsePeer(bad)
		assert.ErrorIs(t, err, ErrPeer, bad)
	}
}

func TestPeerList(t *testing.T) {
	cluster := Cluster{Peers: []string{"n1@a:1", "n2@b:2"}}
	peers, err := cluster.PeerList()
	require.NoError(t, err)
	assert.Equal(t, []Peer{{"n1", "a:1"}, {"n2", "b:2"}}, peers)
	_, err = Cluster{Peers: []string{"n1@a:1", "broken"}}.PeerList()
	assert.ErrorIs(t, err, ErrPeer)
}

// A half-set TLS pair was reported in terms of the variables only
// (NARAD_HTTP_TLS_*), to an operator who had set http.tls_cert_file in
// the file (audit finding). The configuration does not record where a
// value came from, so the message names both the keys and the variables.
func TestValidateNamesTheTLSKeysAndTheirVariables(t *testing.T) {
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.HTTP.TLSCertFile = "c.pem" },
			"http.tls_cert_file: set together with http.tls_key_file or not at all: http.tls_cert_file (NARAD_HTTP_TLS_CERT_FILE) is set, http.tls_key_file (NARAD_HTTP_TLS_KEY_FILE) is empty"},
		{func(c *Config) { c.HTTP.TLSKeyFile = "k.pem" },
			"http.tls_cert_file: set together with http.tls_key_file or not at all: http.tls_key_file (NARAD_HTTP_TLS_KEY_FILE) is set, http.tls_cert_file (NARAD_HTTP_TLS_CERT_FILE) is empty"},
		{func(c *Config) { c.Cluster.TLSCertFile, c.Cluster.TLSCAFile = "c.pem", "ca.pem" },
			"cluster.tls_cert_file: cluster.tls_cert_file, cluster.tls_key_file and cluster.tls_ca_file are set together or not at all (2 of 3 set): cluster.tls_key_file (NARAD_CLUSTER_TLS_KEY_FILE) is empty"},
	}
	for _, tc := range cases {
		cfg := Default()
		tc.mutate(&cfg)
		assert.EqualError(t, cfg.Validate(), tc.want)
	}
}
