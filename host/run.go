package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"narad/config"
	"narad/meta"
	"narad/msg"
	"narad/node"
	"narad/storage"
)

// Run starts a node from a validated configuration and serves until ctx
// ends (graceful shutdown) or the node fails (an fsync error: the process
// should exit and be restarted).
func Run(ctx context.Context, cfg config.Config, logger *slog.Logger, started func()) error {
	opts, err := OptionsFrom(cfg)
	if err != nil {
		return err
	}
	h, err := Start(opts, logger)
	if err != nil {
		return diskFullHint(err, cfg.Storage.DataDir)
	}
	started()
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "cause", context.Cause(ctx), "grace", opts.ShutdownGrace)
		return h.Shutdown()
	case err := <-h.Failed():
		err = diskFullHint(err, cfg.Storage.DataDir)
		logger.Error("node failed; exiting so it restarts from its disk", "err", err)
		return errors.Join(err, h.Shutdown())
	}
}

// diskFullHint adds what to do to a failure caused by a full file system:
// "no space left on device" alone read as a broken node, and a node so
// stopped cannot start again until space is freed, since its start writes
// too (disk-full operator audit). Other errors are returned as they are.
func diskFullHint(err error, dataDir string) error {
	if !diskFull(err) {
		return err
	}
	return fmt.Errorf("%w\nthe file system of the data directory %s is full: free space on it, then start the node again "+
		"(storage.disk_reserve_bytes keeps room only from this node's own records, not from other programs' files)", err, dataDir)
}

// diskFull reports whether err comes of a full file system.
func diskFull(err error) bool {
	return errors.Is(err, storage.ErrNoSpace) || errors.Is(err, syscall.ENOSPC)
}

// OptionsFrom maps the server configuration onto host options, refusing
// settings this build cannot honour rather than ignoring them.
func OptionsFrom(cfg config.Config) (Options, error) {
	if err := Unsupported(cfg); err != nil {
		return Options{}, err
	}
	opts := DefaultOptions(cfg.Storage.DataDir)
	opts.HTTPAddr, opts.PprofAddr = cfg.HTTP.Addr, cfg.HTTP.PprofAddr
	opts.ReadTimeout, opts.WriteTimeout = cfg.HTTP.ReadTimeout, cfg.HTTP.WriteTimeout
	opts.IdleTimeout, opts.ShutdownGrace = cfg.HTTP.IdleTimeout, cfg.HTTP.ShutdownGrace
	opts.Codec.ConsumeWaitMaxMs = cfg.HTTP.MaxConsumeWait.Milliseconds()
	opts.Security.Enabled, opts.Security.AdminPassword = cfg.Security.Enabled, cfg.Security.AdminPassword
	opts.Security.TLSCertFile, opts.Security.TLSKeyFile = cfg.HTTP.TLSCertFile, cfg.HTTP.TLSKeyFile
	opts.Codec.BodyBytesInFlightMax = cfg.HTTP.MaxBodyBytesInFlight
	opts.Codec.ReplyBytesInFlightMax = cfg.HTTP.MaxReplyBytesInFlight
	opts.HTTPConnectionsMax = cfg.HTTP.MaxConnections
	opts.GroupSync = cfg.Storage.GroupSync
	opts.Node = nodeConfig(cfg)
	opts.NodeIDFromHostname = cfg.Cluster.NodeID == ""
	limit, err := descriptorLimit()
	if err != nil {
		return Options{}, err
	}
	overdraft := openLogsOverdraft(opts.Node.PartitionsMax)
	var logsErr, connectionsErr error
	opts.Node.OpenLogsMax, logsErr = openLogsCap(cfg.Storage.OpenLogsMax, overdraft, limit)
	_, connectionsErr = connectionsCap(cfg.HTTP.MaxConnections, limit) // checked before anything is written; the host derives it again
	// Every TLS file named is read and checked here, with the rest of the
	// configuration (tlsfiles.go); Start reads the API's again.
	_, httpTLSErr := opts.Security.tlsConfig()
	clusterTLS, clusterTLSErr := loadClusterTLS(cfg.Cluster)
	if err := errors.Join(logsErr, connectionsErr, httpTLSErr, clusterTLSErr); err != nil {
		return Options{}, err
	}
	cluster, err := clusterFrom(cfg, opts.Node.NodeID, clusterTLS)
	if err != nil {
		return Options{}, err
	}
	if cluster.options.Enabled {
		opts.Node.Meta, opts.Cluster = cluster.meta, cluster.options
		opts.Node.ClusterAddr, opts.Node.AdvertiseAddr = cluster.clusterAddr, cluster.advertiseAddr
	}
	return opts, errors.Join(opts.Node.Validate(), opts.Codec.Validate())
}

// nodeConfig maps the settings of a single node; clusterFrom adds those
// of a cluster.
// topic.max_partitions is bounded by the metastore's bound on one topic:
// a node allowed more would propose topics every replica refuses.
const _ = uint(config.PartitionsCeiling-meta.PartitionsMax) + uint(meta.PartitionsMax-config.PartitionsCeiling)

func nodeConfig(cfg config.Config) node.Config {
	n := node.DefaultConfig()
	n.NodeID = cfg.Cluster.NodeID
	if n.NodeID == "" {
		n.NodeID = hostname()
	}
	n.AdvertiseAddr = cfg.HTTP.Addr
	n.ClusterAddr = cfg.Cluster.Addr
	n.Log = storage.DefaultLogConfig()
	n.Log.SegmentBytes = cfg.Storage.SegmentBytes
	n.DefaultPartitions, n.PartitionsMax = cfg.Topic.DefaultPartitions, cfg.Topic.MaxPartitions
	n.DefaultRetentionMs = cfg.Topic.DefaultRetentionAgeMs
	n.DefaultVisibilityTimeoutMs = cfg.Topic.DefaultVisibilityTimeoutMs
	n.DefaultInFlightMax = cfg.Topic.DefaultMaxInFlightPerPartition
	n.DefaultAckedAheadMax = cfg.Topic.DefaultMaxAckedAheadPerPartition
	n.TopicsMax, n.PartitionsPerNodeMax = cfg.Topic.MaxTopics, cfg.Topic.MaxPartitionsPerNode
	n.ConsumeWaitMaxMs = cfg.HTTP.MaxConsumeWait.Milliseconds()
	n.IdleLogCloseMs = cfg.Storage.IdleLogEvictionMs
	n.ClosedLogsKeptBytesMax = cfg.Storage.ClosedLogsKeptBytesMax
	n.DiskReserveBytes = cfg.Storage.DiskReserveBytes
	n.HandleKey = drawHandleKey()
	n.MemberHeartbeatIntervalMs, n.MemberDeadAfterMs = cfg.Cluster.HeartbeatIntervalMs, cfg.Cluster.DeadAfterMs
	n.Moves.MaxInFlight, n.Moves.FreezeTTLMs = cfg.Moves.MaxInFlight, cfg.Moves.FreezeTTLMs
	n.Moves.StallTimeoutMs, n.Moves.ForcePromoteAfterMs = cfg.Moves.StallTimeoutMs, cfg.Moves.ForcePromoteAfterMs
	// A batch travels to the child's owners as a produce: the settings
	// are capped at a batch produce's bounds.
	n.Fanout.BatchRecordsMax = min(cfg.Fanout.MaxBatchRecords, msg.ProduceBatchRecordsMax)
	n.Fanout.BatchBytesMax = min(cfg.Fanout.MaxBatchBytes, msg.ProduceBatchBytesMax)
	n.Fanout.LingerMs = cfg.Fanout.LingerMs
	return n
}

// Unsupported lists the settings this build refuses, each with what to
// do: the server reports them with the configuration's other problems.
func Unsupported(cfg config.Config) error {
	var problems []error
	if cfg.Storage.Codec != "none" {
		problems = append(problems, fmt.Errorf("storage.codec %q is not supported; use \"none\"", cfg.Storage.Codec))
	}
	return errors.Join(problems...)
}

func hostname() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "node-1"
	}
	return name
}
