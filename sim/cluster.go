package sim

import (
	"fmt"

	"narad/meta"
	"narad/node"
)

// Timings of a multi-node world, in simulated milliseconds: small enough
// that elections, deaths and recoveries happen many times within a run of
// a few tens of simulated seconds.
const (
	clusterMetaTickIntervalMs = 20
	clusterHeartbeatMs        = 500
	clusterMemberDeadAfterMs  = 3_000
	clusterForwardTimeoutMs   = 1_000
	clusterPeerDownMs         = 2_000
	clusterProposalTimeoutMs  = 3_000
	// clusterSnapshotEntries is small so that a follower cut off for a few
	// seconds is brought back by a snapshot, not by appends alone (the
	// leader proposes one round of heartbeats per interval for the whole
	// cluster, so a calm cluster applies about three entries a second).
	clusterSnapshotEntries = 50
	// membersWaitMsMax bounds how long setup waits for every node to be an
	// alive member before it creates the topic anyway.
	membersWaitMsMax = 10_000
)

// clustered reports whether the world has more than one node.
func (w *World) clustered() bool { return len(w.nodes) > 1 }

// bootstrapPeers is the bootstrap voter list of a world: every node it
// began with (not those a scale-up added later), with the raft id derived
// from its node id and a cluster address that names it.
func (w *World) bootstrapPeers() []meta.Peer {
	peers := make([]meta.Peer, 0, w.opts.Nodes)
	for _, n := range w.nodes[:w.opts.Nodes] {
		peers = append(peers, peerOf(n))
	}
	return peers
}

func peerOf(n *simNode) meta.Peer {
	return meta.Peer{ID: n.id, RaftID: meta.RaftIDOf(n.id), ClusterAddr: clusterAddr(n.id)}
}

func clusterAddr(id string) string { return fmt.Sprintf("%s.cluster.sim:7943", id) }

// clusterConfig turns a node's configuration into that of a cluster
// member with the world's timings. A node added by a scale-up joins: its
// peers are the bootstrap nodes and itself, and it waits to be added.
func (w *World) clusterConfig(cfg node.Config, n *simNode) node.Config {
	id := n.id
	cfg.ClusterAddr = clusterAddr(id)
	cfg.DataID = "data-of-" + id // a node's disk is never replaced under its id here
	cfg.AdvertiseAddr = fmt.Sprintf("%s.http.sim:7942", id)
	cfg.Meta = meta.DefaultConfig(id, w.bootstrapPeers())
	if n.joined {
		cfg.Meta = meta.DefaultConfig(id, append(w.bootstrapPeers(), peerOf(n)))
		cfg.Meta.Join = true
	}
	cfg.Meta.SnapshotEntries = clusterSnapshotEntries
	cfg.MetaTickIntervalMs = clusterMetaTickIntervalMs
	cfg.MemberHeartbeatIntervalMs = clusterHeartbeatMs
	cfg.MemberDeadAfterMs = clusterMemberDeadAfterMs
	cfg.ForwardTimeoutMs = clusterForwardTimeoutMs
	cfg.PeerDownMs = clusterPeerDownMs
	cfg.ProposalTimeoutMs = clusterProposalTimeoutMs
	cfg.Moves = w.moveConfig()
	cfg.Log.ChunkBytesMax = moveChunkBytesMax
	return cfg
}

// minorityMax is how many nodes may be down (or at risk of going down from
// an armed disk fault) at once: fewer than half of the nodes not retired,
// so that a quorum remains and the cluster can make progress. A single
// node has no such bound.
func (w *World) minorityMax() int {
	if !w.clustered() {
		return len(w.nodes)
	}
	return (len(w.activeNodes()) - 1) / 2
}

// downOrAtRisk counts the nodes not retired that are down, restarting, or
// carry an armed disk fault that may crash them (riskArmed).
func (w *World) downOrAtRisk() int {
	count := 0
	for _, n := range w.activeNodes() {
		if !n.up() || n.atRisk() {
			count++
		}
	}
	return count
}

// activeNodes lists the nodes that are not retired (a decommissioned node
// removed from the voters and shut down for good), in node order.
func (w *World) activeNodes() []*simNode {
	if w.retiredCount == 0 {
		return w.nodes
	}
	active := make([]*simNode, 0, len(w.nodes))
	for _, n := range w.nodes {
		if !n.retired {
			active = append(active, n)
		}
	}
	return active
}

// mayTakeDown reports whether one more node may go down without leaving
// less than a quorum up.
func (w *World) mayTakeDown(n *simNode) bool {
	if !n.up() || n.atRisk() {
		return true // already counted
	}
	return w.downOrAtRisk()+1 <= w.minorityMax()
}

// nodeByID finds a node of the world; nil when none has that id.
func (w *World) nodeByID(id string) *simNode {
	for _, n := range w.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}
