package node

import (
	"narad/chaos"
	"narad/msg"
)

// Consumes across nodes. A consume of any partition first reserves from
// this node's own partitions; if they have nothing, it asks the other
// owners one at a time (a probe: a consume served there without waiting)
// and parks between rounds. A parked poll is subscribed at the other
// owners, which send a Notify when records become available there; the
// oldest idle poll of the topic then probes that owner. Records a probe
// reserved for a poll that was answered meanwhile are released back at
// once (a return: a nack that counts no delivery, since no consumer saw
// them), so nothing waits out a visibility timeout for nobody and no
// record runs out of deliveries it never had.

// consumeElsewhere serves a consume pinned to another node's partition by
// forwarding it whole (the owner parks it if it waits).
func (n *Node) consumeElsewhere(id msg.RequestID, t *topic, r msg.Consume) {
	owner := t.owner(r.Partition)
	if localOnly(id) {
		n.reply(id, nil, notOwner(t, r.Partition))
		return
	}
	if !n.ownerAvailable(owner, nil) {
		n.reply(id, nil, msg.Unavailable("partition %d of %s is unavailable (owner %s is down or unreachable); retry", r.Partition, t.info.Name, owner))
		return
	}
	if n.draining {
		r.WaitMs = 0 // shutting down: no consume waits, here or at its owner
	}
	wait := min(max(r.WaitMs, 0), n.cfg.ConsumeWaitMaxMs)
	passed := &passedConsume{owner: owner}
	n.routing.passedConsumes[id] = passed
	r.TopicIncarnation, r.TopicCreatedAtMs = t.identity.Incarnation, t.identity.CreatedAtMs
	passed.forward = n.forward(owner, r, wait+n.cfg.ForwardTimeoutMs, func(reply msg.Reply) { n.passConsumeThrough(id, owner, reply) })
}

// passConsumeThrough answers a client with the owner's answer to its
// forwarded consume, or, when the client cancelled meanwhile (it left),
// hands the records reserved for it back to the owner.
func (n *Node) passConsumeThrough(id msg.RequestID, owner string, reply msg.Reply) {
	passed := n.routing.passedConsumes[id]
	delete(n.routing.passedConsumes, id)
	if passed != nil && passed.cancelled {
		n.releaseUnclaimed(owner, reply)
		return
	}
	n.passThrough(id, reply)
}

// passThrough answers a client with a forwarded request's reply.
func (n *Node) passThrough(id msg.RequestID, reply msg.Reply) {
	n.reply(id, reply.Result, reply.Err)
}

// consumeAcross parks the consume and starts its probe round over the
// other owners. A consume that does not wait stays parked only while its
// probes are in flight.
func (n *Node) consumeAcross(id msg.RequestID, t *topic, r msg.Consume, owners []string) {
	capped := r.WaitMs > 0 && !n.draining && n.waitersFull()
	noWait := r.WaitMs <= 0 || n.draining || capped
	deadline := n.nowMs + min(r.WaitMs, n.cfg.ConsumeWaitMaxMs)
	if noWait {
		deadline = n.nowMs + n.cfg.ForwardTimeoutMs
	} else {
		n.subscribeAll(t, deadline) // before the probes: a link keeps order
	}
	w := &waiter{id: id, request: r, parkedAtMs: n.nowMs, deadlineMs: deadline, probeOwners: owners, noWait: noWait, capped: capped}
	n.waiters.add(w)
	n.probeNext(w)
}

// subscribeAll subscribes a poll parked until deadline at every other
// owner of the topic, those marked down too: a Subscribe is one message
// that nobody answers, and an owner that comes back within the wait then
// tells of its records (consume review). Only the available ones are
// probed.
func (n *Node) subscribeAll(t *topic, deadline int64) {
	n.subscribe(t.info.Name, n.ownersElsewhere(t, false), deadline+n.cfg.ForwardTimeoutMs)
}

// probeNext asks the next owner of the waiter's round, or ends the round:
// a waiter that does not wait is answered with nothing; one that waits
// probes an owner that notified meanwhile, if any.
func (n *Node) probeNext(w *waiter) {
	for len(w.probeOwners) > 0 {
		owner := w.probeOwners[0]
		w.probeOwners = w.probeOwners[1:]
		if n.ownerAvailable(owner, nil) {
			n.probe(w, owner)
			return
		}
	}
	w.probing = ""
	if w.remoteFirst {
		w.remoteFirst = false
		n.remoteRoundEnded(w.request.Topic, false)
	}
	if n.serveHere(w) {
		return
	}
	if w.noWait {
		n.waiters.remove(w.id)
		if w.capped {
			n.refuseWait(w.id, w.request.Topic)
			return
		}
		n.observer.ConsumeWait(w.request.Topic, "no_wait", 0)
		n.reply(w.id, msg.ConsumeResult{Messages: []msg.Message{}, Batch: w.request.Max > 0}, nil)
		return
	}
	if pending := n.cluster.notified[w.request.Topic]; len(pending) > 0 {
		n.cluster.notified[w.request.Topic] = pending[1:]
		if len(pending) == 1 {
			delete(n.cluster.notified, w.request.Topic)
		}
		w.probeOwners = []string{pending[0]}
		n.probeNext(w)
	}
}

// serveHere serves a waiter whose probe round ended with this node's own
// partitions: a round that asked the other owners first (remoteTurn) ends
// here, and records may have come here while it ran. It reports whether
// the waiter was answered.
func (n *Node) serveHere(w *waiter) bool {
	t, ok := n.lookupTopic(w.request.Topic)
	if !ok {
		return false
	}
	messages, _ := n.reserve(t, w.request) // a read error leaves the waiter as it was
	if len(messages) == 0 {
		return false
	}
	n.waiters.remove(w.id)
	n.observer.ConsumeWait(w.request.Topic, "hit", n.nowMs-w.parkedAtMs)
	n.reply(w.id, msg.ConsumeResult{Messages: messages, Batch: w.request.Max > 0}, nil)
	return true
}

// probe asks owner for records on behalf of the waiter.
func (n *Node) probe(w *waiter, owner string) {
	w.probing = owner
	id, topicName := w.id, w.request.Topic
	probe := msg.Consume{Topic: topicName, Partition: msg.PartitionNone, Max: w.request.Max}
	if t, ok := n.lookupTopic(topicName); ok {
		probe.TopicIncarnation, probe.TopicCreatedAtMs = t.identity.Incarnation, t.identity.CreatedAtMs
	}
	n.forward(owner, probe, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) { n.probeAnswered(id, topicName, owner, reply) })
}

// probeAnswered serves the waiter with what the owner reserved, or moves
// its round on. Records reserved for a waiter that is gone go back.
func (n *Node) probeAnswered(id msg.RequestID, topicName, owner string, reply msg.Reply) {
	result, _ := reply.Result.(msg.ConsumeResult)
	w, parked := n.waiters.get(id)
	current := parked && w.probing == owner
	if len(result.Messages) == 0 {
		if current {
			w.probing = ""
			n.probeNext(w)
		}
		return
	}
	if !current {
		n.releaseElsewhere(owner, topicName, result.Messages)
		return
	}
	chaos.Reached(chaos.MarkNodeConsumeProbeHit)
	if w.remoteFirst {
		n.remoteRoundEnded(topicName, true)
	}
	n.waiters.remove(id)
	n.observer.ConsumeWait(topicName, "hit", n.nowMs-w.parkedAtMs)
	n.reply(id, msg.ConsumeResult{Messages: result.Messages, Batch: w.request.Max > 0}, nil)
	n.probeForNotify(topicName, owner) // the owner may hold more for the next poll
}

// probeForNotify lets the oldest idle waiting poll of the topic probe the
// owner; it reports whether one did.
func (n *Node) probeForNotify(topicName, owner string) bool {
	w := n.waiters.firstUnpinned(topicName, func(w *waiter) bool { return w.probing == "" && !w.noWait })
	if w == nil {
		return false
	}
	w.probeOwners = []string{owner}
	n.probeNext(w)
	return true
}

// releaseUnclaimed hands back the records of a consume's reply that no
// client will receive: a reply to a forward that timed out, or to a
// forwarded poll whose client left. Only deliveries that reach a consumer
// count, so the owner takes them back as if never reserved.
func (n *Node) releaseUnclaimed(owner string, reply msg.Reply) {
	result, ok := reply.Result.(msg.ConsumeResult)
	if !ok || len(result.Messages) == 0 {
		return
	}
	messages := result.Messages
	for len(messages) > 0 { // one topic per release: a consume's answer holds one, but the peer is not trusted
		topicName := messages[0].Topic
		same := 1
		for same < len(messages) && messages[same].Topic == topicName {
			same++
		}
		n.releaseElsewhere(owner, topicName, messages[:same])
		messages = messages[same:]
	}
}

// releaseElsewhere returns records a probe reserved for a poll that was
// answered meanwhile, so the owner redelivers them at once, their
// delivery counts as they were before the probe.
func (n *Node) releaseElsewhere(owner, topicName string, messages []msg.Message) {
	chaos.Reached(chaos.MarkNodeProbeReleased)
	handles := make([]string, len(messages))
	for i, m := range messages {
		handles[i] = m.ReceiptHandle
	}
	release := msg.Ack{Topic: topicName, Handles: handles, Action: msg.AckReturn, Batch: true}
	n.forward(owner, release, n.cfg.ForwardTimeoutMs, func(msg.Reply) {})
}
