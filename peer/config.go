package peer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// Config configures a Transport. Start from DefaultConfig and set the
// fields that have no sensible default (Peers, Secret, TLS).
type Config struct {
	// NodeID is this node's id: sent in every handshake, and the From every
	// delivered envelope's sender must not claim. 1 to wire.NodeIDBytesMax (64)
	// bytes (Validate).
	NodeID string
	// ListenAddr is where the cluster listener binds, host:port. Port 0
	// picks a free port; Transport.Addr reports the real address.
	ListenAddr string
	// Peers maps node id to cluster address (host:port). An entry for
	// NodeID itself is allowed and ignored: configurations list every
	// member. SetPeer and RemovePeer change the set at run time.
	Peers map[string]string
	// Secret is the cluster secret both sides prove they hold in the
	// handshake. Required unless InsecureNoAuth.
	Secret []byte
	// InsecureNoAuth runs the handshake with an empty key: ids are still
	// exchanged, but any process can join. For development clusters only;
	// it cannot be combined with a Secret.
	InsecureNoAuth bool
	// TLS, when set, wraps every connection in TLS (tls.Server on accepted
	// connections, tls.Client on dialed ones); set ClientAuth to
	// tls.RequireAndVerifyClientCert for mutual TLS. An empty ServerName is
	// filled per dial with the host of the peer's address. The secret
	// handshake still runs inside TLS.
	TLS *tls.Config
	// DialTimeout bounds one TCP connect.
	DialTimeout time.Duration
	// HandshakeTimeout bounds the whole handshake of one connection, TLS
	// and secret exchange, on both sides.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds one write of a batch of frames; a peer that reads
	// slower than that loses its connection (and the batch).
	WriteTimeout time.Duration
	// ReconnectBackoffMin and ReconnectBackoffMax bound the pause between
	// failed connection attempts to one peer. It doubles per failure from
	// the minimum up to the maximum, with jitter: each pause is drawn from
	// [d/2, d] of the current step d.
	ReconnectBackoffMin, ReconnectBackoffMax time.Duration
	// BackoffSeed seeds the jitter of the reconnect backoff. Each peer's
	// generator mixes it with both node ids, so nodes that share a seed
	// still spread their reconnects to a restarted peer.
	BackoffSeed uint64
	// SendQueueMax bounds the data messages queued for one peer: all but
	// the cluster's control traffic (Raft messages, heartbeats, joins),
	// which has its own bounds (controlQueueMax, controlQueueBytesMax) so
	// that a flood of client data cannot crowd it out. When the data share
	// is full Send drops the message and counts it: forwarded requests
	// time out and are retried by their sender.
	SendQueueMax int
	// SendQueueBytesMax bounds the payload bytes of the data messages
	// queued for one peer (msg.PayloadBytes: record keys and payloads,
	// move chunks, the lists answers carry), so that a slow peer cannot
	// make forwards of large batches pile up to SendQueueMax times their
	// size. Past it Send drops the message and counts it, as on a full
	// queue; a single message larger than the bound is still queued when
	// no other data bytes are, and a message without payload is bounded
	// by SendQueueMax alone.
	SendQueueBytesMax int64
}

// DefaultConfig returns a configuration with the default timeouts and
// bounds, for the given node id and listen address.
func DefaultConfig(nodeID, listenAddr string) Config {
	return Config{
		NodeID:              nodeID,
		ListenAddr:          listenAddr,
		Peers:               map[string]string{},
		DialTimeout:         5 * time.Second,
		HandshakeTimeout:    5 * time.Second,
		WriteTimeout:        10 * time.Second,
		ReconnectBackoffMin: 50 * time.Millisecond,
		ReconnectBackoffMax: 5 * time.Second,
		SendQueueMax:        4096,
		SendQueueBytesMax:   64 << 20,
	}
}

// Validate reports every problem of the configuration at once; each
// wraps ErrInvalidConfig.
func (c Config) Validate() error {
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
		}
	}
	check(validNodeID(c.NodeID), "node id must be 1 to %d bytes, got %d", nodeIDBytesMax, len(c.NodeID))
	check(validAddress(c.ListenAddr), "listen address %q is not host:port", c.ListenAddr)
	problems = append(problems, c.peerProblems()...)
	check(c.InsecureNoAuth || len(c.Secret) > 0, "the cluster secret is required unless InsecureNoAuth is set")
	check(!c.InsecureNoAuth || len(c.Secret) == 0, "InsecureNoAuth and a cluster secret exclude each other")
	for _, timeout := range c.timeouts() {
		check(timeout.value > 0 && timeout.value <= timeoutMax,
			"%s %v outside (0, %v]", timeout.name, timeout.value, timeoutMax)
	}
	check(c.ReconnectBackoffMin <= c.ReconnectBackoffMax,
		"reconnect backoff min %v above max %v", c.ReconnectBackoffMin, c.ReconnectBackoffMax)
	check(c.SendQueueMax > 0 && c.SendQueueMax <= sendQueueMaxLimit,
		"send queue max %d outside [1, %d]", c.SendQueueMax, sendQueueMaxLimit)
	check(c.SendQueueBytesMax > 0 && c.SendQueueBytesMax <= sendQueueBytesMaxLimit,
		"send queue bytes max %d outside [1, %d]", c.SendQueueBytesMax, sendQueueBytesMaxLimit)
	return errors.Join(problems...)
}

// namedTimeout pairs a duration field with its name, for Validate.
type namedTimeout struct {
	name  string
	value time.Duration
}

func (c Config) timeouts() []namedTimeout {
	return []namedTimeout{
		{"dial timeout", c.DialTimeout},
		{"handshake timeout", c.HandshakeTimeout},
		{"write timeout", c.WriteTimeout},
		{"reconnect backoff min", c.ReconnectBackoffMin},
		{"reconnect backoff max", c.ReconnectBackoffMax},
	}
}

// peerProblems checks every peer entry, in id order so the report is
// stable.
func (c Config) peerProblems() []error {
	var problems []error
	ids := make([]string, 0, len(c.Peers))
	for id := range c.Peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := checkPeer(id, c.Peers[id]); err != nil {
			problems = append(problems, err)
		}
	}
	return problems
}

// checkPeer validates one peer entry; SetPeer uses it too.
func checkPeer(id, address string) error {
	if !validNodeID(id) {
		return fmt.Errorf("%w: peer id %q must be 1 to %d bytes", ErrInvalidConfig, id, nodeIDBytesMax)
	}
	if !validAddress(address) {
		return fmt.Errorf("%w: address %q of peer %q is not host:port", ErrInvalidConfig, address, id)
	}
	return nil
}

func validNodeID(id string) bool {
	return len(id) > 0 && len(id) <= nodeIDBytesMax
}

func validAddress(address string) bool {
	_, port, err := net.SplitHostPort(address)
	return err == nil && port != ""
}
