package msg

import "go.etcd.io/raft/v3/raftpb"

// Envelope carries a message between nodes. A single node sends none.
type Envelope struct {
	// From and To are node ids: From is the sender, To the receiver. Both
	// are set on every envelope the node hands out or is given.
	From, To string
	// Message is never nil: one of the peer message types below.
	Message PeerMessage
}

// PeerMessage is one message between nodes, carried in Envelope.Message.
// The set is closed, like Request's: the types of this file, and nothing
// else. It is also append-only: package wire encodes each type under a
// fixed number, and a number is never reused.
type PeerMessage interface{ isPeerMessage() }

func (RaftMessage) isPeerMessage()    {}
func (ForwardRequest) isPeerMessage() {}
func (ForwardReply) isPeerMessage()   {}
func (Subscribe) isPeerMessage()      {}
func (Notify) isPeerMessage()         {}
func (Join) isPeerMessage()           {}
func (JoinRelay) isPeerMessage()      {}
func (JoinAccepted) isPeerMessage()   {}
func (Heartbeat) isPeerMessage()      {}
func (ForwardCancel) isPeerMessage()  {}
func (Retired) isPeerMessage()        {}

// PeerAddress is one voter of the metastore: node id, raft id and cluster
// address.
type PeerAddress struct {
	// ID is the node's id, never empty.
	ID string
	// RaftID is the node's id in the metastore's Raft group, never 0.
	RaftID uint64
	// ClusterAddr is the host:port peers reach the node at.
	ClusterAddr string
}

// RaftMessage carries one message of the metastore's Raft group. The
// message is a protobuf value: it travels by pointer, never copied.
type RaftMessage struct {
	Message *raftpb.Message
}

// ForwardRequest asks the receiving node to serve Request as if a client
// had sent it to that node, and to answer with a ForwardReply of the same
// ID. LocalOnly limits it to partitions the receiver owns (no further
// forwarding), which every forwarded request sets: a request is forwarded
// at most once.
type ForwardRequest struct {
	// ID is chosen by the sender, unique among its outstanding forwards.
	ID        uint64
	Request   Request
	LocalOnly bool
}

// ForwardReply answers the ForwardRequest with the same ID.
type ForwardReply struct {
	ID    uint64
	Reply Reply
}

// ForwardCancel tells the receiving node that the client of the forward
// with this ID left: a consume it holds parked for that forward is
// answered now (with nothing), so that the poll neither keeps its place
// among the receiver's parked polls nor takes records for nobody. A
// forward already answered, or not parked, is unaffected.
type ForwardCancel struct {
	ID uint64
}

// Retired tells the receiving node that its decommission is complete (it
// left the metastore's voters) as the sender's replica shows: a node
// removed from the group may never hear of the entry that removed it.
// The receiver refuses its clients from then on; its peers refuse what it
// sends them.
type Retired struct{}

// Subscribe asks the receiving node (an owner of partitions of Topic) to
// send a Notify when records become visible on any of them, for the next
// ForMs milliseconds of the receiver's clock. A node sends it on behalf of
// its parked long polls.
type Subscribe struct {
	Topic string
	ForMs int64
}

// Notify tells a subscriber that records became visible (or leases were
// released) on Topic at the sender: its parked long polls should probe
// again.
type Notify struct {
	Topic string
}

// Join asks the receiving node to add the sender to the metastore's voters
// (a node started to join a running cluster sends it to the members it
// was given until it is a voter). Only the leader acts on it.
type Join struct {
	RaftID      uint64
	ClusterAddr string
	HTTPAddr    string
}

// JoinRelay is a Join that a member which does not lead passes on to the
// leader it knows: a joining node may have been given only some members,
// none of them the leader. NodeID is the joiner's. A relay is never
// relayed again.
type JoinRelay struct {
	NodeID string
	Join   Join
}

// JoinAccepted is the leader's answer to a Join (direct or relayed) from a
// node it has already added: the voters, so that a joiner given only some
// members can address the others, the leader among them (it answers the
// leader's Raft messages, which it could not route before).
type JoinAccepted struct {
	Voters []PeerAddress
}

// Heartbeat tells the metastore's leader that the sender is alive at
// NowMs of its own clock, and where it listens. The leader gathers the
// heartbeats of its members and proposes them together, as one entry
// (meta.MemberHeartbeats); its own joins them without a message.
type Heartbeat struct {
	HTTPAddr    string
	ClusterAddr string
	NowMs       int64
	// Incarnation numbers the sender's start: NowMs is on the clock of
	// that start, which may be behind an earlier start's (a clock set back
	// across a restart).
	Incarnation uint64
	// DiskLow: the sender's free disk space is under its reserve
	// (storage.disk_reserve_bytes), so it refuses writes into its
	// partitions; other nodes send it no keyless records and the planner
	// moves no partition to it while the metastore says so.
	DiskLow bool
	// DataID names the sender's data directory (written at its first
	// start): the metastore keeps a member's first and refuses the beats
	// of the same node id from another directory, whose partitions do not
	// hold what the member acknowledged (meta.Member.DataID). Empty from
	// a driver that names none.
	DataID string
}
