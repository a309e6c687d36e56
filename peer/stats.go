package peer

// Stats is a snapshot of the transport's counters. Counters only grow
// over the life of a Transport (a peer's vanish with RemovePeer).
type Stats struct {
	// Peers holds one entry per configured peer, by id.
	Peers map[string]PeerStats
	// Unroutable counts envelopes sent to an id that is not a peer (or to
	// this node itself), or after Close.
	Unroutable uint64
	// InboundRefused counts accepted connections closed at once because
	// inboundConnectionsMax were open.
	InboundRefused uint64
	// InboundAuthFailures counts accepted connections whose dialer failed
	// to prove the cluster secret. The dialer's id is unknown then, so they
	// are not counted per peer.
	InboundAuthFailures uint64
	// InboundHandshakeErrors counts accepted connections whose handshake
	// failed otherwise: TLS, a timeout, bytes that are no handshake, or a
	// dialer that meant another node.
	InboundHandshakeErrors uint64
	// HandshakesShed counts handshakes this node closed to admit a newer
	// connection (handshakesInFlightMax were in flight).
	HandshakesShed uint64
	// InboundBroken counts authenticated connections closed because of a
	// frame over the bound, an undecodable envelope, or an envelope whose
	// From or To does not match the connection.
	InboundBroken uint64
	// Delivered counts envelopes handed to the deliver function.
	Delivered uint64
	// InboundConnections is the number of authenticated inbound
	// connections open now (at most inboundConnectionsMax), and
	// HandshakesInFlight the accepted connections still in their
	// handshake (at most handshakesInFlightMax): what the peer port
	// holds, which anyone who reaches it can make it hold up to the
	// second bound.
	InboundConnections, HandshakesInFlight int
}

// PeerStats is the outbound side of one peer.
type PeerStats struct {
	// Address is where the peer is dialed.
	Address string
	// Connected reports an authenticated connection up right now.
	Connected bool
	// BackingOff reports that the last connection attempt failed, or the
	// last connection was short (ShortConnections), and the writer waits
	// out its reconnect backoff before the next attempt: what is sent to
	// the peer meanwhile waits (up to ReconnectBackoffMax) and is dropped
	// if that attempt fails too.
	BackingOff bool
	// Queued is the number of envelopes waiting in the send queue, and
	// QueuedBytes their payload bytes (msg.PayloadBytes), of both classes.
	Queued      int
	QueuedBytes int64
	// Sent counts envelopes written to a connection. Written is not
	// delivered: a connection can break with frames in flight.
	Sent uint64
	// Dropped counts envelopes discarded: their class's share of the
	// queue full, peer unreachable (what was queued when an attempt
	// failed), write failed, or of a type the codec does not encode. It
	// is DroppedData plus DroppedControl: client traffic, and the
	// cluster's own (Raft messages, heartbeats, joins; classOf).
	Dropped                     uint64
	DroppedData, DroppedControl uint64
	// Connections counts authenticated connections established;
	// Reconnects those after the first.
	Connections, Reconnects uint64
	// DialFailures counts failed TCP connects.
	DialFailures uint64
	// AuthFailures counts handshakes, TLS or secret, that failed after the
	// TCP connect: wrong secret, wrong node at the address, or a
	// certificate refused. A listener that closed before its verdict
	// (shedding load, stopping) counts as a DialFailure instead.
	AuthFailures uint64
	// ShortConnections counts authenticated connections that ended within
	// connectionHealthyMin (the peer closed at once, as it does on a frame
	// it refuses); each is followed by a backoff pause before the redial.
	ShortConnections uint64
}

// Stats returns a snapshot of the counters.
func (t *Transport) Stats() Stats {
	stats := Stats{
		Unroutable:             t.unroutable.Load(),
		InboundRefused:         t.inboundRefused.Load(),
		InboundAuthFailures:    t.inboundAuthFailures.Load(),
		InboundHandshakeErrors: t.inboundHandshakeErrors.Load(),
		HandshakesShed:         t.handshakesShed.Load(),
		InboundBroken:          t.inboundBroken.Load(),
		Delivered:              t.delivered.Load(),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stats.InboundConnections = t.authenticatedLocked()
	stats.HandshakesInFlight = len(t.mu.handshaking)
	stats.Peers = make(map[string]PeerStats, len(t.mu.peers))
	for id, p := range t.mu.peers {
		stats.Peers[id] = p.statsLocked()
	}
	return stats
}

// authenticatedLocked counts the authenticated inbound connections (a
// shed handshake is in inbound until its reader ends, without an id).
// The caller holds Transport.mu.
func (t *Transport) authenticatedLocked() int {
	count := 0
	for _, id := range t.mu.inbound {
		if id != "" {
			count++
		}
	}
	return count
}

// statsLocked snapshots p; the caller holds Transport.mu.
func (p *outbound) statsLocked() PeerStats {
	connections := p.connections.Load()
	droppedData, droppedControl := p.dropped[classData].Load(), p.dropped[classControl].Load()
	return PeerStats{
		Address:          p.locked.address,
		Connected:        p.connected.Load(),
		BackingOff:       p.backingOff.Load(),
		Queued:           len(p.queue),
		QueuedBytes:      p.classes[classData].bytes.Load() + p.classes[classControl].bytes.Load(),
		Sent:             p.sent.Load(),
		Dropped:          droppedData + droppedControl,
		DroppedData:      droppedData,
		DroppedControl:   droppedControl,
		Connections:      connections,
		Reconnects:       max(connections, 1) - 1,
		DialFailures:     p.dialFailures.Load(),
		AuthFailures:     p.authFailures.Load(),
		ShortConnections: p.shortConnections.Load(),
	}
}
