package node

import (
	"errors"
	"fmt"

	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/rebalance"
	"narad/storage"
)

// NodeIDBytesMax bounds Config.NodeID: a node id travels in every peer
// message. The bounds of the requests themselves are package msg's.
const NodeIDBytesMax = 64

// retentionForever as a topic's retention keeps records forever; a topic
// gets it only from a keep-forever node default.
const retentionForever = 0

// The metastore checks a schema's size again when it applies it, against
// its own bound: the two must be one. This fails to compile when they
// differ (a negative constant does not convert to uint).
const _ = uint(msg.SchemaBytesMax-meta.SchemaBytesMax) + uint(meta.SchemaBytesMax-msg.SchemaBytesMax)

// The metastore checks max_deliveries again when it applies a topic
// change, against its own bound: the two must be one.
const _ = uint(msg.MaxDeliveriesMax-meta.MaxDeliveriesMax) + uint(meta.MaxDeliveriesMax-msg.MaxDeliveriesMax)

// A frozen source sends its queue state (at most both caps' worth of
// offsets) within msg.MoveLeasesMax. This fails to compile otherwise.
const _ = uint(msg.MoveLeasesMax - 2*lease.CapMax)

// The metastore refuses a lease cap a table would not take, and no
// more: the two bounds must be one.
const _ = uint(meta.LeaseCapMax-lease.CapMax) + uint(lease.CapMax-meta.LeaseCapMax)

// HandleKeyBytes is the size of Config.HandleKey.
const HandleKeyBytes = lease.HandleKeyBytes

// openLogsLimit bounds Config.OpenLogsMax: beyond it the descriptors
// alone would exceed any sane process limit.
const openLogsLimit = 1 << 20

// diskReserveBytesLimit bounds Config.DiskReserveBytes.
const diskReserveBytesLimit = 1 << 40

// closedLogsKeptBytesLimit bounds Config.ClosedLogsKeptBytesMax.
const closedLogsKeptBytesLimit = 64 << 30

// placementLimit bounds Config.TopicsMax and PartitionsPerNodeMax.
const placementLimit = 1 << 24

// relaysLimit bounds Config.RelaysInFlightMax.
const relaysLimit = 1 << 16

// relayBytesLimit bounds Config.RelayBytesInFlightMax.
const relayBytesLimit = 1 << 34

// consumeReplyBytesLimit bounds Config.ConsumeReplyBytesMax.
const consumeReplyBytesLimit = 64 << 20

// roundReadBytesLimit bounds Config.RoundReadBytesMax.
const roundReadBytesLimit = 1 << 30

// verifySegmentsPerMoveRequest bounds the sealed segments a move's source
// reads to verify at each move request of the partition (verifyForMove):
// one segment, at most storage.segment_bytes, per request on the loop.
const verifySegmentsPerMoveRequest = 1

// Config holds a node's settings. Callers start from DefaultConfig and
// change what they need; Validate reports every problem at once.
type Config struct {
	// NodeID names this node in partition stats and membership.
	NodeID string
	// DataID names the data directory this node runs on (the driver
	// writes it there at the directory's first start): its heartbeats
	// carry it, and a node whose member the metastore knows by another
	// serves nothing (datadir.go). Empty: the node names none.
	DataID string
	// AdvertiseAddr is the HTTP address clients reach this node at.
	AdvertiseAddr string
	// ClusterAddr is where peers reach this node (Raft and forwarding).
	ClusterAddr string
	// Meta configures the metastore replica; Meta.NodeID must equal
	// NodeID. Left zero, New makes this node the sole voter of its own
	// group (a single node).
	Meta meta.Config
	// MetaTickIntervalMs is the period of one Raft tick.
	MetaTickIntervalMs int64
	// MemberHeartbeatIntervalMs is how often the node tells the metastore
	// it is alive.
	MemberHeartbeatIntervalMs int64
	// ProposalTimeoutMs bounds the wait for a metastore change's outcome.
	ProposalTimeoutMs int64
	// RootSeedHash, when set, is the password hash (made by the driver)
	// of the root user "admin" that this node proposes while it leads the
	// metastore and no user exists. Empty: this node never seeds.
	RootSeedHash []byte
	// EnforceGrants is set when the driver authenticates its callers
	// (security on): the writes the node makes on a topic's behalf, its
	// dead letters, then need the topic's owner to hold produce on the
	// dead-letter topic as the users stand when they are written, not only
	// when the setting was made (deadLettersAllowed).
	EnforceGrants bool
	// MemberDeadAfterMs is how long without a heartbeat before the leader
	// marks a member dead (its partitions are then skipped by produce
	// until it heartbeats again). Greater than MemberHeartbeatIntervalMs.
	MemberDeadAfterMs int64
	// ForwardTimeoutMs bounds the wait for another node's answer to a
	// forwarded request; past it the peer counts as unreachable.
	ForwardTimeoutMs int64
	// PeerDownMs is how long a peer that let a forward time out (or that
	// the driver could not reach) is avoided by produce placement and
	// consume probes, unless a message from it arrives sooner.
	PeerDownMs int64
	// Moves bounds and times the partition moves (docs/architecture.md#moves).
	Moves MoveConfig
	// Log bounds every partition log.
	Log storage.LogConfig

	// Topic defaults, applied when a create request leaves a field zero.
	DefaultPartitions          int
	PartitionsMax              int
	DefaultRetentionMs         int64
	DefaultVisibilityTimeoutMs int64
	DefaultInFlightMax         int
	DefaultAckedAheadMax       int

	// TopicsMax bounds the topics of the cluster and PartitionsPerNodeMax
	// the partitions one node owns: a create or a growth past either is
	// refused (409). Each within [1, placementLimit].
	TopicsMax            int
	PartitionsPerNodeMax int

	// ConsumeWaitMaxMs clamps a consume's long-poll wait.
	ConsumeWaitMaxMs int64
	// ConsumeReplyBytesMax: a batch consume stops adding messages once
	// they hold this many payload bytes (a reply always carries at least
	// one message, so it holds at most this plus one record). Within
	// [MessageBytesMax, consumeReplyBytesLimit].
	ConsumeReplyBytesMax int
	// RoundReadBytesMax bounds the payload bytes the node reads for
	// consume and replay replies between two Readys, every one together
	// (each reply holds up to ConsumeReplyBytesMax, and a round takes up
	// to a thousand requests): past it a consume or replay is refused
	// (503) and parked
	// polls look again at the next Tick (reads.go). Within
	// [ConsumeReplyBytesMax, roundReadBytesLimit].
	RoundReadBytesMax int
	// WaitersMax bounds the long polls parked at once; past it a consume
	// that finds nothing and asked to wait is refused (503), and one that
	// did not ask to wait answers at once with nothing, as always.
	WaitersMax int
	// HeldRequestsMax bounds the requests held at once for a topic this
	// replica does not know yet, or for a partition past the count it has
	// applied (topicwait.go); past it such a request is answered 503 at
	// once.
	HeldRequestsMax int
	// LeasesMax bounds the offsets the lease tables of the node hold
	// together (lease.Table.Held: records delivered and not acked, acks
	// above a frontier), about 100 bytes each: the topics' caps bound each
	// partition, this the node (leases.go). At it a consume served here
	// delivers only records whose leases lapsed, else answers 503.
	LeasesMax int
	// CommitPersistIntervalMs is how often changed committed consumer
	// offsets are persisted (a lost update only causes redelivery).
	CommitPersistIntervalMs int64
	// RetentionCheckIntervalMs is how often open logs apply retention.
	RetentionCheckIntervalMs int64
	// IdleLogCloseMs closes a log unused this long (0: never).
	IdleLogCloseMs int64
	// HWMEagerAfterEvictionMs: for this long after the node closed a log
	// for room (OpenLogsMax), every sync round writes the hwm files of
	// its logs, so the logs it closes have none to write and fsync at
	// their close (evicting); 0 never does, and hwm files stay as lazy as
	// Log.HWMLagBytesMax and Log.HWMLagMsMax allow.
	HWMEagerAfterEvictionMs int64
	// HandleKey makes receipt handles unguessable and binds them to their
	// topic (lease.FormatHandle). The driver draws it at every start
	// (crypto/rand in production, the seed in the simulator): handles of
	// an earlier process, or of another owner, verify to no reservation.
	// Exactly lease.HandleKeyBytes long; the core never draws it.
	HandleKey []byte
	// OpenLogsMax caps the partition logs open at once; opening one more
	// closes the least recently used log that has nothing to sync (it
	// reopens on demand). Each open log holds file descriptors, so the
	// driver keeps this well below the process's limit. Within
	// [1, openLogsLimit].
	OpenLogsMax int
	// ClosedLogsKeptBytesMax bounds the memory of the logs the node keeps
	// after closing them for room or idleness, so that their next open is
	// a warm reopen, without recovery's read of every segment (a
	// partition of a gigabyte read a gigabyte at each reopen); past it the
	// least recently closed are forgotten and recover when opened again.
	// A kept log holds its index (4 bytes a record of the segments whose
	// positions are resident, a few hundred bytes a segment), no write
	// buffer and no descriptor.
	// 0 keeps none. Within [0, closedLogsKeptBytesLimit].
	ClosedLogsKeptBytesMax int64
	// DiskReserveBytes is the disk space the node keeps free: under it
	// (as the driver reports it, SetDiskFree) it refuses writes into its
	// partitions (disk.go). 0 keeps no reserve. Within [0,
	// diskReserveBytesLimit].
	DiskReserveBytes int64
	// Fanout bounds the copy of parent partitions into their children.
	Fanout FanoutConfig
	// RelaysInFlightMax caps the writes this node makes into topics on
	// its own behalf (dead letters) that are not yet durable; past it a
	// new one is refused and retried later. Within [1, relaysLimit].
	RelaysInFlightMax int
	// RelayBytesInFlightMax caps the key and payload bytes of those
	// writes (each holds its records until every owner made them
	// durable, a batch of up to 8 MiB): past it a new one is refused and
	// retried later; one alone is always taken. Within
	// [msg.ProduceBatchBytesMax, relayBytesLimit].
	RelayBytesInFlightMax int64
}

// DefaultConfig returns the defaults (docs/operations.md#settings).
func DefaultConfig() Config {
	return Config{
		NodeID:                     "node-1",
		AdvertiseAddr:              "127.0.0.1:7942",
		ClusterAddr:                "127.0.0.1:7943",
		Log:                        storage.DefaultLogConfig(),
		DefaultPartitions:          3,
		PartitionsMax:              msg.PartitionsMaxDefault,
		DefaultRetentionMs:         7 * 24 * 3_600_000,
		DefaultVisibilityTimeoutMs: 30_000,
		DefaultInFlightMax:         1024,
		DefaultAckedAheadMax:       1024,
		ConsumeWaitMaxMs:           10_000,
		TopicsMax:                  10_000,
		PartitionsPerNodeMax:       20_000,
		WaitersMax:                 10_000,
		HeldRequestsMax:            4_096,
		LeasesMax:                  4 << 20,
		ConsumeReplyBytesMax:       8 << 20,
		RoundReadBytesMax:          64 << 20,
		CommitPersistIntervalMs:    100,
		RetentionCheckIntervalMs:   60_000,
		IdleLogCloseMs:             1_800_000,
		HWMEagerAfterEvictionMs:    1_000,
		OpenLogsMax:                1024,
		ClosedLogsKeptBytesMax:     256 << 20,
		DiskReserveBytes:           256 << 20,
		RelaysInFlightMax:          1024,
		RelayBytesInFlightMax:      64 << 20,
		Fanout:                     DefaultFanoutConfig(),
		MetaTickIntervalMs:         100,
		MemberHeartbeatIntervalMs:  5_000,
		ProposalTimeoutMs:          5_000,
		MemberDeadAfterMs:          30_000,
		ForwardTimeoutMs:           2_000,
		PeerDownMs:                 2_000,
		Moves:                      DefaultMoveConfig(),
	}
}

// singleNodeRaftID is the raft id of a node that is its own cluster.
const singleNodeRaftID = 1

// hwmEagerAfterEvictionMsLimit bounds Config.HWMEagerAfterEvictionMs: an
// hour, far from overflowing the node's clock arithmetic.
const hwmEagerAfterEvictionMsLimit = 60 * 60 * 1000

// destinationRestMsLimit bounds MoveConfig.DestinationRestMs: a day, so
// that its doublings stay far from overflowing.
const destinationRestMsLimit = 24 * 60 * 60 * 1000

// withMetaDefaults fills in a single-node metastore configuration when
// none is given.
func (c Config) withMetaDefaults() Config {
	if c.Meta.NodeID == "" {
		c.Meta = meta.DefaultConfig(c.NodeID, []meta.Peer{{ID: c.NodeID, RaftID: singleNodeRaftID, ClusterAddr: c.ClusterAddr}})
	}
	return c
}

// Validate reports every problem of the configuration.
func (c Config) Validate() error {
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	check(c.NodeID != "" && len(c.NodeID) <= NodeIDBytesMax, "node id must be 1 to %d bytes, got %d", NodeIDBytesMax, len(c.NodeID))
	check(c.AdvertiseAddr != "" && c.ClusterAddr != "", "advertise (HTTP) and cluster addresses must not be empty")
	check(c.PartitionsMax >= msg.PartitionsMin && c.PartitionsMax <= meta.PartitionsMax,
		"partitions max %d outside [%d, %d]", c.PartitionsMax, msg.PartitionsMin, meta.PartitionsMax)
	check(c.DefaultPartitions >= msg.PartitionsMin && c.DefaultPartitions <= c.PartitionsMax,
		"default partitions %d outside [%d, %d]", c.DefaultPartitions, msg.PartitionsMin, c.PartitionsMax)
	check(c.DefaultRetentionMs == retentionForever || c.DefaultRetentionMs >= msg.RetentionMsMin,
		"default retention %d ms must be 0 (keep forever) or at least 1 h", c.DefaultRetentionMs)
	check(c.DefaultVisibilityTimeoutMs > 0 && c.DefaultVisibilityTimeoutMs <= msg.VisibilityTimeoutMsMax,
		"default visibility timeout %d not in [1, %d]", c.DefaultVisibilityTimeoutMs, msg.VisibilityTimeoutMsMax)
	check(c.DefaultInFlightMax > 0, "default max in flight must be > 0")
	check(c.DefaultAckedAheadMax > 0, "default max acked ahead must be > 0")
	check(c.ConsumeWaitMaxMs >= 0, "consume wait max must be >= 0")
	check(c.WaitersMax > 0, "waiters max must be > 0")
	check(c.HeldRequestsMax > 0, "held requests max must be > 0")
	check(c.LeasesMax > 0, "leases max must be > 0")
	check(c.TopicsMax >= 1 && c.TopicsMax <= placementLimit, "topics max %d not in [1, %d]", c.TopicsMax, placementLimit)
	check(c.PartitionsPerNodeMax >= 1 && c.PartitionsPerNodeMax <= placementLimit,
		"partitions per node max %d not in [1, %d]", c.PartitionsPerNodeMax, placementLimit)
	check(c.RoundReadBytesMax >= c.ConsumeReplyBytesMax && c.RoundReadBytesMax <= roundReadBytesLimit,
		"round read bytes max %d not in [%d, %d]", c.RoundReadBytesMax, c.ConsumeReplyBytesMax, roundReadBytesLimit)
	check(c.ConsumeReplyBytesMax >= msg.MessageBytesMax && c.ConsumeReplyBytesMax <= consumeReplyBytesLimit,
		"consume reply bytes max %d not in [%d, %d]", c.ConsumeReplyBytesMax, msg.MessageBytesMax, consumeReplyBytesLimit)
	check(c.CommitPersistIntervalMs > 0, "commit persist interval must be > 0")
	check(c.RetentionCheckIntervalMs > 0, "retention check interval must be > 0")
	check(len(c.HandleKey) == lease.HandleKeyBytes, "handle key of %d bytes, want %d (drawn by the driver)", len(c.HandleKey), lease.HandleKeyBytes)
	check(c.OpenLogsMax >= 1 && c.OpenLogsMax <= openLogsLimit, "open logs max %d not in [1, %d]", c.OpenLogsMax, openLogsLimit)
	check(c.DiskReserveBytes >= 0 && c.DiskReserveBytes <= diskReserveBytesLimit,
		"disk reserve bytes %d not in [0, %d]", c.DiskReserveBytes, int64(diskReserveBytesLimit))
	check(c.ClosedLogsKeptBytesMax >= 0 && c.ClosedLogsKeptBytesMax <= closedLogsKeptBytesLimit,
		"closed logs kept bytes max %d not in [0, %d]", c.ClosedLogsKeptBytesMax, int64(closedLogsKeptBytesLimit))
	check(c.RelaysInFlightMax >= 1 && c.RelaysInFlightMax <= relaysLimit, "relays in flight max %d not in [1, %d]", c.RelaysInFlightMax, relaysLimit)
	check(c.RelayBytesInFlightMax >= msg.ProduceBatchBytesMax && c.RelayBytesInFlightMax <= relayBytesLimit,
		"relay bytes in flight max %d not in [%d, %d]", c.RelayBytesInFlightMax, msg.ProduceBatchBytesMax, int64(relayBytesLimit))
	problems = append(problems, c.Fanout.problems()...)
	check(c.IdleLogCloseMs == 0 || c.IdleLogCloseMs >= 60_000, "idle log close must be 0 or >= 60000 ms")
	check(c.HWMEagerAfterEvictionMs >= 0 && c.HWMEagerAfterEvictionMs <= hwmEagerAfterEvictionMsLimit,
		"hwm eager after eviction must be in [0, %d] ms", hwmEagerAfterEvictionMsLimit)
	check(c.Log.RecordBytesMax >= msg.MessageBytesMax+msg.KeyBytesMax,
		"log record bytes max %d cannot hold a %d-byte payload with a %d-byte key", c.Log.RecordBytesMax, msg.MessageBytesMax, msg.KeyBytesMax)
	check(c.Meta.NodeID == "" || c.Meta.NodeID == c.NodeID, "metastore node id %q differs from node id %q", c.Meta.NodeID, c.NodeID)
	check(c.MetaTickIntervalMs > 0, "meta tick interval must be > 0")
	check(c.MemberHeartbeatIntervalMs > 0, "member heartbeat interval must be > 0")
	check(c.ProposalTimeoutMs > 0, "proposal timeout must be > 0")
	check(c.MemberDeadAfterMs > c.MemberHeartbeatIntervalMs, "member dead-after (%d ms) must exceed the heartbeat interval (%d ms)",
		c.MemberDeadAfterMs, c.MemberHeartbeatIntervalMs)
	check(c.ForwardTimeoutMs > 0 && c.PeerDownMs > 0, "forward timeout and peer-down interval must be > 0")
	check(c.MemberHeartbeatIntervalMs*3 <= c.MemberDeadAfterMs, "member dead-after (%d ms) must be at least three heartbeat intervals (%d ms): "+
		"a node stops writing after half of it without an applied heartbeat", c.MemberDeadAfterMs, c.MemberHeartbeatIntervalMs)
	for _, problem := range c.Moves.problems() {
		check(false, "%s", problem)
	}
	if c.Meta.NodeID != "" {
		if err := c.Meta.Validate(); err != nil {
			problems = append(problems, err)
		}
	}
	if err := c.Log.Validate(); err != nil {
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}

// MoveConfig bounds and times partition moves. Every field must be > 0.
type MoveConfig struct {
	// MaxInFlight bounds the moves under way in the cluster (the planner
	// on the leader keeps to it).
	MaxInFlight int
	// LagBytes: CatchUp hands off once the copy is within this many bytes
	// of the source's tail.
	LagBytes int64
	// CatchUpPassesMax bounds the CatchUp passes of a move that does not
	// converge (a partition written faster than it copies); it then hands
	// off anyway, for a longer freeze.
	CatchUpPassesMax int
	// RestartsMax bounds the restarts of one move on its destination (a
	// failure that recurs at every attempt, such as a disk too small for
	// the copy): the next session proposes the move's abort instead.
	RestartsMax int
	// FreezeTTLMs is how long a source stays frozen without the move
	// completing before it asks for the move's abort (and resumes writes
	// once the abort applies).
	FreezeTTLMs int64
	// StallTimeoutMs: a destination that made no progress for this long
	// while the source is alive aborts its move.
	StallTimeoutMs int64
	// ForcePromoteAfterMs: a destination whose source died waits this long
	// after its last contact before it promotes a complete copy.
	ForcePromoteAfterMs int64
	// PlanIntervalMs is how often the leader runs the planner.
	PlanIntervalMs int64
	// SweepIntervalMs is how often a node checks its stale copies.
	SweepIntervalMs int64
	// DestinationFailuresMax is how many moves to one destination in a
	// row, with no completed move between, may end without their flip
	// before the leader rests it (rebalance.Member.Resting).
	DestinationFailuresMax int
	// DestinationRestMs is how long a rested destination takes no new
	// partition, the first time since its last completed move; each rest
	// after that lasts twice the one before, up to 16 times this. At most
	// destinationRestMsLimit.
	DestinationRestMs int64
}

// DefaultMoveConfig returns the defaults of the move protocol
// (docs/architecture.md#moves).
func DefaultMoveConfig() MoveConfig {
	return MoveConfig{MaxInFlight: rebalance.MaxInFlightMovesDefault, LagBytes: 4 << 20, CatchUpPassesMax: 16, RestartsMax: 8, FreezeTTLMs: 30_000,
		StallTimeoutMs: 60_000, ForcePromoteAfterMs: 120_000, PlanIntervalMs: 1_000, SweepIntervalMs: 10_000,
		DestinationFailuresMax: 2, DestinationRestMs: 60_000}
}

func (c MoveConfig) problems() []string {
	var problems []string
	if c.MaxInFlight < 1 || c.MaxInFlight > rebalance.MaxInFlightMovesLimit || c.LagBytes < 1 || c.CatchUpPassesMax < 1 || c.RestartsMax < 1 ||
		c.DestinationFailuresMax < 1 {
		problems = append(problems, fmt.Sprintf("moves: max in flight must be 1 to %d; lag bytes, catch-up passes, restarts and destination failures must be > 0", rebalance.MaxInFlightMovesLimit))
	}
	if c.FreezeTTLMs < 1 || c.StallTimeoutMs < 1 || c.ForcePromoteAfterMs < 1 || c.PlanIntervalMs < 1 || c.SweepIntervalMs < 1 || c.DestinationRestMs < 1 {
		problems = append(problems, "moves: every interval and timeout must be > 0")
	}
	if c.DestinationRestMs > destinationRestMsLimit {
		problems = append(problems, fmt.Sprintf("moves: a destination's rest must be at most %d ms", destinationRestMsLimit))
	}
	return problems
}
