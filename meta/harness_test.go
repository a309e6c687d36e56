package meta

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Bounds of the harness loops: a run that needs more is a failure (no
// leader, no quiescence), never a reason to wait longer.
const (
	stabilizeRoundsMax = 10_000
	electionTicksMax   = 500
)

// testCluster runs Metas in one goroutine: each on its own bbolt file,
// messages encoded on send and decoded on delivery, delivered in a seeded
// permutation of a deterministic order, ticks driven by the test. It
// hashes every message sent, so two runs can be compared.
type testCluster struct {
	t      testing.TB
	dir    string
	noSync bool
	// tune adjusts each node's Config before it starts.
	tune  func(*Config)
	rng   *rand.Rand
	nodes map[string]*testNode
	// ids lists the nodes in sorted order; every loop goes through it.
	ids []string
	// inflight messages not yet delivered.
	inflight []inflightMessage
	// cut[from][to] drops messages on that link.
	cut  map[string]map[string]bool
	hash hash.Hash64
	// applied[node][index] is a digest of the entry the node applied at
	// index; the harness fails if a node applies an index twice.
	applied map[string]map[uint64]string
	// outcomes per node, in the order Advance returned them.
	outcomes map[string][]Outcome
	// reads per node: the confirmations of its read requests, in the
	// order its Readys carried them.
	reads map[string][]ReadConfirmed
	// snapshotsDelivered counts MsgSnap messages stepped into a node;
	// lastSnapshotDelivered is the index of the latest one.
	snapshotsDelivered    int
	lastSnapshotDelivered uint64
	// unreportedSnapshots: the harness does not call ReportSnapshot, as a
	// driver whose transport cannot tell (the node's); snapshotsToDrop is
	// how many of the next MsgSnap messages are lost.
	unreportedSnapshots bool
	snapshotsToDrop     int
	// crashAfterPersist makes the node crash right after persisting the
	// next Ready that applies a command, before sending or advancing.
	crashAfterPersist map[string]bool
	// crashAfterInstall makes the node crash right after persisting the
	// next Ready that installs a snapshot, where a replica used to stop
	// on a failed assert (seed 2032).
	crashAfterInstall map[string]bool
}

// testNode is one node of the cluster; meta is nil while it is down.
type testNode struct {
	id     string
	peer   Peer
	path   string
	config Config
	meta   *Meta
	// lastApplied is the highest index this node (any incarnation)
	// applied or installed.
	lastApplied uint64
}

type inflightMessage struct {
	from, to string
	kind     raftpb.MessageType
	toRaftID uint64
	data     []byte
}

// clusterPeers returns n peers n1..nN with raft ids 1..N.
func clusterPeers(n int) []Peer {
	peers := make([]Peer, n)
	for i := range peers {
		id := fmt.Sprintf("n%d", i+1)
		peers[i] = Peer{ID: id, RaftID: uint64(i + 1), ClusterAddr: id + ":7943"}
	}
	return peers
}

// newTestCluster bootstraps n nodes and starts them.
func newTestCluster(t testing.TB, n int, seed uint64, noSync bool, tune func(*Config)) *testCluster {
	c := &testCluster{t: t, dir: t.TempDir(), noSync: noSync, tune: tune, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		nodes: map[string]*testNode{}, cut: map[string]map[string]bool{}, hash: fnv.New64a(),
		applied: map[string]map[uint64]string{}, outcomes: map[string][]Outcome{}, reads: map[string][]ReadConfirmed{}, crashAfterPersist: map[string]bool{},
		crashAfterInstall: map[string]bool{}}
	peers := clusterPeers(n)
	for _, peer := range peers {
		c.addNode(peer, peers, false)
	}
	t.Cleanup(c.closeAll)
	return c
}

// addNode creates and starts a node.
func (c *testCluster) addNode(peer Peer, peers []Peer, join bool) *testNode {
	config := DefaultConfig(peer.ID, peers)
	config.Join = join
	if c.tune != nil {
		c.tune(&config)
	}
	node := &testNode{id: peer.ID, peer: peer, path: filepath.Join(c.dir, peer.ID+".db"), config: config}
	c.nodes[peer.ID] = node
	c.ids = append(c.ids, peer.ID)
	slices.Sort(c.ids)
	c.applied[peer.ID] = map[uint64]string{}
	c.start(peer.ID)
	return node
}

// start opens a node's store and starts its Meta.
func (c *testCluster) start(id string) {
	node := c.nodes[id]
	require.Nil(c.t, node.meta, "node %s is already running", id)
	store, err := OpenStore(node.path, StoreOptions{NoSync: c.noSync})
	require.NoError(c.t, err)
	node.meta, err = New(node.config, store)
	require.NoError(c.t, err)
}

// crash closes a node's Meta wherever it is in its Ready cycle and drops
// the messages addressed to it.
func (c *testCluster) crash(id string) {
	node := c.nodes[id]
	require.NotNil(c.t, node.meta, "node %s is already down", id)
	require.NoError(c.t, node.meta.Close())
	node.meta = nil
}

func (c *testCluster) closeAll() {
	for _, id := range c.ids {
		if c.nodes[id].meta != nil {
			_ = c.nodes[id].meta.Close()
		}
	}
}

// meta returns a running node's Meta.
func (c *testCluster) meta(id string) *Meta {
	node := c.nodes[id]
	require.NotNil(c.t, node.meta, "node %s is down", id)
	return node.meta
}

// creation is the guard on the topic's creation as node id's replica
// shows it (every proposal of a command that embeds ExpectedCreation must
// name one).
func (c *testCluster) creation(id, topic string) ExpectedCreation {
	record, found := c.meta(id).State().Topic(topic)
	require.True(c.t, found, "topic %s on %s", topic, id)
	return Expecting(record.Identity())
}

// running lists the running nodes, sorted.
func (c *testCluster) running() []string {
	var ids []string
	for _, id := range c.ids {
		if c.nodes[id].meta != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// processReady runs every running node's Ready cycles until none has
// work: persist, queue messages, advance.
func (c *testCluster) processReady() {
	for _, id := range c.running() {
		for c.nodes[id].meta != nil && c.nodes[id].meta.HasReady() {
			c.handleReady(c.nodes[id])
		}
	}
}

// handleReady runs one Ready cycle of a node.
func (c *testCluster) handleReady(node *testNode) {
	rd := node.meta.Ready()
	c.recordApplied(node, rd)
	c.reads[node.id] = append(c.reads[node.id], rd.Reads...)
	require.NoError(c.t, node.meta.Persist(rd), "persist on %s", node.id)
	if c.crashAfterPersist[node.id] && appliesCommand(rd) {
		delete(c.crashAfterPersist, node.id)
		c.crash(node.id)
		return
	}
	if c.crashAfterInstall[node.id] && !raft.IsEmptySnap(rd.raft.Snapshot) {
		delete(c.crashAfterInstall, node.id)
		c.crash(node.id)
		return
	}
	for _, msg := range rd.Messages {
		c.send(node.id, msg)
	}
	c.outcomes[node.id] = append(c.outcomes[node.id], node.meta.Advance(rd)...)
}

// appliesCommand reports whether a Ready applies a non-empty command.
func appliesCommand(rd Ready) bool {
	for _, entry := range rd.raft.CommittedEntries {
		if entry.GetType() == raftpb.EntryNormal && len(entry.GetData()) > 0 {
			return true
		}
	}
	return false
}

// recordApplied checks that the node never applies an index twice (in any
// incarnation) and records what it applied.
func (c *testCluster) recordApplied(node *testNode, rd Ready) {
	if snapshot := rd.raft.Snapshot; snapshot != nil && snapshot.GetMetadata().GetIndex() > 0 {
		require.Greater(c.t, snapshot.GetMetadata().GetIndex(), node.lastApplied, "node %s installs an old snapshot", node.id)
		node.lastApplied = snapshot.GetMetadata().GetIndex()
	}
	for _, entry := range rd.raft.CommittedEntries {
		require.Equal(c.t, node.lastApplied+1, entry.GetIndex(), "node %s applies entry %d after %d", node.id, entry.GetIndex(), node.lastApplied)
		node.lastApplied = entry.GetIndex()
		c.applied[node.id][entry.GetIndex()] = fmt.Sprintf("%d/%d/%x", entry.GetTerm(), entry.GetType(), entry.GetData())
	}
}

// send encodes a message, hashes it and queues it.
func (c *testCluster) send(from string, msg *raftpb.Message) {
	data, err := MarshalMessage(msg)
	require.NoError(c.t, err)
	to, found := c.nodes[from].meta.PeerByRaftID(msg.GetTo())
	require.True(c.t, found, "%s sends to unknown raft id %d", from, msg.GetTo())
	c.hash.Write([]byte(from + ">" + to.ID + ":"))
	c.hash.Write(data)
	c.inflight = append(c.inflight, inflightMessage{from: from, to: to.ID, kind: msg.GetType(), toRaftID: msg.GetTo(), data: data})
}

// deliver delivers (or drops) every queued message in a seeded order.
func (c *testCluster) deliver() {
	batch := c.inflight
	c.inflight = nil
	c.rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	for _, msg := range batch {
		c.deliverOne(msg)
	}
}

// deliverOne steps one message into its recipient, or drops it.
func (c *testCluster) deliverOne(msg inflightMessage) {
	recipient := c.nodes[msg.to]
	delivered := recipient != nil && recipient.meta != nil && !c.cut[msg.from][msg.to]
	if msg.kind == raftpb.MsgSnap && c.snapshotsToDrop > 0 {
		c.snapshotsToDrop--
		delivered = false
	}
	if delivered {
		decoded, err := UnmarshalMessage(msg.data)
		require.NoError(c.t, err)
		_ = recipient.meta.Step(decoded) // raft refuses stale responses from removed peers; that is fine
		if msg.kind == raftpb.MsgSnap {
			c.snapshotsDelivered++
			c.lastSnapshotDelivered = decoded.GetSnapshot().GetMetadata().GetIndex()
		}
	}
	if msg.kind == raftpb.MsgSnap {
		if sender := c.nodes[msg.from]; sender.meta != nil && !c.unreportedSnapshots {
			sender.meta.ReportSnapshot(msg.toRaftID, delivered)
		}
	}
}

// stabilize handles Readies and delivers messages until nothing moves.
func (c *testCluster) stabilize() {
	for range stabilizeRoundsMax {
		c.processReady()
		if len(c.inflight) == 0 {
			return
		}
		c.deliver()
	}
	c.t.Fatalf("cluster did not quiesce within %d rounds", stabilizeRoundsMax)
}

// tick ticks every running node n times, stabilizing after each.
func (c *testCluster) tick(n int) {
	for range n {
		for _, id := range c.running() {
			c.nodes[id].meta.Tick()
		}
		c.stabilize()
	}
}

// leader returns the running node that leads in the highest term, if any.
func (c *testCluster) leader() (string, bool) {
	best, bestTerm := "", uint64(0)
	for _, id := range c.running() {
		status := c.nodes[id].meta.Status()
		if status.IsLeader && status.Term > bestTerm {
			best, bestTerm = id, status.Term
		}
	}
	return best, best != ""
}

// waitLeader ticks until a running node among candidates leads and has
// passed its barrier.
func (c *testCluster) waitLeader(candidates ...string) string {
	if len(candidates) == 0 {
		candidates = c.ids
	}
	for range electionTicksMax {
		c.stabilize()
		for _, id := range candidates {
			if node := c.nodes[id]; node.meta != nil && node.meta.Barrier() {
				return id
			}
		}
		c.tick(1)
	}
	c.t.Fatalf("no leader among %v within %d ticks", candidates, electionTicksMax)
	return ""
}

// propose proposes on a node and stabilizes.
func (c *testCluster) propose(id string, cmd Command) ProposalID {
	proposal, err := c.meta(id).Propose(cmd)
	require.NoError(c.t, err, "propose %T on %s", cmd, id)
	c.stabilize()
	return proposal
}

// outcome returns the outcome of a proposal reported to its proposer.
func (c *testCluster) outcome(proposal ProposalID) (Outcome, bool) {
	for _, outcome := range c.outcomes[proposal.Node] {
		if outcome.ID == proposal {
			return outcome, true
		}
	}
	return Outcome{}, false
}

// requireApplied fails unless the proposal's outcome arrived, with want
// (nil for success).
func (c *testCluster) requireApplied(proposal ProposalID, want error) {
	outcome, found := c.outcome(proposal)
	require.True(c.t, found, "no outcome for %v", proposal)
	if want == nil {
		require.NoError(c.t, outcome.Err)
	} else {
		require.ErrorIs(c.t, outcome.Err, want)
	}
}

// isolate cuts every link between the two groups, both ways.
func (c *testCluster) isolate(groupA, groupB []string) {
	for _, a := range groupA {
		for _, b := range groupB {
			c.setCut(a, b, true)
			c.setCut(b, a, true)
		}
	}
}

// heal restores every link.
func (c *testCluster) heal() { c.cut = map[string]map[string]bool{} }

func (c *testCluster) setCut(from, to string, cut bool) {
	if c.cut[from] == nil {
		c.cut[from] = map[string]bool{}
	}
	c.cut[from][to] = cut
}

// requireConverged checks that every running node applied the same
// index and holds the same state, and that no two nodes applied different
// entries at one index.
func (c *testCluster) requireConverged() {
	running := c.running()
	reference := c.nodes[running[0]].meta
	for _, id := range running[1:] {
		m := c.nodes[id].meta
		require.Equal(c.t, reference.AppliedIndex(), m.AppliedIndex(), "applied index of %s vs %s", id, running[0])
		require.Equal(c.t, string(reference.State().encodeImage()), string(m.State().encodeImage()), "state of %s vs %s", id, running[0])
	}
	c.requireSameEntries()
}

// requireSameEntries checks that all nodes that applied an index applied
// the same entry there.
func (c *testCluster) requireSameEntries() {
	digests := map[uint64]string{}
	for _, id := range c.ids {
		for _, index := range slices.Sorted(maps.Keys(c.applied[id])) {
			digest := c.applied[id][index]
			if previous, seen := digests[index]; seen {
				require.Equal(c.t, previous, digest, "node %s applied a different entry at %d", id, index)
			}
			digests[index] = digest
		}
	}
}

// heartbeatAll makes every bootstrap node a member.
func (c *testCluster) heartbeatAll(leader string, nowMs int64) {
	for _, id := range c.ids {
		c.requireApplied(c.propose(leader, MemberHeartbeat{ID: id, HTTPAddr: id + ":7942", ClusterAddr: id + ":7943", NowMs: nowMs}), nil)
	}
}

// messageHash is the hash of every message sent so far.
func (c *testCluster) messageHash() uint64 {
	return binary.BigEndian.Uint64(c.hash.Sum(nil))
}

// storedLogEntries counts the log entries in a node's store.
func (c *testCluster) storedLogEntries(id string) int {
	p, err := c.meta(id).store.load()
	require.NoError(c.t, err)
	return len(p.entries)
}
