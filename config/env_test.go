package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapEnv returns a getenv over a fixed map.
func mapEnv(values map[string]string) func(string) string {
	return func(name string) string { return values[name] }
}

func TestEnvNamesCoverTheContract(t *testing.T) {
	// docs/operations.md#settings, in its order.
	want := []string{
		"NARAD_HTTP_ADDR", "NARAD_HTTP_PPROF_ADDR", "NARAD_HTTP_READ_TIMEOUT",
		"NARAD_HTTP_WRITE_TIMEOUT", "NARAD_HTTP_IDLE_TIMEOUT", "NARAD_HTTP_SHUTDOWN_GRACE",
		"NARAD_HTTP_MAX_CONSUME_WAIT", "NARAD_HTTP_TLS_CERT_FILE", "NARAD_HTTP_TLS_KEY_FILE", "NARAD_CLUSTER_ADDR", "NARAD_NODE_ID",
		"NARAD_CLUSTER_INITIAL_MEMBERS", "NARAD_CLUSTER_PEERS", "NARAD_DATA_DIR",
		"NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS", "NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS",
		"NARAD_TOPIC_DEFAULT_PARTITIONS", "NARAD_TOPIC_MAX_PARTITIONS",
		"NARAD_TOPIC_DEFAULT_MAX_IN_FLIGHT_PER_PARTITION", "NARAD_TOPIC_DEFAULT_MAX_ACKED_AHEAD_PER_PARTITION",
		"NARAD_FANOUT_MAX_BATCH_RECORDS", "NARAD_FANOUT_MAX_BATCH_BYTES", "NARAD_FANOUT_LINGER_MS",
		"NARAD_LOG_LEVEL", "NARAD_LOG_FORMAT", "NARAD_SECURITY_ENABLED", "NARAD_ADMIN_PASSWORD",
		"NARAD_CLUSTER_SECRET", "NARAD_CLUSTER_TLS_CERT_FILE", "NARAD_CLUSTER_TLS_KEY_FILE",
		"NARAD_CLUSTER_TLS_CA_FILE",
		// Ours (the issue asks for named, configurable intervals):
		"NARAD_CLUSTER_HEARTBEAT_INTERVAL_MS", "NARAD_CLUSTER_DEAD_AFTER_MS", "NARAD_CLUSTER_META_SNAPSHOT_ENTRIES",
		"NARAD_MOVES_MAX_IN_FLIGHT",
		"NARAD_MOVES_FREEZE_TTL_MS", "NARAD_MOVES_STALL_TIMEOUT_MS", "NARAD_MOVES_FORCE_PROMOTE_AFTER_MS",
		"NARAD_STORAGE_OPEN_LOGS_MAX", "NARAD_STORAGE_CLOSED_LOGS_KEPT_BYTES_MAX", "NARAD_STORAGE_DISK_RESERVE_BYTES", "NARAD_STORAGE_GROUP_SYNC", "NARAD_HTTP_MAX_CONNECTIONS",
		"NARAD_TOPIC_MAX_TOPICS", "NARAD_TOPIC_MAX_PARTITIONS_PER_NODE", "NARAD_HTTP_MAX_BODY_BYTES_IN_FLIGHT",
		"NARAD_HTTP_MAX_REPLY_BYTES_IN_FLIGHT",
	}
	assert.Equal(t, want, EnvNames())
}

func TestApplyEnvSetsEveryVariable(t *testing.T) {
	env := map[string]string{
		"NARAD_HTTP_ADDR": "127.0.0.1:8000", "NARAD_HTTP_PPROF_ADDR": "127.0.0.1:6060",
		"NARAD_HTTP_READ_TIMEOUT": "1s", "NARAD_HTTP_WRITE_TIMEOUT": "2s",
		"NARAD_HTTP_IDLE_TIMEOUT": "3s", "NARAD_HTTP_SHUTDOWN_GRACE": "4s",
		"NARAD_HTTP_MAX_CONSUME_WAIT": "500ms", "NARAD_CLUSTER_ADDR": "127.0.0.1:8001",
		"NARAD_HTTP_TLS_CERT_FILE": "api.pem", "NARAD_HTTP_TLS_KEY_FILE": "api-key.pem",
		"NARAD_NODE_ID": "n1", "NARAD_CLUSTER_INITIAL_MEMBERS": " n1, n2 ,,n3 ",
		"NARAD_CLUSTER_PEERS":                  "n1@a:1,n2@b:2,n3@c:3",
		"NARAD_DATA_DIR":                       "/data",
		"NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS": "7200000", "NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS": "5000",
		"NARAD_TOPIC_DEFAULT_PARTITIONS": "4", "NARAD_TOPIC_MAX_PARTITIONS": "16",
		"NARAD_TOPIC_DEFAULT_MAX_IN_FLIGHT_PER_PARTITION":   "10",
		"NARAD_TOPIC_DEFAULT_MAX_ACKED_AHEAD_PER_PARTITION": "20",
		"NARAD_FANOUT_MAX_BATCH_RECORDS":                    "7", "NARAD_FANOUT_MAX_BATCH_BYTES": "8", "NARAD_FANOUT_LINGER_MS": "9",
		"NARAD_LOG_LEVEL": "debug", "NARAD_LOG_FORMAT": "text", "NARAD_SECURITY_ENABLED": "false",
		"NARAD_ADMIN_PASSWORD": " pw ", "NARAD_CLUSTER_SECRET": "secret",
		"NARAD_CLUSTER_TLS_CERT_FILE": "c.pem", "NARAD_CLUSTER_TLS_KEY_FILE": "k.pem", "NARAD_CLUSTER_TLS_CA_FILE": "ca.pem",
		"NARAD_CLUSTER_HEARTBEAT_INTERVAL_MS": "250", "NARAD_CLUSTER_DEAD_AFTER_MS": "1000",
		"NARAD_CLUSTER_META_SNAPSHOT_ENTRIES": "40",
		"NARAD_MOVES_MAX_IN_FLIGHT":           "2", "NARAD_MOVES_FREEZE_TTL_MS": "3000",
		"NARAD_MOVES_STALL_TIMEOUT_MS": "4000", "NARAD_MOVES_FORCE_PROMOTE_AFTER_MS": "5000",
		"NARAD_STORAGE_OPEN_LOGS_MAX": "300", "NARAD_STORAGE_CLOSED_LOGS_KEPT_BYTES_MAX": "1048576", "NARAD_STORAGE_DISK_RESERVE_BYTES": "2097152", "NARAD_STORAGE_GROUP_SYNC": "false", "NARAD_HTTP_MAX_CONNECTIONS": "500", "NARAD_HTTP_MAX_BODY_BYTES_IN_FLIGHT": "33554432",
		"NARAD_HTTP_MAX_REPLY_BYTES_IN_FLIGHT": "50331648",
		"NARAD_TOPIC_MAX_TOPICS":               "50", "NARAD_TOPIC_MAX_PARTITIONS_PER_NODE": "60",
	}
	require.Len(t, env, len(EnvNames()), "the test sets every variable")
	cfg := Default()
	require.NoError(t, ApplyEnv(&cfg, mapEnv(env)))
	assert.Equal(t, HTTP{Addr: "127.0.0.1:8000", PprofAddr: "127.0.0.1:6060", ReadTimeout: time.Second,
		WriteTimeout: 2 * time.Second, IdleTimeout: 3 * time.Second, ShutdownGrace: 4 * time.Second,
		MaxConsumeWait: 500 * time.Millisecond, TLSCertFile: "api.pem", TLSKeyFile: "api-key.pem",
		MaxConnections: 500, MaxBodyBytesInFlight: 32 << 20, MaxReplyBytesInFlight: 48 << 20}, cfg.HTTP)
	assert.Equal(t, Cluster{Addr: "127.0.0.1:8001", NodeID: "n1", InitialMembers: []string{"n1", "n2", "n3"},
		Peers: []string{"n1@a:1", "n2@b:2", "n3@c:3"}, TLSCertFile: "c.pem", TLSKeyFile: "k.pem",
		TLSCAFile: "ca.pem", HeartbeatIntervalMs: 250, DeadAfterMs: 1000, MetaSnapshotEntries: 40}, cfg.Cluster)
	assert.Equal(t, Moves{MaxInFlight: 2, FreezeTTLMs: 3000, StallTimeoutMs: 4000, ForcePromoteAfterMs: 5000}, cfg.Moves)
	assert.Equal(t, "/data", cfg.Storage.DataDir)
	assert.Equal(t, 300, cfg.Storage.OpenLogsMax)
	assert.Equal(t, int64(2<<20), cfg.Storage.DiskReserveBytes)
	assert.Equal(t, int64(1<<20), cfg.Storage.ClosedLogsKeptBytesMax)
	assert.False(t, cfg.Storage.GroupSync, "NARAD_STORAGE_GROUP_SYNC=false turns group sync off")
	assert.Equal(t, Topic{DefaultPartitions: 4, MaxPartitions: 16, DefaultRetentionAgeMs: 7_200_000,
		DefaultVisibilityTimeoutMs: 5000, DefaultMaxInFlightPerPartition: 10,
		DefaultMaxAckedAheadPerPartition: 20, MaxTopics: 50, MaxPartitionsPerNode: 60}, cfg.Topic)
	assert.Equal(t, Fanout{MaxBatchRecords: 7, MaxBatchBytes: 8, LingerMs: 9}, cfg.Fanout)
	assert.Equal(t, Log{Level: "debug", Format: "text"}, cfg.Log)
	assert.Equal(t, Security{Enabled: false, AdminPassword: " pw ", ClusterSecret: "secret"}, cfg.Security,
		"secrets are taken verbatim")
}

func TestApplyEnvEmptyMeansUnset(t *testing.T) {
	cfg := Default()
	require.NoError(t, ApplyEnv(&cfg, mapEnv(map[string]string{"NARAD_HTTP_ADDR": "", "NARAD_LOG_LEVEL": "  "})))
	assert.Equal(t, Default(), cfg)
}

func TestApplyEnvReportsEveryBadValue(t *testing.T) {
	cfg := Default()
	err := ApplyEnv(&cfg, mapEnv(map[string]string{
		"NARAD_HTTP_READ_TIMEOUT":        "10",
		"NARAD_TOPIC_MAX_PARTITIONS":     "lots",
		"NARAD_FANOUT_MAX_BATCH_BYTES":   "1.5",
		"NARAD_SECURITY_ENABLED":         "sure",
		"NARAD_TOPIC_DEFAULT_PARTITIONS": "99999999999999999999",
		"NARAD_LOG_LEVEL":                "debug",
	}))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrEnv)
	message := err.Error()
	for _, name := range []string{"NARAD_HTTP_READ_TIMEOUT", "NARAD_TOPIC_MAX_PARTITIONS",
		"NARAD_FANOUT_MAX_BATCH_BYTES", "NARAD_SECURITY_ENABLED", "NARAD_TOPIC_DEFAULT_PARTITIONS"} {
		assert.Contains(t, message, name)
	}
	assert.Len(t, strings.Split(message, "\n"), 5, "one line per bad variable")
	assert.Equal(t, "debug", cfg.Log.Level, "good values still apply")
	assert.Equal(t, 10*time.Second, cfg.HTTP.ReadTimeout, "bad values change nothing")
}

func TestApplyEnvNeverEchoesSecrets(t *testing.T) {
	// A secret cannot fail to parse today; check the describe path directly.
	variable := envVariable{name: "NARAD_CLUSTER_SECRET", secret: true}
	err := variable.describe("hunter2", assert.AnError)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "NARAD_CLUSTER_SECRET")
}
