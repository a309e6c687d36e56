package config

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"time"

	"narad/msg"
)

// Limits that Validate enforces. Each is named with its unit last.
const (
	// httpTimeoutMax bounds every HTTP timeout: beyond an hour a timeout is
	// a misconfiguration, not a choice.
	httpTimeoutMax = time.Hour
	// clusterVotersMin is the smallest cluster that survives losing a node.
	clusterVotersMin = 3
	// joinPeersMin is the shortest peer list of a node that joins: itself
	// and one member to ask (members relay a join to the leader).
	joinPeersMin = 2
	// clusterSecretBytesMin is the shortest cluster secret: every peer
	// connection proves it, so a short one is a guessable key to the
	// metastore (`narad cluster up` makes 24 random bytes).
	clusterSecretBytesMin = 16
	// adminPasswordBytesMax is the longest root password: bcrypt hashes
	// at most 72 bytes, so auth refuses longer passwords, and a longer
	// NARAD_ADMIN_PASSWORD could never be used to sign in.
	adminPasswordBytesMax = 72
	// clusterPeersMax bounds the peer list.
	clusterPeersMax = 1000
	// segmentBytesMin and segmentBytesMax bound a log segment.
	segmentBytesMin = 4096
	segmentBytesMax = 1 << 30
	// idleLogEvictionMsMin is the shortest non-zero idle eviction.
	idleLogEvictionMsMin = 60_000
	// connectionsMaxLimit bounds http.max_connections.
	connectionsMaxLimit = 1 << 20
	// bodyBytesInFlightMin and bodyBytesInFlightLimit bound
	// http.max_body_bytes_in_flight: at least one largest batch produce
	// (16 MiB), at most 64 GiB.
	bodyBytesInFlightMin   = 16 << 20
	bodyBytesInFlightLimit = 64 << 30
	// replyBytesInFlightMin and replyBytesInFlightLimit bound
	// http.max_reply_bytes_in_flight: at least two of the largest consume
	// replies' payloads (8 MiB each; a larger reply is sent alone), at
	// most 64 GiB.
	replyBytesInFlightMin   = 16 << 20
	replyBytesInFlightLimit = 64 << 30
	// placementMax bounds topic.max_topics and topic.max_partitions_per_node.
	placementMax = 1 << 24
	// openLogsMaxLimit bounds storage.open_logs_max.
	openLogsMaxLimit = 1 << 20
	// closedLogsKeptBytesLimit bounds storage.closed_logs_kept_bytes_max.
	closedLogsKeptBytesLimit = 64 << 30
	// diskReserveBytesLimit bounds storage.disk_reserve_bytes.
	diskReserveBytesLimit = 1 << 40
	// partitionsMin is the fewest partitions a topic may have.
	partitionsMin = 3
	// PartitionsCeiling bounds topic.max_partitions: the metastore refuses
	// a topic of more partitions on every node, whatever the node's own
	// setting (meta.PartitionsMax; host holds the two equal at compile
	// time).
	PartitionsCeiling = 4096
	// retentionMsMin is the shortest non-zero retention (one hour).
	retentionMsMin = 3_600_000
	// retentionMsMax is the longest retention (100 years), the bound a
	// topic's own retention_ms is held to.
	retentionMsMax = msg.RetentionMsMax
	// visibilityTimeoutMsMax is the longest lease (12 hours), the bound
	// a topic's own visibility_timeout_ms is held to.
	visibilityTimeoutMsMax = msg.VisibilityTimeoutMsMax
	// perPartitionCapMax bounds the in-flight and acked-ahead caps, which
	// size in-memory tables.
	perPartitionCapMax = 1 << 20
)

// ErrInvalid is matched (errors.Is) by every problem Validate reports.
var ErrInvalid = errors.New("invalid configuration")

// nodeIDPattern is the form of a node id (it appears in "id@host:port"
// lists and in paths).
var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

var (
	codecs            = []string{"none", "zstd"}
	compressionLevels = []string{"fastest", "default", "better", "best"}
	logLevels         = []string{"debug", "info", "warn", "error"}
	logFormats        = []string{"json", "text"}
)

// Problem is one rule a configuration breaks.
type Problem struct {
	// Key is the JSON path of the offending setting, e.g. "http.addr".
	Key string
	// Text says what is wrong.
	Text string
}

func (p Problem) Error() string { return p.Key + ": " + p.Text }

// Is makes every Problem match ErrInvalid.
func (p Problem) Is(target error) bool { return target == ErrInvalid }

// problems collects the problems of one Validate call.
type problems []error

func (p *problems) add(key, format string, args ...any) {
	*p = append(*p, Problem{Key: key, Text: fmt.Sprintf(format, args...)})
}

// Validate reports every problem of the configuration at once (joined; one
// Problem per broken rule), or nil. The rules are the bounds of
// docs/operations.md#settings: data_dir non-empty; retention 0 or 1 h to 100 years;
// partition bounds; caps > 0; segment_bytes ≥ 4096.
func (c Config) Validate() error {
	var found problems
	c.HTTP.validate(&found)
	c.validateAddresses(&found)
	c.Cluster.validate(&found)
	c.validateAdvertised(&found)
	c.validateSecurity(&found)
	c.Storage.validate(&found)
	c.Topic.validate(&found)
	c.Fanout.validate(&found)
	c.Log.validate(&found)
	c.validateTimings(&found)
	return errors.Join(found...)
}

func (h HTTP) validate(found *problems) {
	timeouts := []struct {
		key   string
		value time.Duration
	}{
		{"http.read_timeout", h.ReadTimeout}, {"http.write_timeout", h.WriteTimeout},
		{"http.idle_timeout", h.IdleTimeout}, {"http.shutdown_grace", h.ShutdownGrace},
		{"http.max_consume_wait", h.MaxConsumeWait},
	}
	for _, timeout := range timeouts {
		if timeout.value <= 0 || timeout.value > httpTimeoutMax {
			found.add(timeout.key, "must be > 0 and ≤ %s (got %s)", httpTimeoutMax, timeout.value)
		}
	}
	if h.MaxConnections < 0 || h.MaxConnections > connectionsMaxLimit {
		found.add("http.max_connections", "must be 0 (derive from the descriptor limit) or in [1, %d] (got %d)", connectionsMaxLimit, h.MaxConnections)
	}
	if h.MaxBodyBytesInFlight < bodyBytesInFlightMin || h.MaxBodyBytesInFlight > bodyBytesInFlightLimit {
		found.add("http.max_body_bytes_in_flight", "must be in [%d, %d] (got %d)", bodyBytesInFlightMin, int64(bodyBytesInFlightLimit), h.MaxBodyBytesInFlight)
	}
	if h.MaxReplyBytesInFlight < replyBytesInFlightMin || h.MaxReplyBytesInFlight > replyBytesInFlightLimit {
		found.add("http.max_reply_bytes_in_flight", "must be in [%d, %d] (got %d)", replyBytesInFlightMin, int64(replyBytesInFlightLimit), h.MaxReplyBytesInFlight)
	}
	if h.MaxConsumeWait > 0 && h.MaxConsumeWait < time.Millisecond {
		// The node counts waits in whole milliseconds: less would be 0,
		// every long poll answered at once.
		found.add("http.max_consume_wait", "must be at least 1ms (got %s)", h.MaxConsumeWait)
	}
	if h.MaxConsumeWait >= h.WriteTimeout {
		found.add("http.max_consume_wait", "must be < http.write_timeout (%s ≥ %s)", h.MaxConsumeWait, h.WriteTimeout)
	}
	if h.MaxConsumeWait > h.ShutdownGrace {
		found.add("http.max_consume_wait", "must be ≤ http.shutdown_grace (%s > %s)", h.MaxConsumeWait, h.ShutdownGrace)
	}
}

// validateAddresses checks that every listener address parses and that no
// two listeners collide.
func (c Config) validateAddresses(found *problems) {
	listeners := []struct{ key, addr string }{
		{"http.addr", c.HTTP.Addr}, {"cluster.addr", c.Cluster.Addr}, {"http.pprof_addr", c.HTTP.PprofAddr},
	}
	for i, listener := range listeners {
		if listener.addr == "" && listener.key == "http.pprof_addr" {
			continue
		}
		if err := checkListenAddr(listener.addr); err != nil {
			found.add(listener.key, "%v", err)
			continue
		}
		for _, earlier := range listeners[:i] {
			if earlier.addr != "" && addressesCollide(earlier.addr, listener.addr) {
				found.add(listener.key, "%q collides with %s %q", listener.addr, earlier.key, earlier.addr)
			}
		}
	}
}

// addressBytesMax bounds an address (a listener's, a peer's): the
// node-to-node messages carry members' addresses of at most this many
// bytes (wire.AddressBytesMax), and a longer one ended the process at
// its first heartbeat.
const addressBytesMax = 1 << 10

// checkListenAddr accepts host:port with a numeric port in 1..65535; the
// host may be empty (all interfaces).
func checkListenAddr(addr string) error {
	if len(addr) > addressBytesMax {
		return fmt.Errorf("an address must be at most %d bytes (got %d)", addressBytesMax, len(addr))
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	number, err := strconv.Atoi(port)
	if err != nil || number < 1 || number > 65535 {
		return fmt.Errorf("port of %q must be a number in 1..65535", addr)
	}
	return nil
}

// addressesCollide reports whether two valid listen addresses would bind the
// same port on a shared interface.
func addressesCollide(first, second string) bool {
	firstHost, firstPort, _ := net.SplitHostPort(first)
	secondHost, secondPort, _ := net.SplitHostPort(second)
	if firstPort != secondPort {
		return false
	}
	return firstHost == secondHost || isWildcardHost(firstHost) || isWildcardHost(secondHost)
}

func isWildcardHost(host string) bool {
	return host == "" || host == "0.0.0.0" || host == "::"
}

func (c Config) validateSecurity(found *problems) {
	if c.Security.Enabled && len(c.Cluster.Peers) > 0 && c.Security.ClusterSecret == "" {
		found.add("security.cluster_secret", "NARAD_CLUSTER_SECRET is required when security is enabled and cluster.peers is set")
	}
	if secret := c.Security.ClusterSecret; secret != "" && len(secret) < clusterSecretBytesMin {
		found.add("security.cluster_secret", "NARAD_CLUSTER_SECRET must be at least %d bytes (got %d)", clusterSecretBytesMin, len(secret))
	}
	if len(c.Security.AdminPassword) > adminPasswordBytesMax {
		found.add("security.admin_password", "NARAD_ADMIN_PASSWORD must be at most %d bytes (got %d)", adminPasswordBytesMax, len(c.Security.AdminPassword))
	}
	// The configuration does not record whether a value came from the
	// file or the environment, so the message names both.
	cert, key := HTTPTLSFiles(c.HTTP.TLSCertFile, c.HTTP.TLSKeyFile)
	if (cert.Path == "") != (key.Path == "") {
		set, empty := cert, key
		if cert.Path == "" {
			set, empty = key, cert
		}
		found.add(cert.Key, "set together with %s or not at all: %s is set, %s is empty", key.Key, set.Named(), empty.Named())
	}
}

func (s Storage) validate(found *problems) {
	if s.DataDir == "" {
		found.add("storage.data_dir", "must not be empty")
	}
	checkOneOf(found, "storage.codec", s.Codec, codecs)
	checkOneOf(found, "storage.compression_level", s.CompressionLevel, compressionLevels)
	if s.SegmentBytes < segmentBytesMin || s.SegmentBytes > segmentBytesMax {
		found.add("storage.segment_bytes", "must be in [%d, %d] (got %d)", segmentBytesMin, segmentBytesMax, s.SegmentBytes)
	}
	if s.OpenLogsMax < 0 || s.OpenLogsMax > openLogsMaxLimit {
		found.add("storage.open_logs_max", "must be 0 (derive from the descriptor limit) or in [1, %d] (got %d)", openLogsMaxLimit, s.OpenLogsMax)
	}
	if s.ClosedLogsKeptBytesMax < 0 || s.ClosedLogsKeptBytesMax > closedLogsKeptBytesLimit {
		found.add("storage.closed_logs_kept_bytes_max", "must be in [0, %d] (got %d)", int64(closedLogsKeptBytesLimit), s.ClosedLogsKeptBytesMax)
	}
	if s.DiskReserveBytes < 0 || s.DiskReserveBytes > diskReserveBytesLimit {
		found.add("storage.disk_reserve_bytes", "must be in [0, %d] (got %d)", int64(diskReserveBytesLimit), s.DiskReserveBytes)
	}
	if s.IdleLogEvictionMs != 0 && s.IdleLogEvictionMs < idleLogEvictionMsMin {
		found.add("storage.idle_log_eviction_ms", "must be 0 (never) or ≥ %d (got %d)", idleLogEvictionMsMin, s.IdleLogEvictionMs)
	}
}

func (t Topic) validate(found *problems) {
	if t.MaxPartitions < partitionsMin || t.MaxPartitions > PartitionsCeiling {
		found.add("topic.max_partitions", "must be in [%d, %d] (got %d)", partitionsMin, PartitionsCeiling, t.MaxPartitions)
	}
	if t.DefaultPartitions < partitionsMin || t.DefaultPartitions > t.MaxPartitions {
		found.add("topic.default_partitions", "must be in [%d, topic.max_partitions=%d] (got %d)", partitionsMin, t.MaxPartitions, t.DefaultPartitions)
	}
	if t.DefaultRetentionAgeMs != 0 && (t.DefaultRetentionAgeMs < retentionMsMin || t.DefaultRetentionAgeMs > retentionMsMax) {
		found.add("topic.default_retention_age_ms", "must be 0 (forever) or ≥ %d (1h) and ≤ %d (100 years) (got %d)",
			retentionMsMin, retentionMsMax, t.DefaultRetentionAgeMs)
	}
	if t.DefaultVisibilityTimeoutMs <= 0 || t.DefaultVisibilityTimeoutMs > visibilityTimeoutMsMax {
		found.add("topic.default_visibility_timeout_ms", "must be in [1, %d] (got %d)", visibilityTimeoutMsMax, t.DefaultVisibilityTimeoutMs)
	}
	for _, limit := range []struct {
		key   string
		value int
	}{{"topic.max_topics", t.MaxTopics}, {"topic.max_partitions_per_node", t.MaxPartitionsPerNode}} {
		if limit.value < 1 || limit.value > placementMax {
			found.add(limit.key, "must be in [1, %d] (got %d)", placementMax, limit.value)
		}
	}
	checkCap(found, "topic.default_max_in_flight_per_partition", t.DefaultMaxInFlightPerPartition)
	checkCap(found, "topic.default_max_acked_ahead_per_partition", t.DefaultMaxAckedAheadPerPartition)
}

func checkCap(found *problems, key string, value int) {
	if value <= 0 || value > perPartitionCapMax {
		found.add(key, "must be in [1, %d] (got %d)", perPartitionCapMax, value)
	}
}

func (f Fanout) validate(found *problems) {
	if f.MaxBatchRecords <= 0 {
		found.add("fanout.max_batch_records", "must be > 0 (got %d)", f.MaxBatchRecords)
	}
	if f.MaxBatchBytes <= 0 {
		found.add("fanout.max_batch_bytes", "must be > 0 (got %d)", f.MaxBatchBytes)
	}
	if f.LingerMs < 0 || f.LingerMs > fanoutLingerMsMax {
		found.add("fanout.linger_ms", "must be in [0, %d] (got %d)", fanoutLingerMsMax, f.LingerMs)
	}
}

func (l Log) validate(found *problems) {
	checkOneOf(found, "log.level", l.Level, logLevels)
	checkOneOf(found, "log.format", l.Format, logFormats)
}

func checkOneOf(found *problems, key, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		found.add(key, "must be one of %v (got %q)", allowed, value)
	}
}

// movesInFlightMax bounds moves.max_in_flight (the planner's limit).
const movesInFlightMax = 1024

// timingMsMax bounds the cluster's heartbeat and move timings (a day): a
// node adds them to its clock, and past this they stop meaning anything
// but "never" long before they overflow.
const timingMsMax = 24 * 3_600_000

// fanoutLingerMsMax bounds fanout.linger_ms: a record may wait at most
// this long after its commit for its batch to fill.
const fanoutLingerMsMax = 60_000

// The bounds of cluster.meta_snapshot_entries: below the minimum a busy
// cluster would snapshot (and fsync a whole image) every few entries;
// above the maximum the log a restart replays grows without need.
const (
	metaSnapshotEntriesMin = 10
	metaSnapshotEntriesMax = 1_000_000
)

// validateTimings checks the cluster's heartbeat and move timings.
func (c Config) validateTimings(found *problems) {
	positive := []struct {
		key   string
		value int64
	}{
		{"cluster.heartbeat_interval_ms", c.Cluster.HeartbeatIntervalMs}, {"cluster.dead_after_ms", c.Cluster.DeadAfterMs},
		{"moves.freeze_ttl_ms", c.Moves.FreezeTTLMs}, {"moves.stall_timeout_ms", c.Moves.StallTimeoutMs},
		{"moves.force_promote_after_ms", c.Moves.ForcePromoteAfterMs},
	}
	for _, setting := range positive {
		if setting.value <= 0 || setting.value > timingMsMax {
			found.add(setting.key, "must be in [1, %d] (got %d)", timingMsMax, setting.value)
		}
	}
	if c.Cluster.DeadAfterMs/3 < c.Cluster.HeartbeatIntervalMs { // not 3 × interval, which overflows
		found.add("cluster.dead_after_ms", "must be at least three heartbeat intervals (%d < 3 × %d)", c.Cluster.DeadAfterMs, c.Cluster.HeartbeatIntervalMs)
	}
	if c.Cluster.MetaSnapshotEntries < metaSnapshotEntriesMin || c.Cluster.MetaSnapshotEntries > metaSnapshotEntriesMax {
		found.add("cluster.meta_snapshot_entries", "must be between %d and %d (got %d)",
			metaSnapshotEntriesMin, metaSnapshotEntriesMax, c.Cluster.MetaSnapshotEntries)
	}
	if c.Moves.MaxInFlight < 1 || c.Moves.MaxInFlight > movesInFlightMax {
		found.add("moves.max_in_flight", "must be between 1 and %d (got %d)", movesInFlightMax, c.Moves.MaxInFlight)
	}
}
