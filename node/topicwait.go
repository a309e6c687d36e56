package node

import (
	"slices"

	"narad/msg"
)

// A topic just created through another node may not have reached this
// node's replica yet. Rather than answer 404 for a topic that exists, a
// request naming a topic this replica does not know is held: a client's
// request asks the metastore leader first (404 only if the leader does
// not know it either); every held request is served again as soon as the
// topic appears here, and answered 503 (retry) if it does not in time.

// heldRequest is a request waiting for its topic to reach this replica.
type heldRequest struct {
	id         msg.RequestID
	request    msg.Request
	topic      string
	deadlineMs int64
	// seq numbers the request among all held (Node.heldSeq): a leader's
	// answer covers only those held before its question left.
	seq uint64
}

// topicOf names the topic a request is about ("" for none, or a create
// without a parent).
func topicOf(req msg.Request) string {
	switch r := req.(type) {
	case msg.Produce:
		return r.Topic
	case msg.Consume:
		return r.Topic
	case msg.Replay:
		return r.Topic
	case msg.Ack:
		return r.Topic
	case msg.GetTopic:
		return r.Name
	case msg.AlterTopic:
		return r.Name
	case msg.DeleteTopic:
		return r.Name
	case msg.CreateTopic:
		return r.Parent // a child's create waits for its parent to be known here
	case msg.AttachChild:
		return r.Parent
	case msg.DetachChild:
		return r.Parent
	case msg.ListChildren:
		return r.Parent
	}
	return ""
}

// holdForTopic holds the request if its topic is unknown here but may
// exist; it reports whether it did (the caller then serves nothing).
func (n *Node) holdForTopic(id msg.RequestID, req msg.Request) bool {
	name := topicOf(req)
	if name == "" || validTopicName(name) != nil {
		return false
	}
	if _, known := n.lookupTopic(name); known { // cached: no copy of the record per request
		return false
	}
	leader, leaderKnown := n.meta.Leader()
	if leaderKnown && leader == n.cfg.NodeID {
		return false // the leader's replica is the authority: 404 stands
	}
	if !leaderKnown {
		n.reply(id, nil, msg.Unavailable("topic %q is not known here and no metadata leader is known to ask; retry", name))
		return true
	}
	if len(n.held) >= n.cfg.HeldRequestsMax {
		n.reply(id, nil, msg.Unavailable("topic %q is not known here yet, and %d requests already wait for their topics (the limit); retry", name, len(n.held)))
		return true
	}
	n.heldSeq++
	n.held = append(n.held, heldRequest{id: id, request: req, topic: name, deadlineMs: n.nowMs + n.heldForMs(id), seq: n.heldSeq})
	if !localOnly(id) {
		n.askLeaderAbout(leader, name)
	}
	return true
}

// heldForMs is how long a request waits for its topic: a client's for a
// forward's timeout; a peer's (a forwarded request) for half of it, so its
// 503 reaches the sender before the sender's own timeout. Held as long,
// it always came after: the sender took this healthy node for down
// (PeerDownMs) and answered its client so.
func (n *Node) heldForMs(id msg.RequestID) int64 {
	if localOnly(id) {
		return n.cfg.ForwardTimeoutMs / 2
	}
	return n.cfg.ForwardTimeoutMs
}

// askLeaderAbout asks the metastore leader whether a topic this replica
// does not know exists, once at a time per topic. Its "not found" is
// the answer of the clients' requests held before the question left; one
// held after it may be for a topic created since, and is asked about
// again (diff review: a slow "not found" answered a request held after a
// create that was acknowledged meanwhile).
func (n *Node) askLeaderAbout(leader, name string) {
	if n.heldAsked[name] {
		return
	}
	n.heldAsked[name] = true
	covered := n.heldSeq
	n.forward(leader, msg.GetTopic{Name: name, Partition: msg.PartitionNone}, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
		delete(n.heldAsked, name)
		if msg.CodeOf(reply.Err) != msg.CodeNotFound {
			return // it exists (the held requests wait for this replica) or the question failed (they wait out their deadline)
		}
		n.releaseHeldClients(name, covered, reply.Err)
		if leader, ok := n.meta.Leader(); ok && leader != n.cfg.NodeID && n.clientHeldFor(name) {
			n.askLeaderAbout(leader, name)
		}
	})
}

// releaseHeldClients answers err to the clients' requests held for the
// topic before the question that err answers (seq up to covered); a
// peer's request waits for its own deadline, as its sender asked its
// leader already.
func (n *Node) releaseHeldClients(topic string, covered uint64, err error) {
	n.held = slices.DeleteFunc(n.held, func(h heldRequest) bool {
		if h.topic != topic || localOnly(h.id) || h.seq > covered {
			return false
		}
		n.reply(h.id, nil, err)
		return true
	})
}

// clientHeldFor reports whether a client's request waits for the topic.
func (n *Node) clientHeldFor(topic string) bool {
	return slices.ContainsFunc(n.held, func(h heldRequest) bool { return h.topic == topic && !localOnly(h.id) })
}

// serveHeld serves the held requests whose topic appeared, and answers
// 503 to those whose wait ran out.
func (n *Node) serveHeld() {
	if len(n.held) == 0 {
		return
	}
	waiting := n.held[:0:0]
	var ready []heldRequest
	for _, h := range n.held {
		_, known := n.lookupTopic(h.topic) // cached: no copy of the record per request
		switch {
		case known:
			ready = append(ready, h)
		case h.deadlineMs <= n.nowMs:
			n.reply(h.id, nil, msg.Unavailable("topic %q is not known to this node yet; retry", h.topic))
		default:
			waiting = append(waiting, h)
		}
	}
	n.held = waiting
	for _, h := range ready {
		n.handle(h.id, h.request)
	}
}
