package host

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"narad/config"
	"narad/meta"
	"narad/msg"
	"narad/peer"
)

// Bounds of the cluster edge of the loop.
const (
	// peerInboxCapacity bounds envelopes from peers queued for the loop. A
	// full queue blocks the reader goroutine of that peer's connection
	// (backpressure on one sender), never grows.
	peerInboxCapacity = 4096
	// peerInboxBytesMax bounds the payload bytes (msg.PayloadBytes) of the
	// envelopes queued from peers: an envelope that would pass it waits,
	// blocking its connection's reader, until the loop took enough (one
	// alone always fits). Forwarded batches and move chunks are up to
	// wire.FrameBytesMax each, so the count alone let the queue hold
	// hundreds of gigabytes.
	peerInboxBytesMax = 256 << 20
	// peerRefreshInterval is how often the loop hands the node's address
	// book (node.ClusterAddrs) to the transport, so that nodes that joined
	// become reachable and removed ones are forgotten.
	peerRefreshInterval = time.Second
	// peerCheckInterval is how often the loop reads the transport's dial
	// failures to tell the node which peers are unreachable.
	peerCheckInterval = 50 * time.Millisecond
)

// ClusterOptions configures the node-to-node transport. The zero value
// (Enabled false) is a single node: no transport, no listener.
type ClusterOptions struct {
	// Enabled runs the transport; set when the configuration lists peers.
	Enabled bool
	// ListenAddr is where the transport listens (cluster.addr); it may be
	// a wildcard host.
	ListenAddr string
	// Peers maps every other configured node's id to its cluster address.
	// Never holds this node's id. The loop adds the nodes it learns of.
	Peers map[string]string
	// Secret authenticates peers. Empty runs the transport without
	// authentication (allowed only with security disabled; config
	// validation enforces it).
	Secret string
	// TLS, when set, is the mutual TLS configuration of every node-to-node
	// connection.
	TLS *tls.Config
}

// transport is what the loop needs of the node-to-node transport
// (*peer.Transport in production, a fake in tests).
type transport interface {
	Send(env msg.Envelope)
	SetPeer(id, address string) error
	RemovePeer(id string)
	// ConnectAttempts reports, per peer, the failed connection attempts
	// so far and whether one failed last (the transport waits out a
	// backoff before the next).
	ConnectAttempts() map[string]connectAttempts
}

// connectAttempts is what the loop reads of one peer's connection
// attempts.
type connectAttempts struct {
	// failures counts the failed attempts so far: failed connects and
	// handshakes, and connections the peer closed at once.
	failures uint64
	// backingOff is set while the transport waits out its reconnect
	// backoff after a failed attempt: what is sent to the peer meanwhile
	// waits for the next attempt.
	backingOff bool
}

// peerTransport adapts *peer.Transport to transport.
type peerTransport struct{ *peer.Transport }

func (t peerTransport) ConnectAttempts() map[string]connectAttempts {
	attempts := map[string]connectAttempts{}
	for id, stats := range t.Stats().Peers { //determinism:ok host is not the core; a map copy
		attempts[id] = connectAttemptsOf(stats)
	}
	return attempts
}

// connectAttemptsOf reads one peer's attempts from its transport stats.
// A connection the peer closed within a second counts as a failed
// attempt, as the transport takes it (it backs off before the next): a
// peer that closes at the first frame (another wire version) lost what
// was written, and was never reported unreachable, so every forward to
// it waited out its timeout.
func connectAttemptsOf(stats peer.PeerStats) connectAttempts {
	return connectAttempts{failures: stats.DialFailures + stats.AuthFailures + stats.ShortConnections, backingOff: stats.BackingOff}
}

// clusterSetup is the cluster part of a server configuration, mapped.
// Built once by clusterFrom, then copied into Options.
type clusterSetup struct {
	// meta is the metastore configuration: every peer a voter.
	meta meta.Config
	// clusterAddr is this node's entry in cluster.peers: the address the
	// other nodes reach it at (never a wildcard listen address).
	clusterAddr string
	// advertiseAddr is the HTTP address others reach this node at.
	advertiseAddr string
	// options configure the transport.
	options ClusterOptions
}

// clusterFrom maps cluster.peers (already validated) onto the metastore
// configuration and the transport options, with tlsConfig, the mutual TLS
// that loadClusterTLS loaded (nil: none). With no peers it returns a zero
// setup: a single node.
func clusterFrom(cfg config.Config, nodeID string, tlsConfig *tls.Config) (clusterSetup, error) {
	peers, err := cfg.Cluster.PeerList()
	if err != nil || len(peers) == 0 {
		return clusterSetup{}, err
	}
	self, found := findPeer(peers, nodeID)
	if !found {
		return clusterSetup{}, fmt.Errorf("cluster.peers has no entry for this node %q", nodeID)
	}
	return clusterSetup{
		meta:          metaConfig(nodeID, peers, cfg.Cluster.Joins(nodeID), cfg.Cluster.MetaSnapshotEntries),
		clusterAddr:   self.Addr,
		advertiseAddr: config.AdvertiseAddr(cfg.HTTP.Addr, self.Addr),
		options: ClusterOptions{Enabled: true, ListenAddr: cfg.Cluster.Addr, Peers: otherPeers(peers, nodeID),
			Secret: cfg.Security.ClusterSecret, TLS: tlsConfig},
	}, nil
}

func findPeer(peers []config.Peer, id string) (config.Peer, bool) {
	for _, p := range peers {
		if p.ID == id {
			return p, true
		}
	}
	return config.Peer{}, false
}

// metaConfig is the metastore configuration of node nodeID in a cluster
// of peers: every peer a voter with the raft id derived from its node id.
// A node that joins (config.Cluster.Joins) waits to be added to a running
// cluster instead of bootstrapping it. A snapshot is taken every
// snapshotEntries applied entries, and the log keeps the metastore's
// default tail before it, or half the interval if that is less.
func metaConfig(nodeID string, peers []config.Peer, join bool, snapshotEntries int) meta.Config {
	voters := make([]meta.Peer, 0, len(peers))
	for _, p := range peers {
		voters = append(voters, meta.Peer{ID: p.ID, RaftID: meta.RaftIDOf(p.ID), ClusterAddr: p.Addr})
	}
	cfg := meta.DefaultConfig(nodeID, voters)
	cfg.Join = join
	cfg.SnapshotEntries = uint64(snapshotEntries)
	cfg.SnapshotTailEntries = min(cfg.SnapshotTailEntries, cfg.SnapshotEntries/2)
	return cfg
}

func otherPeers(peers []config.Peer, selfID string) map[string]string {
	others := make(map[string]string, len(peers))
	for _, p := range peers {
		if p.ID != selfID {
			others[p.ID] = p.Addr
		}
	}
	return others
}

// startTransport creates and starts the transport of a cluster node;
// envelopes it receives go to deliver. It logs the security warnings of
// docs/operations.md#security-setup.
func startTransport(nodeID string, opts ClusterOptions, deliver func(msg.Envelope), logger *slog.Logger) (*peer.Transport, error) {
	cfg := peer.DefaultConfig(nodeID, opts.ListenAddr)
	cfg.Peers, cfg.TLS = opts.Peers, opts.TLS
	cfg.BackoffSeed = uint64(time.Now().UnixNano())
	if opts.Secret == "" {
		cfg.InsecureNoAuth = true
		logger.Warn("node RPC is unauthenticated: security is disabled and NARAD_CLUSTER_SECRET is not set")
	} else {
		cfg.Secret = []byte(opts.Secret)
	}
	if opts.TLS == nil {
		logger.Warn("raft metadata transport is plaintext (set NARAD_CLUSTER_TLS_CERT_FILE, _KEY_FILE and _CA_FILE for mutual TLS)")
	}
	t, err := peer.New(cfg, deliver, logger)
	if err != nil {
		return nil, fmt.Errorf("cluster transport: %w", err)
	}
	if err := t.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("cluster transport: %w", err), t.Close())
	}
	return t, nil
}
