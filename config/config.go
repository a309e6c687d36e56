package config

import (
	"time"

	"narad/msg"
)

// Config is the whole server configuration. Every field is set by
// Default, possibly overridden by LoadFile, ApplyEnv and the CLI's flags, and
// then only read. Zero values are not "use the default": Default sets every
// default explicitly.
type Config struct {
	HTTP     HTTP     `json:"http"`
	Cluster  Cluster  `json:"cluster"`
	Storage  Storage  `json:"storage"`
	Topic    Topic    `json:"topic"`
	Fanout   Fanout   `json:"fanout"`
	Log      Log      `json:"log"`
	Security Security `json:"security"`
	Moves    Moves    `json:"moves"`
}

// HTTP configures the client-facing listener. In the JSON file durations
// are Go duration strings ("10s"); see json.go for the encoding.
type HTTP struct {
	// Addr is the host:port the HTTP API listens on.
	Addr string
	// ReadTimeout, WriteTimeout and IdleTimeout are the API connection
	// server's timeouts (docs/operations.md#http-connections says what
	// each bounds); each > 0 and ≤ httpTimeoutMax.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	// ShutdownGrace is how long a graceful shutdown waits for requests in
	// flight; ≥ MaxConsumeWait so long polls can finish.
	ShutdownGrace time.Duration
	// MaxConsumeWait clamps a consumer's long-poll wait; < WriteTimeout so
	// the reply is written before the server gives up on the connection.
	MaxConsumeWait time.Duration
	// PprofAddr, when non-empty, serves /debug/pprof/* on a separate,
	// unauthenticated listener.
	PprofAddr string
	// TLSCertFile and TLSKeyFile, both set or both empty, serve the API
	// over TLS with that certificate (PEM files).
	TLSCertFile string
	TLSKeyFile  string
	// MaxConnections limits the HTTP connections open at once; more are
	// answered 503 and closed. 0 derives it from the process's descriptor
	// limit at start (a quarter of it); otherwise within [1,
	// connectionsMaxLimit].
	MaxConnections int
	// MaxBodyBytesInFlight caps the request body bytes the server holds at
	// once, across requests (503 with Retry-After past it); within
	// [bodyBytesInFlightMin, bodyBytesInFlightLimit].
	MaxBodyBytesInFlight int64
	// MaxReplyBytesInFlight caps the encoded consume and replay reply
	// bytes the server holds at once while it writes them (503 with
	// Retry-After past it, a consume's records handed back); within
	// [replyBytesInFlightMin, replyBytesInFlightLimit]. A single reply
	// larger than the cap is sent alone.
	MaxReplyBytesInFlight int64
}

// Cluster configures node identity and the node-to-node transport.
type Cluster struct {
	// Addr is the host:port of the node-to-node (Raft and peer) listener;
	// it must not collide with HTTP.Addr.
	Addr string `json:"addr"`
	// NodeID names this node; "" means the host name, resolved by the
	// caller. Required when Peers is set.
	NodeID string `json:"node_id"`
	// Peers lists every voter as "id@host:port", this node included; empty
	// for a single node. At least clusterVotersMin entries when set, or,
	// for a node that joins (InitialMembers leaves it out), itself and at
	// least one member to ask.
	Peers []string `json:"peers"`
	// InitialMembers are the ids that bootstrap the cluster; each must
	// appear in Peers.
	InitialMembers []string `json:"initial_members"`
	// TLSCertFile, TLSKeyFile and TLSCAFile enable mutual TLS on the
	// node-to-node transport: all three or none.
	TLSCertFile string `json:"tls_cert_file"`
	TLSKeyFile  string `json:"tls_key_file"`
	TLSCAFile   string `json:"tls_ca_file"`
	// HeartbeatIntervalMs is how often a node tells the metastore it is
	// alive; DeadAfterMs how long without one before the leader marks it
	// dead (at least three intervals: a node stops writing after half of
	// it without an applied heartbeat).
	HeartbeatIntervalMs int64 `json:"heartbeat_interval_ms"`
	DeadAfterMs         int64 `json:"dead_after_ms"`
	// MetaSnapshotEntries is how many metadata log entries a cluster
	// member applies between two snapshots of the metastore; the log
	// before each is compacted, keeping 100 entries (or half the interval,
	// if less) for slow followers, which past that catch up from the
	// snapshot, as does a node that joins. Within [metaSnapshotEntriesMin,
	// metaSnapshotEntriesMax] (validate.go).
	MetaSnapshotEntries int `json:"meta_snapshot_entries"`
}

// Moves tunes partition moves (docs/architecture.md#moves). Every value > 0.
type Moves struct {
	// MaxInFlight bounds the moves under way in the cluster.
	MaxInFlight int `json:"max_in_flight"`
	// FreezeTTLMs: a source frozen this long without the flip asks for
	// the move's abort.
	FreezeTTLMs int64 `json:"freeze_ttl_ms"`
	// StallTimeoutMs: a destination without progress this long (source
	// alive) aborts its move.
	StallTimeoutMs int64 `json:"stall_timeout_ms"`
	// ForcePromoteAfterMs: a destination whose source died promotes a
	// complete copy of a frozen state this long after its last contact;
	// it aborts a move whose copy it may not promote after the longer of
	// this and StallTimeoutMs.
	ForcePromoteAfterMs int64 `json:"force_promote_after_ms"`
}

// Storage configures the partition logs.
type Storage struct {
	// DataDir holds every partition log and the metastore; non-empty.
	DataDir string `json:"data_dir"`
	// Codec is "none" or "zstd".
	Codec string `json:"codec"`
	// CompressionLevel is fastest, default, better or best (zstd only).
	CompressionLevel string `json:"compression_level"`
	// IdleLogEvictionMs closes a partition log unused this long; 0 disables,
	// otherwise ≥ idleLogEvictionMsMin.
	IdleLogEvictionMs int64 `json:"idle_log_eviction_ms"`
	// SegmentBytes is the size at which a segment is sealed; within
	// [segmentBytesMin, segmentBytesMax]. Internal in the reference; we
	// allow it in the file.
	SegmentBytes int64 `json:"segment_bytes"`
	// OpenLogsMax caps the partition logs open at once (each holds file
	// descriptors); the least recently used idle log closes to admit
	// another. 0 derives the cap from the process's descriptor limit at
	// start; otherwise within [1, openLogsMaxLimit], and the start refuses
	// a value the descriptor limit cannot hold.
	OpenLogsMax int `json:"open_logs_max"`
	// ClosedLogsKeptBytesMax bounds the memory of the partition logs kept
	// after an eviction or idle close (their index, 4 bytes a record), so
	// that reopening one reads none of its segments; 0 keeps none;
	// otherwise at most closedLogsKeptBytesLimit.
	ClosedLogsKeptBytesMax int64 `json:"closed_logs_kept_bytes_max"`
	// DiskReserveBytes is the free space the node keeps on its data
	// directory's file system: under it, it refuses writes into its
	// partitions (503), so that its metastore and its restart still have
	// room. 0 keeps none; otherwise at most diskReserveBytesLimit.
	DiskReserveBytes int64 `json:"disk_reserve_bytes"`
	// GroupSync lets one sync round make the records of several partitions
	// durable with one syncfs(2) of the data directory's file system
	// rather than an fdatasync per partition log (ext4 on Linux 5.17 or
	// later; elsewhere the node logs why and fsyncs each). Turn it off
	// when other programs write much to the same file system: a syncfs
	// waits for their data too.
	GroupSync bool `json:"group_sync"`
}

// Topic holds the defaults and limits applied to topics.
type Topic struct {
	// DefaultPartitions is used when a create asks for 0 partitions;
	// within [partitionsMin, MaxPartitions].
	DefaultPartitions int `json:"default_partitions"`
	// MaxPartitions is the most partitions a topic may have; within
	// [partitionsMin, PartitionsCeiling].
	MaxPartitions int `json:"max_partitions"`
	// DefaultRetentionAgeMs is used when a create asks for 0; 0 keeps
	// records forever, otherwise ≥ retentionMsMin.
	DefaultRetentionAgeMs int64 `json:"default_retention_age_ms"`
	// DefaultVisibilityTimeoutMs is the lease of a consumed message; within
	// (0, visibilityTimeoutMsMax].
	DefaultVisibilityTimeoutMs int64 `json:"default_visibility_timeout_ms"`
	// DefaultMaxInFlightPerPartition and DefaultMaxAckedAheadPerPartition
	// bound a partition's leases and out-of-order acks; within
	// (0, perPartitionCapMax].
	DefaultMaxInFlightPerPartition   int `json:"default_max_in_flight_per_partition"`
	DefaultMaxAckedAheadPerPartition int `json:"default_max_acked_ahead_per_partition"`
	// MaxTopics bounds the topics of the cluster and MaxPartitionsPerNode
	// the partitions one node owns; a create or growth past either is
	// refused (409). Each within [1, placementMax].
	MaxTopics            int `json:"max_topics"`
	MaxPartitionsPerNode int `json:"max_partitions_per_node"`
}

// Fanout bounds the parent-to-child copy of fan-out topics (kept so the
// reference's keys and variables are accepted).
type Fanout struct {
	// MaxBatchRecords and MaxBatchBytes bound one copy batch; both > 0.
	MaxBatchRecords int   `json:"max_batch_records"`
	MaxBatchBytes   int64 `json:"max_batch_bytes"`
	// LingerMs is how long a batch may wait to fill; ≥ 0.
	LingerMs int64 `json:"linger_ms"`
}

// Log configures the server's structured log.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `json:"level"`
	// Format is json or text.
	Format string `json:"format"`
}

// Security configures authentication.
type Security struct {
	// Enabled requires HTTP Basic auth on every route except health and
	// metrics.
	Enabled bool `json:"enabled"`
	// AdminPassword seeds the root user "admin"; from NARAD_ADMIN_PASSWORD
	// only. Empty means a random password is generated and logged once.
	AdminPassword string `json:"-"`
	// ClusterSecret authenticates peers; from NARAD_CLUSTER_SECRET only.
	// Required when Enabled and Cluster.Peers is set.
	ClusterSecret string `json:"-"`
}

// Default returns the compiled defaults (docs/operations.md#settings).
func Default() Config {
	return Config{
		HTTP: HTTP{
			Addr:           ":7942",
			ReadTimeout:    10 * time.Second,
			WriteTimeout:   30 * time.Second,
			IdleTimeout:    60 * time.Second,
			ShutdownGrace:  10 * time.Second,
			MaxConsumeWait: 10 * time.Second,
			// MaxConnections 0: derived from the descriptor limit.
			MaxBodyBytesInFlight:  256 << 20,
			MaxReplyBytesInFlight: 256 << 20,
		},
		Cluster: Cluster{Addr: ":7943", HeartbeatIntervalMs: 5_000, DeadAfterMs: 30_000, MetaSnapshotEntries: 1_000},
		Moves:   Moves{MaxInFlight: 8, FreezeTTLMs: 30_000, StallTimeoutMs: 60_000, ForcePromoteAfterMs: 120_000},
		Storage: Storage{
			DataDir:                "data",
			Codec:                  "none",
			CompressionLevel:       "fastest",
			IdleLogEvictionMs:      30 * 60 * 1000,
			SegmentBytes:           64 << 20,
			GroupSync:              true,
			ClosedLogsKeptBytesMax: 256 << 20,
			DiskReserveBytes:       256 << 20,
		},
		Topic: Topic{
			DefaultPartitions:                3,
			MaxPartitions:                    msg.PartitionsMaxDefault,
			DefaultRetentionAgeMs:            7 * 24 * 3600 * 1000,
			DefaultVisibilityTimeoutMs:       30_000,
			DefaultMaxInFlightPerPartition:   1024,
			DefaultMaxAckedAheadPerPartition: 1024,
			MaxTopics:                        10_000,
			MaxPartitionsPerNode:             20_000,
		},
		Fanout:   Fanout{MaxBatchRecords: 4096, MaxBatchBytes: 4 << 20, LingerMs: 25},
		Log:      Log{Level: "info", Format: "json"},
		Security: Security{Enabled: true},
	}
}
