package node

import (
	"fmt"

	"narad/chaos"
	"narad/invariant"
	"narad/msg"
	"narad/node/route"
)

// Request ids the node makes for itself live above the range a driver
// may assign, so the two never collide.
const (
	// RequestIDDriverMax is the largest id a driver may give Handle.
	RequestIDDriverMax msg.RequestID = 1<<62 - 1
	// forwardedRequestBit marks a request another node forwarded here:
	// its reply leaves as a ForwardReply.
	forwardedRequestBit msg.RequestID = 1 << 63
	// internalRequestBit marks a part of a client request that this node
	// split and serves itself: its reply goes to a continuation at Advance,
	// after the Ready's syncs made it true.
	internalRequestBit msg.RequestID = 1 << 62
)

// incoming is a request a peer forwarded here: where its reply goes.
type incoming struct {
	from string
	id   uint64
	// freeze is set when the request is a MoveFreeze.
	freeze bool
}

// routing is the node's state for requests that cross nodes. Only the
// node's own methods change it.
type routing struct {
	// forwards are the forwards awaiting a reply, and the peers marked
	// down because they let one time out. Their ids start at the
	// incarnation's nonce base, so a late ForwardReply to a forward of an
	// earlier incarnation never matches a forward of this one (ids used
	// to restart at 1: a consume's reply once answered a produce part).
	// A forward's continuation gets the reply, or a 503 when the deadline
	// passes first.
	forwards *route.Forwards[func(msg.Reply)]
	// served numbers the requests served here on behalf of another:
	// forwarded ones, kept with their origin (request id
	// forwardedRequestBit | number), and this node's own parts, kept with
	// their continuation (internalRequestBit | number).
	served *route.Served[incoming, func(msg.Reply)]
	// produceForwards holds, per owner and topic, the forward of produce
	// parts gathered in the Ready being built (route_produce.go); emptied
	// when a Ready is handed out.
	produceForwards map[produceForwardKey]*route.Batch[func(msg.Reply)]
	// passedConsumes holds the client consumes forwarded whole to their
	// partition's owner, by request id, until the forward's continuation
	// runs (a reply or its timeout, so at most the forwards in flight).
	passedConsumes map[msg.RequestID]*passedConsume
	// parkable holds the consumes peers forwarded here that may park (a
	// wait was asked), by their origin, with the id they are served under
	// here, until their reply leaves (routeReplies): so at most the
	// forwarded requests in service. A ForwardCancel finds its poll here.
	parkable map[forwardOrigin]msg.RequestID
}

// passedConsume is a client consume forwarded whole to its partition's
// owner.
type passedConsume struct {
	// owner and forward name the forward, for a ForwardCancel.
	owner   string
	forward uint64
	// cancelled is set when the client left: the records of the answer
	// then go back to the owner.
	cancelled bool
}

// forwardOrigin names a forward by its sender and the sender's id.
type forwardOrigin struct {
	from string
	id   uint64
}

func newRouting() routing {
	return routing{forwards: route.NewForwards[func(msg.Reply)](0), served: route.NewServed[incoming, func(msg.Reply)](),
		produceForwards: map[produceForwardKey]*route.Batch[func(msg.Reply)]{}, passedConsumes: map[msg.RequestID]*passedConsume{},
		parkable: map[forwardOrigin]msg.RequestID{}}
}

// localOnly reports whether a request must be served from this node's own
// partitions: forwarded requests and internal parts are never forwarded
// again, so a request crosses at most one hop.
func localOnly(id msg.RequestID) bool {
	return id&(forwardedRequestBit|internalRequestBit) != 0
}

// send queues a message to a peer for this Ready.
func (n *Node) send(to string, message msg.PeerMessage) {
	n.messages = append(n.messages, msg.Envelope{From: n.cfg.NodeID, To: to, Message: message})
}

// forward sends req to node to, to be served there from its own
// partitions; done gets the reply, or a 503 after timeoutMs. It returns
// the forward's id.
func (n *Node) forward(to string, req msg.Request, timeoutMs int64, done func(msg.Reply)) uint64 {
	invariant.Check(to != n.cfg.NodeID, "node: forward of %T to itself", req)
	id := n.routing.forwards.Start(to, n.nowMs+timeoutMs, done)
	forward := msg.ForwardRequest{ID: id, Request: req, LocalOnly: true}
	if _, produce := req.(msg.Produce); produce {
		n.produceForwards = append(n.produceForwards, msg.Envelope{From: n.cfg.NodeID, To: to, Message: forward})
	} else {
		n.send(to, forward)
	}
	return id
}

// handleInternal serves req here as a part of a larger request; done gets
// the reply once the Ready that carries it was persisted.
func (n *Node) handleInternal(req msg.Request, done func(msg.Reply)) {
	invariant.Check(done != nil, "node: internal %T has no continuation", req)
	id := internalRequestBit | n.servedID(n.routing.served.Part(done))
	n.handle(id, req)
}

// stepForwardRequest serves a request a peer forwarded.
func (n *Node) stepForwardRequest(from string, m msg.ForwardRequest) {
	invariant.Check(from != n.cfg.NodeID, "node: %T forwarded from this node", m.Request)
	id := forwardedRequestBit | n.servedID(n.routing.served.Forwarded(incoming{from: from, id: m.ID, freeze: isFreeze(m.Request)}))
	if consume, ok := m.Request.(msg.Consume); ok && consume.WaitMs > 0 {
		n.routing.parkable[forwardOrigin{from: from, id: m.ID}] = id
	}
	n.subscribeProber(from, m.Request)
	n.handle(id, m.Request)
}

// stepForwardCancel answers now, with nothing, the consume a peer
// forwarded whose client left, if it is parked here: it no longer holds a
// place among the parked polls, and reserves nothing for nobody.
func (n *Node) stepForwardCancel(from string, m msg.ForwardCancel) {
	id, ok := n.routing.parkable[forwardOrigin{from: from, id: m.ID}]
	if !ok {
		return
	}
	w, parked := n.waiters.get(id)
	if !parked {
		return
	}
	n.waiters.remove(id)
	n.observer.ConsumeWait(w.request.Topic, "cancelled", n.nowMs-w.parkedAtMs)
	n.reply(id, msg.ConsumeResult{Messages: []msg.Message{}, Batch: w.request.Max > 0}, nil)
}

// servedID turns the number of a served request into the low bits of its
// request id: they never reach the bits that mark its kind.
func (n *Node) servedID(number uint64) msg.RequestID {
	id := msg.RequestID(number)
	invariant.Check(id&(forwardedRequestBit|internalRequestBit) == 0, "node: served request number %d reaches the kind bits", number)
	return id
}

// stepForwardReply hands a peer's answer to the forward's continuation. A
// reply that comes after the deadline (or from the wrong node, or to an
// earlier incarnation) has nobody to go to: records it reserved go back to
// the node that reserved them (releaseUnclaimed).
func (n *Node) stepForwardReply(from string, m msg.ForwardReply) {
	if chaos.Planted(chaos.BugForwardReplyMismatched) {
		m.ID ^= 1
	}
	if done, ok := n.routing.forwards.Answered(from, m.ID); ok {
		done(m.Reply)
		return
	}
	n.releaseUnclaimed(from, m.Reply)
}

// expireForwards fails the forwards whose peer did not answer in time and
// marks those peers down for PeerDownMs.
func (n *Node) expireForwards() {
	for _, id := range n.routing.forwards.Due(n.nowMs) {
		forward := n.routing.forwards.TimeOut(id, n.nowMs, n.cfg.PeerDownMs)
		n.observer.Event("forward-timed-out", fmt.Sprintf("node %s did not answer forward %d", forward.To, id))
		forward.Continuation(msg.Reply{Err: msg.Unavailable("node %s did not answer in time; retry", forward.To)})
	}
}

// peerReachable reports whether forwards to the node may be tried now.
func (n *Node) peerReachable(id string) bool {
	return n.routing.forwards.Reachable(id, n.nowMs)
}

// PeerMarkedDown reports whether the node treats peer id as unreachable
// now (a forward to it timed out, or the driver reported it unreachable,
// within PeerDownMs): requests for its partitions get a 503 at once
// instead of a forward.
func (n *Node) PeerMarkedDown(id string) bool { return !n.peerReachable(id) }

// PeerRetry tells the node that the driver will try peer id again at its
// next send (the pause after a failed connection attempt is over): a
// down mark it renewed through that pause ends now, rather than
// PeerDownMs after its last renewal, as one from a failure does when it
// lapses. A next attempt that fails marks the peer down again.
func (n *Node) PeerRetry(id string) { n.routing.forwards.Heard(id) }

// routeReplies moves the replies of forwarded requests into messages
// (ForwardReply) and those of internal parts into rd.internal, leaving the
// clients' replies in rd.Replies.
func (n *Node) routeReplies(rd *Ready) {
	if n.routing.served.Empty() {
		return
	}
	clients := make([]msg.Reply, 0, len(rd.Replies))
	for _, reply := range rd.Replies {
		switch {
		case reply.ID&forwardedRequestBit != 0:
			origin, ok := n.routing.served.TakeOrigin(uint64(reply.ID &^ forwardedRequestBit))
			invariant.Check(ok, "node: reply to unknown forwarded request %d", reply.ID)
			delete(n.routing.parkable, forwardOrigin{from: origin.from, id: origin.id})
			n.sendForwardReply(rd, origin, reply)
		case reply.ID&internalRequestBit != 0:
			rd.internal = append(rd.internal, reply)
		default:
			clients = append(clients, reply)
		}
	}
	rd.Replies = clients
}

// sendForwardReply puts the answer to a forwarded request in rd, unless a
// fault site loses it or holds it back.
func (n *Node) sendForwardReply(rd *Ready, origin incoming, reply msg.Reply) {
	env := msg.Envelope{From: n.cfg.NodeID, To: origin.from,
		Message: msg.ForwardReply{ID: origin.id, Reply: msg.Reply{Err: reply.Err, Result: reply.Result}}}
	switch fault, site := forwardReplyFaultOf(origin.freeze); fault {
	case forwardReplyLost:
		n.observer.Event("fault-site", string(site))
	case forwardReplyLate:
		rd.late = append(rd.late, lateMessage{site: site, envelope: env})
	default:
		rd.Messages = append(rd.Messages, env)
	}
}

// completeInternal runs the continuations of the internal replies of a
// Ready that was persisted and sent.
func (n *Node) completeInternal(rd Ready) {
	for _, reply := range rd.internal {
		done, ok := n.routing.served.TakeContinuation(uint64(reply.ID &^ internalRequestBit))
		invariant.Check(ok, "node: reply to unknown internal request %d", reply.ID)
		done(reply)
	}
}

// PeerUnreachable tells the node that the driver could not reach a peer
// (a connection attempt failed): the peer is avoided for PeerDownMs, and
// the forwards waiting on it fail now instead of at their deadline (the
// driver lost what it had queued for the peer).
func (n *Node) PeerUnreachable(id string) {
	if id == n.cfg.NodeID {
		return
	}
	for _, forward := range n.routing.forwards.Unreachable(id, n.nowMs, n.cfg.PeerDownMs) {
		forward.Continuation(msg.Reply{Err: msg.Unavailable("node %s is unreachable; retry", id)})
	}
}
