package meta

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"narad/chaos"
)

// Meta is one node's replica of the metastore: an etcd raft RawNode whose
// log, hard state, snapshot and state machine live in one Store. It is a
// deterministic state machine driven through Tick, Step, Propose and the
// Ready cycle (see doc.go). Not safe for concurrent use.
type Meta struct {
	// config is validated; never changes.
	config Config
	// self is config's entry for this node.
	self Peer
	// store is the bbolt file; Persist is its only writer.
	store *Store
	// storage is raft's log; Persist keeps it equal to the store's.
	storage *raft.MemoryStorage
	// raw is raft's node (raftNode: it knows when raft has nothing new).
	raw *raftNode
	// state is the state machine. The pointer never changes (a snapshot
	// is installed in place); only Persist changes its contents.
	state *State
	// applied is the last entry applied to state and written with it.
	applied appliedPosition
	// snapshotIndex is the index of the latest snapshot in the store.
	// Invariant: snapshotIndex <= applied.index.
	snapshotIndex uint64
	// snapshotsInstalled counts the leader's snapshots installed by this
	// instance (installSnapshot); only increases.
	snapshotsInstalled uint64
	// snapshotsTooLarge counts the snapshots this replica, leading, did not
	// send because their message was over snapshotBytesMax
	// (SnapshotMessageBytesMax; tests lower it); snapshotTooLargeBytes is
	// the size of the last one. Only noteSnapshotsSent changes them.
	snapshotsTooLarge     uint64
	snapshotTooLargeBytes int
	snapshotBytesMax      int
	// learned are peers this replica was told of (LearnPeers: while it
	// joins, or while it cannot address a voter):
	// like Config.Peers, they map raft ids to addresses until the state
	// lists the voters. Only LearnPeers adds to it or updates an entry.
	learned []Peer
	// voterAdded is set when a voter was added after the latest snapshot
	// (applyConfChangeEntry); maybeSnapshot takes one then and clears it,
	// and installSnapshot clears it (the installed snapshot lists the
	// voter). Invariant: when set, the addition's index is above
	// snapshotIndex. In memory only: a restart forgets it.
	voterAdded bool
	// sequence numbers this instance's proposals; only increases. It
	// starts at Config.ProposalSequenceBase.
	sequence uint64
	// confChangeTerm is the term in which this node proposed a
	// configuration change not yet applied; 0 when none.
	confChangeTerm uint64
	// ticks counts Tick calls; only Tick changes it.
	ticks uint64
	// logLostAt is the highest commit index a peer's heartbeat named past
	// this replica's log (0: none). A leader commits to a follower no
	// further than what the follower acknowledged having persisted, so
	// such a heartbeat says this replica lost entries it had persisted:
	// its node runs on another data directory than before, or one that
	// lost its metastore file. Only Step changes it; never cleared.
	logLostAt uint64
	// logLostTerm is the term of the heartbeat that set logLostAt: that
	// term's leader holds this replica's acknowledged index above its log
	// and probes it without end (each rejection brings the same append
	// back at once, since the leader never backs off below what the
	// replica acknowledged), so its appends are dropped while this
	// replica's log stays below logLostAt. A later term's leader probes
	// afresh and catches the replica up.
	logLostTerm uint64
	// snapshotsSent maps the raft id of a follower to the tick at which
	// the latest MsgSnap to it was handed out (Ready); an entry leaves when
	// the snapshot is reported (ReportSnapshot) or counted lost (Tick,
	// after SnapshotAckTicks).
	snapshotsSent map[uint64]uint64
	// readSeq numbers this instance's read requests (RequestRead); only
	// increases.
	readSeq uint64
	// reads are the read requests raft has not confirmed yet, oldest
	// first; at most ReadRequestsMax. Those of a leadership that ended
	// are forgotten (forgetLostReads), as raft forgot them.
	reads []pendingRead
	// outcomes gathered by Persist for this node's proposals, handed out
	// by Advance.
	outcomes []Outcome
	// phase and readyNumber enforce Ready, Persist, Advance in order.
	phase       readyPhase
	readyNumber uint64
	// failure is set when Persist failed: the instance is finished.
	failure error
}

// Outcome is the result of one of this node's proposals, known once its
// entry was applied on this replica.
type Outcome struct {
	ID ProposalID
	// Index is the log index of the applied entry.
	Index uint64
	// Err is nil when the command was applied, else the rejection
	// (ErrGuardFailed, ErrTopicExists, ErrStaleProposal, ...); a
	// rejection changed nothing.
	Err error
}

// Status is a summary for metrics and admin views.
type Status struct {
	NodeID        string
	RaftID        uint64
	Term          uint64
	Commit        uint64
	Applied       uint64
	SnapshotIndex uint64
	// SnapshotsInstalled counts the snapshots received from a leader and
	// installed since this instance started.
	SnapshotsInstalled uint64
	// SnapshotsTooLarge counts the snapshots this instance did not send
	// because their message was over SnapshotMessageBytesMax, and
	// SnapshotTooLargeBytes is the size of the last one: a follower
	// that needs one cannot catch up.
	SnapshotsTooLarge     uint64
	SnapshotTooLargeBytes int
	// Leader is the leader's node id, empty when unknown.
	Leader   string
	IsLeader bool
	// Barrier is Meta.Barrier.
	Barrier bool
}

// New starts a replica on store. On a fresh store it bootstraps the group
// with cfg.Peers as voters (or, with cfg.Join, waits to be added); on a
// store that holds state it restarts from it and ignores Peers and Join.
// The Meta owns the store from then on: Close closes it.
func New(cfg Config, store *Store) (*Meta, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("meta: config: %w", err)
	}
	p, err := store.load()
	if err == nil {
		err = checkPersisted(p)
	}
	if err != nil {
		return nil, err
	}
	m, err := newMeta(cfg, store, p)
	if err != nil || !p.fresh() || cfg.Join {
		return m, err
	}
	return m, m.raw.Bootstrap(bootstrapPeers(cfg.Peers))
}

// newMeta builds the Meta and its RawNode from what the store holds.
func newMeta(cfg Config, store *Store, p persisted) (*Meta, error) {
	state, err := stateFromImage(p.image)
	if err != nil {
		return nil, fmt.Errorf("meta: stored state: %w", err)
	}
	storage, err := buildMemoryStorage(p)
	if err != nil {
		return nil, err
	}
	self, _ := cfg.self()
	m := &Meta{config: cfg, self: self, store: store, storage: storage, state: state, sequence: cfg.ProposalSequenceBase,
		applied: p.applied, snapshotIndex: p.snapshot.GetMetadata().GetIndex(), snapshotsSent: map[uint64]uint64{},
		snapshotBytesMax: SnapshotMessageBytesMax}
	m.raw, err = newRaftNode(m.raftConfig(state.confState))
	return m, err
}

// raftConfig is the RawNode configuration: CheckQuorum (a leader cut off
// from a quorum steps down), PreVote (a rejoining node does not disrupt),
// proposal forwarding (a follower's Propose reaches the leader), and
// step-down when the leader is removed.
func (m *Meta) raftConfig(confState ConfState) *raft.Config {
	return &raft.Config{ID: m.self.RaftID, ElectionTick: m.config.ElectionTicks, HeartbeatTick: m.config.HeartbeatTicks,
		Storage: raftStorage{MemoryStorage: m.storage, confState: toRaftConfState(confState)}, Applied: m.applied.index,
		MaxSizePerMsg: m.config.MaxSizePerMsg, MaxInflightMsgs: m.config.MaxInflightMsgs,
		MaxUncommittedEntriesSize: m.config.MaxUncommittedEntriesSize, CheckQuorum: true, PreVote: true,
		ReadOnlyOption: raft.ReadOnlySafe, StepDownOnRemoval: true,
		Logger: raftLogger{}}
}

// bootstrapPeers lists the bootstrap voters for raft, sorted by raft id,
// each carrying its Peer entry so that every replica learns the addresses.
func bootstrapPeers(peers []Peer) []raft.Peer {
	sorted := slices.SortedFunc(slices.Values(peers), func(a, b Peer) int { return cmp.Compare(a.RaftID, b.RaftID) })
	raftPeers := make([]raft.Peer, len(sorted))
	for i, peer := range sorted {
		raftPeers[i] = raft.Peer{ID: peer.RaftID, Context: encodeConfContext(ProposalID{}, ConfChange{Kind: AddVoter, Peer: peer})}
	}
	return raftPeers
}

// usable returns why the Meta cannot be used, or nil.
func (m *Meta) usable() error {
	if m.failure != nil {
		return m.failure
	}
	if m.store.db == nil {
		return ErrClosed
	}
	return nil
}

// Tick advances raft's logical clock by one tick. Under fault site
// SiteMetaCampaign a follower campaigns early now and then, as one whose
// election timer fired after a pause.
func (m *Meta) Tick() {
	if m.usable() == nil {
		m.raw.Tick()
		m.ticks++
		m.expireSnapshots()
		m.maybeCampaignEarly()
	}
}

// maybeCampaignEarly campaigns (pre-vote first) when fault site
// SiteMetaCampaign fires, at most once every campaignSiteEveryElections
// election timeouts.
func (m *Meta) maybeCampaignEarly() {
	if m.ticks%uint64(campaignSiteEveryElections*m.config.ElectionTicks) != 0 || m.IsLeader() {
		return
	}
	if chaos.Buggify(chaos.SiteMetaCampaign) {
		_ = m.raw.Campaign() // refused when this replica may not vote; harmless
	}
}

// Step hands a raft message from a peer to this replica.
func (m *Meta) Step(msg *raftpb.Message) error {
	if err := m.usable(); err != nil {
		return err
	}
	if msg.GetTo() != m.self.RaftID {
		return fmt.Errorf("%w: message for raft id %d reached %d", ErrMisdirected, msg.GetTo(), m.self.RaftID)
	}
	if reason := m.checkPeerMessage(msg); reason != "" {
		if reason == reasonCommitsPastLog {
			m.logLostAt, m.logLostTerm = max(m.logLostAt, msg.GetCommit()), max(m.logLostTerm, msg.GetTerm())
		}
		return fmt.Errorf("%w: %s %s from raft id %d", ErrBadPeerMessage, msg.GetType(), reason, msg.GetFrom())
	}
	return m.raw.Step(msg)
}

// LogLost reports whether a peer's heartbeat committed past this
// replica's log, and the highest such commit index: this replica's raft
// id had persisted entries that this replica does not hold. The leader
// that sent it takes the replica for current and never sends it what it
// lacks; a later leader catches it up.
func (m *Meta) LogLost() (uint64, bool) { return m.logLostAt, m.logLostAt > 0 }

// State returns the state machine. The pointer stays valid for the life of
// the Meta; its contents change in Persist.
func (m *Meta) State() *State { return m.state }

// AppliedIndex is the index of the last applied entry (durable with it).
func (m *Meta) AppliedIndex() uint64 { return m.applied.index }

// AppliedTerm is the term of the last applied entry. A proposal of this
// replica proposed in an earlier term whose Outcome has not arrived yet
// never applies (commandVersion2), unless a snapshot installed since it
// was proposed (SnapshotsInstalled) holds it: a snapshot reports no
// outcome of the entries it covers.
func (m *Meta) AppliedTerm() uint64 { return m.applied.term }

// SnapshotsInstalled counts the leader's snapshots this replica installed
// since it started.
func (m *Meta) SnapshotsInstalled() uint64 { return m.snapshotsInstalled }

// IsLeader reports whether this replica leads.
func (m *Meta) IsLeader() bool {
	return m.usable() == nil && m.raw.BasicStatus().RaftState == raft.StateLeader
}

// Leader returns the leader's node id, if one is known.
func (m *Meta) Leader() (string, bool) {
	if m.usable() != nil {
		return "", false
	}
	lead := m.raw.BasicStatus().Lead
	if lead == raft.None {
		return "", false
	}
	peer, found := m.PeerByRaftID(lead)
	return peer.ID, found
}

// Barrier reports whether this replica leads and has applied an entry of
// its own term. Raft appends an empty entry when a leader is elected, so
// once that entry is applied the leader's state machine reflects every
// entry committed before its term: the own-term-entry barrier. It does
// not prove that no newer leader exists; a read index does (RequestRead).
// The planner and placement run only when it holds.
func (m *Meta) Barrier() bool {
	if !m.IsLeader() {
		return false
	}
	return m.applied.term == m.raw.BasicStatus().GetTerm()
}

// Status summarizes the replica.
func (m *Meta) Status() Status {
	status := Status{NodeID: m.config.NodeID, RaftID: m.self.RaftID, Applied: m.applied.index,
		SnapshotIndex: m.snapshotIndex, SnapshotsInstalled: m.snapshotsInstalled,
		SnapshotsTooLarge: m.snapshotsTooLarge, SnapshotTooLargeBytes: m.snapshotTooLargeBytes}
	if m.usable() != nil {
		return status
	}
	basic := m.raw.BasicStatus()
	status.Term, status.Commit = basic.GetTerm(), basic.GetCommit()
	status.Leader, _ = m.Leader()
	status.IsLeader, status.Barrier = m.IsLeader(), m.Barrier()
	return status
}

// PeerByRaftID maps a raft id (Message.To, Message.From) to its peer: from
// the voter configuration, else from the configured and learned peers.
func (m *Meta) PeerByRaftID(raftID uint64) (Peer, bool) {
	if peer, found := m.state.PeerByRaftID(raftID); found {
		return peer, true
	}
	for _, peers := range [][]Peer{m.config.Peers, m.learned} {
		for _, peer := range peers {
			if peer.RaftID == raftID {
				return peer, true
			}
		}
	}
	return Peer{}, false
}

// KnownPeers lists the peers outside the state: Config.Peers, then those
// learned while joining. The slice is the caller's.
func (m *Meta) KnownPeers() []Peer {
	return append(slices.Clone(m.config.Peers), m.learned...)
}

// LearnPeers records the voters a replica was told of (the node passes
// on a JoinAccepted), so it can address a voter it was not configured
// with. The lists add up: a peer already learned takes the newer address
// (raft ids are never reused), so an answer from a replica that is behind
// forgets none learned before. Peers with invalid ids or this node's own
// id are skipped; at most votersLearnedMax are kept.
func (m *Meta) LearnPeers(peers []Peer) {
	index := make(map[uint64]int, len(m.learned))
	for i, peer := range m.learned {
		index[peer.RaftID] = i
	}
	for _, peer := range peers {
		if peer.ID == "" || peer.ID == m.config.NodeID || peer.RaftID == 0 || peer.RaftID > raftIDMax {
			continue
		}
		if i, known := index[peer.RaftID]; known {
			m.learned[i] = peer
			continue
		}
		if len(m.learned) == votersLearnedMax {
			break
		}
		index[peer.RaftID] = len(m.learned)
		m.learned = append(m.learned, peer)
	}
}

// PeerByNodeID maps a node id to its peer: from the voter configuration,
// else from Config.Peers.
func (m *Meta) PeerByNodeID(nodeID string) (Peer, bool) {
	if peer, found := m.state.PeerByNodeID(nodeID); found {
		return peer, true
	}
	for _, peer := range m.config.Peers {
		if peer.ID == nodeID {
			return peer, true
		}
	}
	return Peer{}, false
}

// TransferLeadership asks raft to hand leadership to the node; it takes
// effect only on the leader, when the target is caught up.
func (m *Meta) TransferLeadership(to string) error {
	if err := m.usable(); err != nil {
		return err
	}
	peer, found := m.state.PeerByNodeID(to)
	if !found {
		return rejectf(ErrPeerNotFound, "node %q is not a voter", to)
	}
	m.raw.TransferLeader(peer.RaftID)
	return nil
}

// ReportSnapshot tells raft whether a MsgSnap sent to raftID arrived. A
// driver that learns it from its transport may call it; one that does not
// need not: a snapshot the follower has not acknowledged after
// SnapshotAckTicks counts as lost (Tick).
func (m *Meta) ReportSnapshot(raftID uint64, delivered bool) {
	if m.usable() != nil {
		return
	}
	delete(m.snapshotsSent, raftID)
	status := raft.SnapshotFinish
	if !delivered {
		status = raft.SnapshotFailure
	}
	m.raw.ReportSnapshot(raftID, status)
}

// ReportUnreachable tells raft that a message to raftID could not be sent.
func (m *Meta) ReportUnreachable(raftID uint64) {
	if m.usable() == nil {
		m.raw.ReportUnreachable(raftID)
	}
}

// Close closes the store. The Meta cannot be used afterwards; a Ready
// taken but not persisted is lost, as in a crash.
func (m *Meta) Close() error {
	return m.store.Close()
}

// fail finishes the instance after a failed write.
func (m *Meta) fail(err error) error {
	m.failure = errors.Join(errors.New("meta: instance finished after a failed write; reopen the store"), err)
	return m.failure
}

// CampaignIfSoleVoter starts an election at once when this node is the
// only voter (a single-node cluster), so it leads from its first Ready
// instead of after an election timeout. It reports whether it campaigned.
func (m *Meta) CampaignIfSoleVoter() (bool, error) {
	if err := m.usable(); err != nil {
		return false, err
	}
	// The applied configuration (the state's) is raft's: cheaper to read
	// than raft's full Status, which this runs on every tick.
	voters := m.state.confState.Voters
	if len(voters) != 1 || voters[0] != m.self.RaftID {
		return false, nil
	}
	// Only a follower campaigns: a campaign completes in a later Ready
	// (the self-vote is counted once persisted), and campaigning again
	// meanwhile would restart it in a new term, forever.
	if m.raw.BasicStatus().RaftState != raft.StateFollower {
		return false, nil
	}
	return true, m.raw.Campaign()
}
