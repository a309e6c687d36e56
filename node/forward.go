package node

import (
	"fmt"

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
	// incoming maps the request id given to a forwarded request to its
	// origin.
	incoming map[msg.RequestID]incoming
	// internal maps the request id of a local part to its continuation.
	internal map[msg.RequestID]func(msg.Reply)
	// lastLocalID numbers incoming and internal requests; only increases.
	lastLocalID uint64
	// produceForwards holds, per owner and topic, the forward of produce
	// parts gathered in the Ready being built (route_produce.go); emptied
	// when a Ready is handed out.
	produceForwards map[produceForwardKey]*route.Batch[func(msg.Reply)]
}

func newRouting() routing {
	return routing{forwards: route.NewForwards[func(msg.Reply)](0), incoming: map[msg.RequestID]incoming{},
		internal: map[msg.RequestID]func(msg.Reply){}, produceForwards: map[produceForwardKey]*route.Batch[func(msg.Reply)]{}}
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
	n.send(to, msg.ForwardRequest{ID: id, Request: req, LocalOnly: true})
	return id
}

// handleInternal serves req here as a part of a larger request; done gets
// the reply once the Ready that carries it was persisted.
func (n *Node) handleInternal(req msg.Request, done func(msg.Reply)) {
	n.routing.lastLocalID++
	id := internalRequestBit | msg.RequestID(n.routing.lastLocalID)
	_, taken := n.routing.internal[id]
	invariant.Check(!taken && done != nil, "node: internal request %d is taken or has no continuation", id)
	n.routing.internal[id] = done
	n.handle(id, req)
}

// stepForwardRequest serves a request a peer forwarded.
func (n *Node) stepForwardRequest(from string, m msg.ForwardRequest) {
	n.routing.lastLocalID++
	id := forwardedRequestBit | msg.RequestID(n.routing.lastLocalID)
	_, taken := n.routing.incoming[id]
	invariant.Check(!taken && from != n.cfg.NodeID, "node: forwarded request %d from %s is taken or from this node", id, from)
	n.routing.incoming[id] = incoming{from: from, id: m.ID}
	n.handle(id, m.Request)
}

// stepForwardReply hands a peer's answer to the forward's continuation; a
// reply that comes after the deadline (or from the wrong node) is dropped.
func (n *Node) stepForwardReply(from string, m msg.ForwardReply) {
	if done, ok := n.routing.forwards.Answered(from, m.ID); ok {
		done(m.Reply)
	}
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

// routeReplies moves the replies of forwarded requests into messages
// (ForwardReply) and those of internal parts into rd.internal, leaving the
// clients' replies in rd.Replies.
func (n *Node) routeReplies(rd *Ready) {
	if len(n.routing.incoming) == 0 && len(n.routing.internal) == 0 {
		return
	}
	clients := make([]msg.Reply, 0, len(rd.Replies))
	for _, reply := range rd.Replies {
		switch {
		case reply.ID&forwardedRequestBit != 0:
			origin, ok := n.routing.incoming[reply.ID]
			invariant.Check(ok, "node: reply to unknown forwarded request %d", reply.ID)
			delete(n.routing.incoming, reply.ID)
			rd.Messages = append(rd.Messages, msg.Envelope{From: n.cfg.NodeID, To: origin.from,
				Message: msg.ForwardReply{ID: origin.id, Reply: msg.Reply{Err: reply.Err, Result: reply.Result}}})
		case reply.ID&internalRequestBit != 0:
			rd.internal = append(rd.internal, reply)
		default:
			clients = append(clients, reply)
		}
	}
	rd.Replies = clients
}

// completeInternal runs the continuations of the internal replies of a
// Ready that was persisted and sent.
func (n *Node) completeInternal(rd Ready) {
	for _, reply := range rd.internal {
		done, ok := n.routing.internal[reply.ID]
		invariant.Check(ok, "node: reply to unknown internal request %d", reply.ID)
		delete(n.routing.internal, reply.ID)
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
