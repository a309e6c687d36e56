package host

import (
	"fmt"
	"time"

	"narad/msg"
)

// fromPeer is the transport's deliver function: it hands env to the loop,
// waiting while the peer inbox is full, and drops it once the loop has
// stopped (so the transport's readers can end at shutdown). It runs on
// the transport's reader goroutines.
func (l *loop) fromPeer(env msg.Envelope) {
	size := int64(msg.PayloadBytes(env))
	for !l.reservePeerBytes(size) {
		select {
		case <-l.peerRoom:
		case <-l.done:
			return
		}
	}
	select {
	case l.peerInbox <- env:
	case <-l.done:
	}
}

// reservePeerBytes counts size into the peer inbox's bytes when it fits
// under peerInboxBytesMax, or the inbox holds none (one envelope alone
// always fits); false means wait for room.
func (l *loop) reservePeerBytes(size int64) bool {
	for {
		queued := l.peerInboxBytes.Load()
		if queued > 0 && queued+size > l.peerBytesMax {
			return false
		}
		if l.peerInboxBytes.CompareAndSwap(queued, queued+size) {
			return true
		}
	}
}

// tookFromPeer is the loop taking env from the peer inbox: its bytes
// leave the budget, and a reader waiting for room is woken.
func (l *loop) tookFromPeer(env msg.Envelope) input {
	l.peerInboxBytes.Add(-int64(msg.PayloadBytes(env)))
	select {
	case l.peerRoom <- struct{}{}:
	default:
	}
	return input{fromPeer: true, envelope: env}
}

// step hands a peer's envelope to the node. A refused envelope (unknown
// type, stale or malformed message) is counted and logged at debug level:
// peers are outside this process, and a bad message must not stop it.
func (l *loop) step(env msg.Envelope) {
	if err := l.node.Step(env); err != nil {
		l.metrics.peerStepErrors.Inc()
		l.logger.Debug("peer message refused", "from", env.From, "type", fmt.Sprintf("%T", env.Message), "err", err)
	}
}

// send hands a Ready's envelopes to the transport (which queues them and
// never blocks). Called only after the Ready's Syncs succeeded, except
// for its ProduceForwards, which depend on none of them. An
// envelope to a peer the transport does not know yet (a node that has
// just joined) refreshes the address book first, once per call: the
// transport would drop it, and the first messages to a joiner are the
// leader's (one snapshot, which raft sends again only after a while).
func (l *loop) send(envelopes []msg.Envelope) {
	if len(envelopes) == 0 {
		return
	}
	if l.transport == nil {
		l.metrics.peerUnsent.Add(float64(len(envelopes)))
		l.logger.Warn("a single node produced peer messages; dropped", "count", len(envelopes), "to", envelopes[0].To)
		return
	}
	refreshed := false
	for _, env := range envelopes {
		if _, known := l.peerAddrs[env.To]; !known && !refreshed {
			refreshed = true
			l.nextPeerRefresh = time.Time{}
			l.refreshPeers()
		}
		l.transport.Send(env)
	}
}

// isLeader reports whether this node led the metastore's group at the
// last flush. Safe from any goroutine.
func (l *loop) isLeader() bool { return l.leader.Load() }

// checkUnreachable tells the node about peers whose connection attempts
// failed since the last look (at most every peerCheckInterval): their
// forwards fail at once and produce avoids them, instead of waiting out
// the forward timeout. The node's mark of a peer down (PeerDownMs) is
// shorter than the transport's longest backoff (ReconnectBackoffMax):
// one that lapses while the transport still waits out its pause after
// the failure is renewed (a forward sent then would sit in the queue
// until the next attempt failed or the forward timed out), and one so
// renewed ends with the pause (the transport dials at the next send, as
// it did when the failure's own mark lapsed; a renewed mark would refuse
// a peer that came back for PeerDownMs more).
func (l *loop) checkUnreachable() {
	now := l.clock()
	if l.transport == nil || now.Before(l.nextPeerCheck) {
		return
	}
	l.nextPeerCheck = now.Add(peerCheckInterval)
	attempts := l.transport.ConnectAttempts()
	failures := make(map[string]uint64, len(attempts))
	for id, peer := range attempts { //determinism:ok host is not the core; each peer on its own
		l.markUnreachable(id, peer)
		failures[id] = peer.failures
		l.metrics.peerMarkedDown.WithLabelValues(id).Set(boolFloat(l.node.PeerMarkedDown(id)))
	}
	for id := range l.dialFailures { //determinism:ok host is not the core; each peer on its own
		if _, known := attempts[id]; !known {
			l.metrics.peerMarkedDown.DeleteLabelValues(id) // a peer the cluster removed
			delete(l.pauseMarked, id)
		}
	}
	l.dialFailures = failures
}

// markUnreachable tells the node what one peer's connection attempts
// since the last look say (checkUnreachable): a failure marks it down
// for PeerDownMs; the pause after it keeps it marked, and the end of the
// pause ends a mark the pause renewed.
func (l *loop) markUnreachable(id string, peer connectAttempts) {
	switch {
	case peer.failures > l.dialFailures[id]:
		l.node.PeerUnreachable(id)
		delete(l.pauseMarked, id) // the failure's own mark: PeerDownMs, as without a pause
	case peer.backingOff && !l.node.PeerMarkedDown(id):
		l.node.PeerUnreachable(id)
		l.pauseMarked[id] = true
	case !peer.backingOff && l.pauseMarked[id]:
		l.node.PeerRetry(id)
		delete(l.pauseMarked, id)
	}
}

// refreshPeers hands the node's address book to the transport, at most
// once per peerRefreshInterval: new and moved peers are set, peers the
// node no longer knows are removed.
func (l *loop) refreshPeers() {
	now := l.clock()
	if l.transport == nil || now.Before(l.nextPeerRefresh) {
		return
	}
	l.nextPeerRefresh = now.Add(peerRefreshInterval)
	current := l.node.ClusterAddrs()
	for id, address := range current { //determinism:ok host is not the core; each entry is handled on its own
		if l.peerAddrs[id] == address {
			continue
		}
		if err := l.transport.SetPeer(id, address); err != nil {
			l.logger.Warn("cannot reach a cluster member at its address", "peer", id, "address", address, "err", err)
			continue
		}
		l.peerAddrs[id] = address
	}
	for id := range l.peerAddrs { //determinism:ok host is not the core; each entry is handled on its own
		if _, known := current[id]; !known {
			l.transport.RemovePeer(id)
			delete(l.peerAddrs, id)
		}
	}
}
