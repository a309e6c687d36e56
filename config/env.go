package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrEnv marks an environment variable whose value cannot be parsed.
var ErrEnv = errors.New("bad environment variable")

// envVariable maps one NARAD_* variable onto the configuration.
type envVariable struct {
	name string
	// secret values are taken verbatim (no trimming) and never echoed.
	secret bool
	apply  func(cfg *Config, value string) error
}

// envVariables lists every variable (docs/operations.md#settings), in the
// order ApplyEnv applies and reports them.
var envVariables = []envVariable{
	{name: "NARAD_HTTP_ADDR", apply: text(func(c *Config) *string { return &c.HTTP.Addr })},
	{name: "NARAD_HTTP_PPROF_ADDR", apply: text(func(c *Config) *string { return &c.HTTP.PprofAddr })},
	{name: "NARAD_HTTP_READ_TIMEOUT", apply: duration(func(c *Config) *time.Duration { return &c.HTTP.ReadTimeout })},
	{name: "NARAD_HTTP_WRITE_TIMEOUT", apply: duration(func(c *Config) *time.Duration { return &c.HTTP.WriteTimeout })},
	{name: "NARAD_HTTP_IDLE_TIMEOUT", apply: duration(func(c *Config) *time.Duration { return &c.HTTP.IdleTimeout })},
	{name: "NARAD_HTTP_SHUTDOWN_GRACE", apply: duration(func(c *Config) *time.Duration { return &c.HTTP.ShutdownGrace })},
	{name: "NARAD_HTTP_MAX_CONSUME_WAIT", apply: duration(func(c *Config) *time.Duration { return &c.HTTP.MaxConsumeWait })},
	{name: "NARAD_HTTP_TLS_CERT_FILE", apply: text(func(c *Config) *string { return &c.HTTP.TLSCertFile })},
	{name: "NARAD_HTTP_TLS_KEY_FILE", apply: text(func(c *Config) *string { return &c.HTTP.TLSKeyFile })},
	{name: "NARAD_CLUSTER_ADDR", apply: text(func(c *Config) *string { return &c.Cluster.Addr })},
	{name: "NARAD_NODE_ID", apply: text(func(c *Config) *string { return &c.Cluster.NodeID })},
	{name: "NARAD_CLUSTER_INITIAL_MEMBERS", apply: list(func(c *Config) *[]string { return &c.Cluster.InitialMembers })},
	{name: "NARAD_CLUSTER_PEERS", apply: list(func(c *Config) *[]string { return &c.Cluster.Peers })},
	{name: "NARAD_DATA_DIR", apply: text(func(c *Config) *string { return &c.Storage.DataDir })},
	{name: "NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS", apply: integer(func(c *Config) *int64 { return &c.Topic.DefaultRetentionAgeMs })},
	{name: "NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS", apply: integer(func(c *Config) *int64 { return &c.Topic.DefaultVisibilityTimeoutMs })},
	{name: "NARAD_TOPIC_DEFAULT_PARTITIONS", apply: integer(func(c *Config) *int { return &c.Topic.DefaultPartitions })},
	{name: "NARAD_TOPIC_MAX_PARTITIONS", apply: integer(func(c *Config) *int { return &c.Topic.MaxPartitions })},
	{name: "NARAD_TOPIC_DEFAULT_MAX_IN_FLIGHT_PER_PARTITION", apply: integer(func(c *Config) *int { return &c.Topic.DefaultMaxInFlightPerPartition })},
	{name: "NARAD_TOPIC_DEFAULT_MAX_ACKED_AHEAD_PER_PARTITION", apply: integer(func(c *Config) *int { return &c.Topic.DefaultMaxAckedAheadPerPartition })},
	{name: "NARAD_FANOUT_MAX_BATCH_RECORDS", apply: integer(func(c *Config) *int { return &c.Fanout.MaxBatchRecords })},
	{name: "NARAD_FANOUT_MAX_BATCH_BYTES", apply: integer(func(c *Config) *int64 { return &c.Fanout.MaxBatchBytes })},
	{name: "NARAD_FANOUT_LINGER_MS", apply: integer(func(c *Config) *int64 { return &c.Fanout.LingerMs })},
	{name: "NARAD_LOG_LEVEL", apply: text(func(c *Config) *string { return &c.Log.Level })},
	{name: "NARAD_LOG_FORMAT", apply: text(func(c *Config) *string { return &c.Log.Format })},
	{name: "NARAD_SECURITY_ENABLED", apply: boolean(func(c *Config) *bool { return &c.Security.Enabled })},
	{name: "NARAD_ADMIN_PASSWORD", secret: true, apply: text(func(c *Config) *string { return &c.Security.AdminPassword })},
	{name: "NARAD_CLUSTER_SECRET", secret: true, apply: text(func(c *Config) *string { return &c.Security.ClusterSecret })},
	{name: "NARAD_CLUSTER_TLS_CERT_FILE", apply: text(func(c *Config) *string { return &c.Cluster.TLSCertFile })},
	{name: "NARAD_CLUSTER_TLS_KEY_FILE", apply: text(func(c *Config) *string { return &c.Cluster.TLSKeyFile })},
	{name: "NARAD_CLUSTER_TLS_CA_FILE", apply: text(func(c *Config) *string { return &c.Cluster.TLSCAFile })},
	{name: "NARAD_CLUSTER_HEARTBEAT_INTERVAL_MS", apply: integer(func(c *Config) *int64 { return &c.Cluster.HeartbeatIntervalMs })},
	{name: "NARAD_CLUSTER_DEAD_AFTER_MS", apply: integer(func(c *Config) *int64 { return &c.Cluster.DeadAfterMs })},
	{name: "NARAD_CLUSTER_META_SNAPSHOT_ENTRIES", apply: integer(func(c *Config) *int { return &c.Cluster.MetaSnapshotEntries })},
	{name: "NARAD_MOVES_MAX_IN_FLIGHT", apply: integer(func(c *Config) *int { return &c.Moves.MaxInFlight })},
	{name: "NARAD_MOVES_FREEZE_TTL_MS", apply: integer(func(c *Config) *int64 { return &c.Moves.FreezeTTLMs })},
	{name: "NARAD_MOVES_STALL_TIMEOUT_MS", apply: integer(func(c *Config) *int64 { return &c.Moves.StallTimeoutMs })},
	{name: "NARAD_MOVES_FORCE_PROMOTE_AFTER_MS", apply: integer(func(c *Config) *int64 { return &c.Moves.ForcePromoteAfterMs })},
	{name: "NARAD_STORAGE_OPEN_LOGS_MAX", apply: integer(func(c *Config) *int { return &c.Storage.OpenLogsMax })},
	{name: "NARAD_STORAGE_CLOSED_LOGS_KEPT_BYTES_MAX", apply: integer(func(c *Config) *int64 { return &c.Storage.ClosedLogsKeptBytesMax })},
	{name: "NARAD_STORAGE_DISK_RESERVE_BYTES", apply: integer(func(c *Config) *int64 { return &c.Storage.DiskReserveBytes })},
	{name: "NARAD_STORAGE_GROUP_SYNC", apply: boolean(func(c *Config) *bool { return &c.Storage.GroupSync })},
	{name: "NARAD_HTTP_MAX_CONNECTIONS", apply: integer(func(c *Config) *int { return &c.HTTP.MaxConnections })},
	{name: "NARAD_TOPIC_MAX_TOPICS", apply: integer(func(c *Config) *int { return &c.Topic.MaxTopics })},
	{name: "NARAD_TOPIC_MAX_PARTITIONS_PER_NODE", apply: integer(func(c *Config) *int { return &c.Topic.MaxPartitionsPerNode })},
	{name: "NARAD_HTTP_MAX_BODY_BYTES_IN_FLIGHT", apply: integer(func(c *Config) *int64 { return &c.HTTP.MaxBodyBytesInFlight })},
	{name: "NARAD_HTTP_MAX_REPLY_BYTES_IN_FLIGHT", apply: integer(func(c *Config) *int64 { return &c.HTTP.MaxReplyBytesInFlight })},
}

// EnvNames returns the names of every NARAD_* variable ApplyEnv reads.
func EnvNames() []string {
	names := make([]string, 0, len(envVariables))
	for _, variable := range envVariables {
		names = append(names, variable.name)
	}
	return names
}

// ApplyEnv overrides cfg with every NARAD_* variable that getenv reports as
// non-empty. Every bad value is reported (joined), each error naming its
// variable; cfg keeps the good values.
func ApplyEnv(cfg *Config, getenv func(string) string) error {
	var problems []error
	for _, variable := range envVariables {
		value := getenv(variable.name)
		if !variable.secret {
			value = strings.TrimSpace(value)
		}
		if value == "" {
			continue
		}
		if err := variable.apply(cfg, value); err != nil {
			problems = append(problems, variable.describe(value, err))
		}
	}
	return errors.Join(problems...)
}

func (v envVariable) describe(value string, err error) error {
	if v.secret {
		return fmt.Errorf("%w: %s: %w", ErrEnv, v.name, err)
	}
	return fmt.Errorf("%w: %s=%q: %w", ErrEnv, v.name, value, err)
}

func text(field func(*Config) *string) func(*Config, string) error {
	return func(cfg *Config, value string) error {
		*field(cfg) = value
		return nil
	}
}

func duration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(cfg *Config, value string) error {
		parsed, err := time.ParseDuration(value)
		if err != nil {
			return errors.New("want a Go duration such as 10s or 500ms")
		}
		*field(cfg) = parsed
		return nil
	}
}

func integer[T int | int64](field func(*Config) *T) func(*Config, string) error {
	return func(cfg *Config, value string) error {
		parsed, err := strconv.ParseInt(value, 10, 64)
		if err != nil || int64(T(parsed)) != parsed {
			return errors.New("want a decimal integer")
		}
		*field(cfg) = T(parsed)
		return nil
	}
}

func boolean(field func(*Config) *bool) func(*Config, string) error {
	return func(cfg *Config, value string) error {
		parsed, err := strconv.ParseBool(value)
		if err != nil {
			return errors.New("want true or false")
		}
		*field(cfg) = parsed
		return nil
	}
}

// list parses a comma-separated list; blanks around items and empty items
// are dropped.
func list(field func(*Config) *[]string) func(*Config, string) error {
	return func(cfg *Config, value string) error {
		var items []string
		for item := range strings.SplitSeq(value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		*field(cfg) = items
		return nil
	}
}
