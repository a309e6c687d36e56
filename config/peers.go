package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// ErrPeer marks a cluster peer entry that is not "id@host:port".
var ErrPeer = errors.New("bad cluster peer")

// Peer is one voter of the cluster.
type Peer struct {
	// ID is the node id; it matches nodeIDPattern.
	ID string
	// Addr is the peer's node-to-node host:port.
	Addr string
}

// ParsePeer parses "id@host:port".
func ParsePeer(entry string) (Peer, error) {
	id, addr, found := strings.Cut(entry, "@")
	if !found {
		return Peer{}, fmt.Errorf("%w %q: want id@host:port", ErrPeer, entry)
	}
	if !nodeIDPattern.MatchString(id) {
		return Peer{}, fmt.Errorf("%w %q: id must match %s", ErrPeer, entry, nodeIDPattern)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return Peer{}, fmt.Errorf("%w %q: want id@host:port", ErrPeer, entry)
	}
	if err := checkListenAddr(addr); err != nil {
		return Peer{}, fmt.Errorf("%w %q: %w", ErrPeer, entry, err)
	}
	return Peer{ID: id, Addr: addr}, nil
}

// PeerList parses Peers in order; the first bad entry is the error.
func (c Cluster) PeerList() ([]Peer, error) {
	peers := make([]Peer, 0, len(c.Peers))
	for _, entry := range c.Peers {
		peer, err := ParsePeer(entry)
		if err != nil {
			return nil, err
		}
		peers = append(peers, peer)
	}
	return peers, nil
}

func (c Cluster) validate(found *problems) {
	if c.NodeID != "" && !nodeIDPattern.MatchString(c.NodeID) {
		found.add("cluster.node_id", "must match %s (got %q)", nodeIDPattern, c.NodeID)
	}
	c.validateTLS(found)
	peers := c.validatePeerEntries(found)
	c.validateInitialMembers(found, peers)
	if len(c.Peers) == 0 {
		return
	}
	if c.NodeID == "" {
		found.add("cluster.node_id", "is required when cluster.peers is set")
	}
	if c.Joins(c.NodeID) {
		if len(c.Peers) < joinPeersMin || len(c.Peers) > clusterPeersMax {
			found.add("cluster.peers", "must list this node and between %d and %d members it may ask to join (got %d entries)",
				joinPeersMin-1, clusterPeersMax-1, len(c.Peers))
		}
	} else if len(c.Peers) < clusterVotersMin || len(c.Peers) > clusterPeersMax {
		found.add("cluster.peers", "must list between %d and %d voters including this node (got %d)",
			clusterVotersMin, clusterPeersMax, len(c.Peers))
	}
	if c.NodeID != "" {
		c.validateSelf(found, peers)
	}
}

// validatePeerEntries reports malformed and duplicate entries and returns
// the well-formed ones.
func (c Cluster) validatePeerEntries(found *problems) []Peer {
	var peers []Peer
	seenIDs := map[string]bool{}
	seenAddrs := map[string]bool{}
	for _, entry := range c.Peers {
		peer, err := ParsePeer(entry)
		if err != nil {
			found.add("cluster.peers", "%v", err)
			continue
		}
		if seenIDs[peer.ID] {
			found.add("cluster.peers", "duplicate id %q", peer.ID)
		}
		if seenAddrs[peer.Addr] {
			found.add("cluster.peers", "duplicate address %q", peer.Addr)
		}
		seenIDs[peer.ID], seenAddrs[peer.Addr] = true, true
		peers = append(peers, peer)
	}
	return peers
}

// AdvertiseAddr is the HTTP address a cluster member advertises to the
// other nodes and to clients (its heartbeats and join requests carry it):
// httpAddr, with a wildcard host replaced by the host of selfClusterAddr,
// the member's own cluster.peers entry.
func AdvertiseAddr(httpAddr, selfClusterAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil || !isWildcardHost(host) {
		return httpAddr
	}
	clusterHost, _, err := net.SplitHostPort(selfClusterAddr)
	if err != nil {
		return httpAddr
	}
	return net.JoinHostPort(clusterHost, port)
}

// validateAdvertised checks the address this member advertises
// (AdvertiseAddr): derived from two addresses, each within
// addressBytesMax, it can be longer than the node-to-node messages carry,
// and ended the process at its first heartbeat.
func (c Config) validateAdvertised(found *problems) {
	for _, entry := range c.Cluster.Peers {
		peer, err := ParsePeer(entry)
		if err != nil || peer.ID != c.Cluster.NodeID {
			continue // a bad entry is reported by Cluster.validate
		}
		if advertised := AdvertiseAddr(c.HTTP.Addr, peer.Addr); len(advertised) > addressBytesMax {
			found.add("http.addr", "the address this node advertises (%q with the host of its cluster.peers entry) must be at most %d bytes (got %d)",
				c.HTTP.Addr, addressBytesMax, len(advertised))
		}
		return
	}
}

// validateSelf checks that this node is a peer whose address matches
// cluster.addr (same port; same host unless cluster.addr listens on all
// interfaces).
func (c Cluster) validateSelf(found *problems, peers []Peer) {
	for _, peer := range peers {
		if peer.ID != c.NodeID {
			continue
		}
		if !selfAddressMatches(c.Addr, peer.Addr) {
			found.add("cluster.peers", "entry %s@%s does not match cluster.addr %q", peer.ID, peer.Addr, c.Addr)
		}
		return
	}
	found.add("cluster.peers", "must include this node as %s@<cluster address>", c.NodeID)
}

func selfAddressMatches(listenAddr, peerAddr string) bool {
	listenHost, listenPort, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return false
	}
	peerHost, peerPort, _ := net.SplitHostPort(peerAddr)
	return listenPort == peerPort && (isWildcardHost(listenHost) || listenHost == peerHost)
}

func (c Cluster) validateInitialMembers(found *problems, peers []Peer) {
	seen := map[string]bool{}
	for _, member := range c.InitialMembers {
		if !nodeIDPattern.MatchString(member) {
			found.add("cluster.initial_members", "id %q must match %s", member, nodeIDPattern)
		}
		if seen[member] {
			found.add("cluster.initial_members", "duplicate id %q", member)
		}
		seen[member] = true
		if len(c.Peers) > 0 && !containsPeer(peers, member) {
			found.add("cluster.initial_members", "id %q is not in cluster.peers", member)
		}
	}
}

// Joins reports whether the node nodeID joins a running cluster instead
// of bootstrapping one: cluster.initial_members is set and leaves it out.
func (c Cluster) Joins(nodeID string) bool {
	return len(c.InitialMembers) > 0 && !slices.Contains(c.InitialMembers, nodeID)
}

func containsPeer(peers []Peer, id string) bool {
	for _, peer := range peers {
		if peer.ID == id {
			return true
		}
	}
	return false
}

// validateTLS checks that the three files of mutual TLS are set
// together. The configuration does not record whether a value came from
// the file or the environment, so the message names the empty ones both
// ways.
func (c Cluster) validateTLS(found *problems) {
	cert, key, ca := c.TLSFiles()
	files := []TLSFile{cert, key, ca}
	var empty []string
	for _, file := range files {
		if file.Path == "" {
			empty = append(empty, file.Named())
		}
	}
	if len(empty) != 0 && len(empty) != len(files) {
		verb := "is"
		if len(empty) > 1 {
			verb = "are"
		}
		found.add(cert.Key, "%s, %s and %s are set together or not at all (%d of 3 set): %s %s empty",
			cert.Key, key.Key, ca.Key, len(files)-len(empty), strings.Join(empty, " and "), verb)
	}
}
