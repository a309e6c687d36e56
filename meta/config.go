package meta

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
)

// Bounds fixed by the design (docs/operations.md#fixed-bounds), not
// configurable.
const (
	// minVoters is the fewest voters a removal may leave (MinVoters).
	minVoters = 3
	// commandBytesMax bounds one encoded command, proposer and decoder
	// alike.
	commandBytesMax = 1 << 20
	// messageBytesMax bounds one encoded raft message accepted by
	// UnmarshalMessage; snapshots of the metadata travel in one message,
	// and are sent only within it (SnapshotMessageBytesMax).
	messageBytesMax = SnapshotMessageBytesMax
	// raftIDMax is the largest raft id: raft reserves the two above it for
	// its local storage threads.
	raftIDMax = math.MaxUint64 - 2
	// votersLearnedMax bounds the peers a joining replica keeps from
	// LearnPeers.
	votersLearnedMax = 1 << 12
	// ReadRequestsMax bounds the read requests (RequestRead) a leader
	// has outstanding at once; past it RequestRead is ErrReadsFull. It is
	// a backstop for callers: the node asks one at a time (its next read
	// waits for the last to be confirmed or lost), since more reads out
	// at once would only add heartbeats.
	ReadRequestsMax = 16
)

// campaignSiteEveryElections is how many election timeouts apart a
// follower asks fault site SiteMetaCampaign whether to campaign early
// (only in the simulator; see Meta.Tick).
const campaignSiteEveryElections = 5

// Defaults of Config (see DefaultConfig).
const (
	defaultElectionTicks             = 10
	defaultHeartbeatTicks            = 1
	defaultSnapshotEntries           = 1000
	defaultSnapshotTailEntries       = 100
	defaultSnapshotAckTicks          = 3 * defaultElectionTicks
	defaultMaxSizePerMsg             = 1 << 20
	defaultMaxInflightMsgs           = 256
	defaultMaxUncommittedEntriesSize = 64 << 20
)

// Peer is one member of the Raft group: its node id, its raft id and the
// address its raft messages go to.
type Peer struct {
	// ID is the node id (the broker's member id). Unique in the group.
	ID string `json:"id"`
	// RaftID is the id raft uses in messages. Never 0, never above
	// raftIDMax, and never reused once its peer was removed.
	RaftID uint64 `json:"raft_id"`
	// ClusterAddr is where the peer's raft transport listens (host:port).
	ClusterAddr string `json:"cluster_addr"`
}

// Config configures a Meta. Build it with DefaultConfig and override; New
// calls Validate.
type Config struct {
	// NodeID is this node's id; Peers must hold an entry with it.
	NodeID string
	// Peers are the voters at bootstrap. A joining node lists itself and
	// the members it knows (to map raft ids to addresses); it does not
	// bootstrap with them.
	Peers []Peer
	// ProposalSequenceBase is where this instance's proposal sequence
	// numbers start. Proposals of every replica are told apart by (node,
	// term, sequence); a replica restarted within one term must not repeat
	// a sequence, so the node passes a base that grows with each start
	// (its incarnation, shifted).
	ProposalSequenceBase uint64
	// Join starts a fresh store with no configuration: the node waits to be
	// added by a ConfChange proposed on the leader. Ignored on restart.
	Join bool
	// DataID names the data directory this replica's store lives in (the
	// node's, Member.DataID once its first heartbeat applied). A vote
	// request that names another directory for this replica is refused
	// (votes.go). Empty: the replica names none and votes as raft says.
	DataID string
	// ElectionTicks is the election timeout in ticks (raft randomizes it
	// to [ElectionTicks, 2*ElectionTicks)). Greater than HeartbeatTicks.
	ElectionTicks int
	// HeartbeatTicks is the leader's heartbeat interval in ticks.
	HeartbeatTicks int
	// SnapshotEntries is how many entries are applied between two
	// snapshots of the state machine; the log is compacted at each.
	SnapshotEntries uint64
	// SnapshotTailEntries is how many entries before a snapshot are kept
	// for slow followers (a follower further behind gets the snapshot).
	SnapshotTailEntries uint64
	// SnapshotAckTicks is how long, in ticks, the leader waits for a
	// follower to acknowledge a snapshot it sent before counting it lost
	// and sending it again. The transport may lose any message, and raft
	// sends nothing to a follower while a snapshot to it is pending.
	SnapshotAckTicks int
	// MaxSizePerMsg bounds the bytes of entries in one append message
	// (at least one entry is always sent).
	MaxSizePerMsg uint64
	// MaxInflightMsgs bounds the append messages in flight per follower.
	MaxInflightMsgs int
	// MaxUncommittedEntriesSize bounds the bytes of the leader's
	// uncommitted entries; proposals over it fail with
	// ErrProposalDropped.
	MaxUncommittedEntriesSize uint64
}

// DefaultConfig returns the defaults for node nodeID with the given
// bootstrap peers.
func DefaultConfig(nodeID string, peers []Peer) Config {
	return Config{
		NodeID:                    nodeID,
		Peers:                     peers,
		ElectionTicks:             defaultElectionTicks,
		HeartbeatTicks:            defaultHeartbeatTicks,
		SnapshotEntries:           defaultSnapshotEntries,
		SnapshotTailEntries:       defaultSnapshotTailEntries,
		SnapshotAckTicks:          defaultSnapshotAckTicks,
		MaxSizePerMsg:             defaultMaxSizePerMsg,
		MaxInflightMsgs:           defaultMaxInflightMsgs,
		MaxUncommittedEntriesSize: defaultMaxUncommittedEntriesSize,
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	problems := c.peerProblems()
	if c.HeartbeatTicks < 1 {
		problems = append(problems, fmt.Errorf("HeartbeatTicks %d must be at least 1", c.HeartbeatTicks))
	}
	if c.ElectionTicks <= c.HeartbeatTicks {
		problems = append(problems, fmt.Errorf("ElectionTicks %d must exceed HeartbeatTicks %d", c.ElectionTicks, c.HeartbeatTicks))
	}
	if c.SnapshotEntries < 1 {
		problems = append(problems, errors.New("SnapshotEntries must be at least 1"))
	}
	if c.SnapshotAckTicks < 1 {
		problems = append(problems, fmt.Errorf("SnapshotAckTicks %d must be at least 1", c.SnapshotAckTicks))
	}
	if c.MaxSizePerMsg < 1 {
		problems = append(problems, errors.New("MaxSizePerMsg must be at least 1 byte"))
	}
	if c.MaxInflightMsgs < 1 {
		problems = append(problems, fmt.Errorf("MaxInflightMsgs %d must be at least 1", c.MaxInflightMsgs))
	}
	if c.MaxUncommittedEntriesSize < commandBytesMax {
		problems = append(problems, fmt.Errorf("MaxUncommittedEntriesSize %d must be at least one command (%d bytes)",
			c.MaxUncommittedEntriesSize, commandBytesMax))
	}
	return errors.Join(problems...)
}

// peerProblems checks NodeID and Peers.
func (c Config) peerProblems() []error {
	var problems []error
	if c.NodeID == "" {
		problems = append(problems, errors.New("NodeID is empty"))
	}
	if _, found := c.self(); !found {
		problems = append(problems, fmt.Errorf("Peers has no entry for NodeID %q", c.NodeID))
	}
	nodeIDs, raftIDs := map[string]bool{}, map[uint64]bool{}
	for _, peer := range c.Peers {
		if err := peer.validate(); err != nil {
			problems = append(problems, err)
		}
		if nodeIDs[peer.ID] || raftIDs[peer.RaftID] {
			problems = append(problems, fmt.Errorf("peer %q (raft id %d) repeats a node id or raft id", peer.ID, peer.RaftID))
		}
		nodeIDs[peer.ID], raftIDs[peer.RaftID] = true, true
	}
	return problems
}

// self returns this node's entry of Peers.
func (c Config) self() (Peer, bool) {
	for _, peer := range c.Peers {
		if peer.ID == c.NodeID {
			return peer, true
		}
	}
	return Peer{}, false
}

// validate checks one peer on its own.
func (p Peer) validate() error {
	switch {
	case p.ID == "":
		return fmt.Errorf("peer with raft id %d has an empty node id", p.RaftID)
	case p.RaftID == 0 || p.RaftID > raftIDMax:
		return fmt.Errorf("peer %q: raft id %d is outside [1, %d]", p.ID, p.RaftID, uint64(raftIDMax))
	case p.ClusterAddr == "":
		return fmt.Errorf("peer %q has an empty cluster address", p.ID)
	}
	return nil
}

// RaftIDOf derives the raft id of a node from its node id (FNV-1a, 64
// bits, mapped into [1, raftIDMax]), so that every node computes the same
// bootstrap configuration from the same peer list and a joining node knows
// its own id. Since raft ids are never reused, a node id that was removed
// from the cluster cannot join again: a replacement takes a new id.
func RaftIDOf(nodeID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(nodeID))
	return h.Sum64()%raftIDMax + 1
}
