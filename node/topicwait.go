package node

import (
	"fmt"
	"slices"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
)

// A topic just created or grown through another node may not have
// reached this node's replica yet. Rather than answer 404 for a topic that
// exists, or 400 for a partition that exists, a request naming a topic
// this replica does not know, or pinned to a partition past the count it
// has applied, is held (awaited decides, for every route): a client's
// request asks the metastore leader first, whose answer settles it when
// the leader does not know the topic either (404) or has fewer partitions
// than the pin (400), and otherwise confirms what it waits for. The
// leader answers its own requests, and the question, only past a read
// barrier requested since they arrived (readbarrier.go: it may have been
// deposed without knowing it), and only while its log holds no change of
// the topic it has not applied, meta.TopicCountPending (answered
// earlier, from its applied state, the question would deny what its log
// already holds). Every held request is served again as soon as this
// replica has what it waits for (or its topic is gone), and answered 503
// (retry) if it does not in time. A pin nobody settled is 503 too, never
// a 400 from this replica's count: that count may be behind a growth the
// client was acknowledged through another node, and a client that takes
// a 400 as final would drop its record while the leader was merely out
// of reach.

// heldRequest is a request waiting for its topic, or a partition of it,
// to reach this replica.
type heldRequest struct {
	id      msg.RequestID
	request msg.Request
	// awaiting is what the request waited for when last looked at: the
	// topic, or, once the topic is known here, the partition it pins.
	awaiting   awaiting
	deadlineMs int64
	// seq numbers the request among all held (Node.heldSeq): a leader's
	// answer covers only those held before its question left, and a read
	// barrier only those held before its read was requested.
	seq uint64
	// settled: nobody is to be asked about it again: what it waits for
	// exists, said the node that forwarded it (a peer's request) or the
	// leader's answer, or the leader could not tell in time (its log held
	// a change of the topic it had not applied, or no read barrier came,
	// for as long as a forwarded request waits there), or this node leads
	// (it answers for itself past its read barrier). Like every request
	// still held at its deadline, it is answered 503 then.
	settled bool
}

// awaiting is what a request waits for on this replica.
type awaiting struct {
	// topic is the topic the request names; never "".
	topic string
	// partition is the highest partition the request pins, past the count
	// this replica has applied; msg.PartitionNone while the topic itself
	// is not known here, and for another node's question about the topic
	// (msg.GetTopic.Confirm), which pins none and waits for the leader's
	// barrier whatever this replica holds.
	partition int
}

func (w awaiting) String() string {
	if w.partition == msg.PartitionNone {
		return fmt.Sprintf("topic %q", w.topic)
	}
	return fmt.Sprintf("partition %d of topic %q", w.partition, w.topic)
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

// pinnedPartition is the highest partition a request pins (a produce's
// records, a consume's, a replay's, a description's of one partition);
// ok is false, and highest msg.PartitionNone, when it pins none, or one
// that no version of any topic can have (possiblePartition), which is
// answered at once. It allocates nothing: every request is looked at
// (awaited).
func pinnedPartition(req msg.Request) (highest int, ok bool) {
	highest = msg.PartitionNone
	switch r := req.(type) {
	case msg.Produce:
		for _, rec := range r.Records {
			if rec.Partition != msg.PartitionNone && !possiblePartition(rec.Partition) {
				return msg.PartitionNone, false
			}
			highest = max(highest, rec.Partition)
		}
	case msg.Consume:
		highest = r.Partition
	case msg.Replay:
		highest = r.Partition
	case msg.GetTopic:
		highest = r.Partition
	}
	if !possiblePartition(highest) {
		return msg.PartitionNone, false
	}
	return highest, true
}

// possiblePartition reports whether some version of some topic may have
// partition index: meta.PartitionsMax bounds every topic on every replica,
// whatever each node's own Config.PartitionsMax.
func possiblePartition(index int) bool {
	return index >= 0 && index < meta.PartitionsMax
}

// awaited decides whether a request must wait for this replica, and for
// what: its topic, when the replica does not know it, or the partition it
// pins, when the topic is known with fewer partitions. Another node's
// question about the topic (msg.GetTopic.Confirm) always waits: only the
// leader answers it, past its read barrier (hold, serveHeld). A
// description does not wait for more than its topic: the fan-out of one
// to the partitions' owners forwards it, and is answered at once. It is
// the one place that decides, for a request that arrives (hold) and for
// one held (serveHeld).
func (n *Node) awaited(req msg.Request) (awaiting, bool) {
	name := topicOf(req)
	if name == "" || validTopicName(name) != nil {
		return awaiting{}, false
	}
	if isQuestion(req) {
		return awaiting{topic: name, partition: msg.PartitionNone}, true
	}
	t, known := n.lookupTopic(name) // cached: no copy of the record per request
	if !known {
		return awaiting{topic: name, partition: msg.PartitionNone}, true
	}
	if pin, pinned := pinnedPartition(req); pinned && pin >= t.info.Partitions {
		return awaiting{topic: name, partition: pin}, true
	}
	return awaiting{}, false
}

// isQuestion reports whether a request is another node's question to
// the metastore leader about a topic (askLeaderAbout).
func isQuestion(req msg.Request) bool {
	question, ok := req.(msg.GetTopic)
	return ok && question.Confirm
}

// hold holds the request if it must wait for this replica (awaited); it
// reports whether it took the request (held, or answered 503), and the
// caller then serves nothing. On the metastore leader it counts as
// settled (it asks nobody) and waits for a read barrier requested since
// it arrived (readbarrier.go), and for the leader's log to hold no change
// of the topic's existence or count past what it applied (committed and
// not applied yet, or not committed yet: a new leader's log holds entries
// of its predecessor's it has not applied, and a leader applies what it
// commits at its next Ready); then the leader's applied state answers.
// A replica that does not lead answers a question 503: its state may be
// behind the leader's, and the asker asks the leader it knows next.
func (n *Node) hold(id msg.RequestID, req msg.Request) bool {
	w, waits := n.awaited(req)
	if !waits {
		return false
	}
	leader, leaderKnown := n.meta.Leader()
	leads := leaderKnown && leader == n.cfg.NodeID
	switch {
	case isQuestion(req) && !leads:
		n.reply(id, nil, msg.Unavailable("this node does not lead the metastore, and cannot answer for %s; retry", w))
		return true
	case !leaderKnown:
		n.reply(id, nil, msg.Unavailable("%s is not known here and no metadata leader is known to ask; retry", w))
		return true
	case len(n.held) >= n.cfg.HeldRequestsMax:
		n.heldRefusedFull++
		n.reply(id, nil, msg.Unavailable("%s is not known here yet, and %d requests already wait for what this replica has not applied (the limit); retry", w, len(n.held)))
		return true
	}
	n.heldSeq++
	n.held = append(n.held, heldRequest{id: id, request: req, awaiting: w, deadlineMs: n.nowMs + n.heldForMs(id), seq: n.heldSeq, settled: localOnly(id) || leads})
	switch {
	case leads:
		n.wantRead()
	case !localOnly(id):
		n.askLeaderAbout(leader, w.topic)
	}
	return true
}

// heldForMs is how long a request waits for its topic or partition: a
// client's for a forward's timeout; a peer's (a forwarded request) for
// half of it, so its 503 reaches the sender before the sender's own
// timeout. Held as long, it always came after: the sender took this
// healthy node for down (PeerDownMs) and answered its client so.
func (n *Node) heldForMs(id msg.RequestID) int64 {
	if localOnly(id) {
		return n.cfg.ForwardTimeoutMs / 2
	}
	return n.cfg.ForwardTimeoutMs
}

// askLeaderAbout asks the metastore leader about a topic for the clients'
// requests held for it, once at a time per topic. Its answer covers the
// requests held before the question left; one held after it may be for a
// topic created or grown since, and is asked about again (diff review: a
// slow "not found" answered a request held after a create that was
// acknowledged meanwhile). The question is a description marked Confirm:
// the leader answers it past a read barrier requested since the question
// came, once it applied every change of the topic's count its log holds,
// or 503 (unsureVerdict) when that takes longer than a forwarded request
// waits there, or at once when it does not lead any more (then, if
// another leader is known here by the time the 503 comes, that one is
// asked: the 503 said nothing about the topic).
func (n *Node) askLeaderAbout(leader, name string) {
	if n.heldAsked[name] {
		return
	}
	n.heldAsked[name] = true
	covered := n.heldSeq
	n.forward(leader, msg.GetTopic{Name: name, Partition: msg.PartitionNone, Confirm: true}, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
		delete(n.heldAsked, name)
		detail, found := reply.Result.(msg.TopicDetail)
		switch {
		case reply.Err == nil && found:
			n.settleHeldClients(name, covered, foundVerdict(detail.TopicInfo))
		case msg.CodeOf(reply.Err) == msg.CodeNotFound:
			n.settleHeldClients(name, covered, notFoundVerdict(reply.Err))
		case msg.CodeOf(reply.Err) == msg.CodeUnavailable && n.peerReachable(leader):
			if current, known := n.meta.Leader(); known && current != leader {
				break // asked a node that leads no more (its 503 says only that): ask the leader known now, below
			}
			n.settleHeldClients(name, covered, unsureVerdict) // the leader's own 503: a forward that failed here marks its peer down
		default:
			return // the question failed: the held requests wait out their deadline
		}
		if leader, ok := n.meta.Leader(); ok && leader != n.cfg.NodeID && n.clientUnsettled(name) {
			n.askLeaderAbout(leader, name)
		}
	})
}

// heldVerdict is a leader's answer about a topic, applied to a client's
// request held for it, pinned to pin (msg.PartitionNone: none), and held
// before the question left (covered) or after: err answers the request;
// settled says that nobody is to be asked about it again.
type heldVerdict func(pin int, covered bool) (settled bool, err error)

// foundVerdict: the leader has the topic with info.Partitions. A pin
// below that count exists, also for a request held since the question
// left (a topic only grows; deleted since, the request is answered 503
// at its deadline, and its retry 404). A pin at or past it is out of
// range (400) for a request the answer covers; one held since may be
// for a growth acknowledged meanwhile, and is asked about again.
func foundVerdict(info msg.TopicInfo) heldVerdict {
	return func(pin int, covered bool) (bool, error) {
		switch {
		case pin < info.Partitions:
			return true, nil
		case covered:
			return false, partitionOutOfRange(info.Name, info.Partitions, pin)
		}
		return false, nil
	}
}

// notFoundVerdict: the leader does not have the topic: err (404) answers
// the requests the answer covers; one held since the question left may
// be for a topic created meanwhile, and is asked about again.
func notFoundVerdict(err error) heldVerdict {
	return func(_ int, covered bool) (bool, error) {
		if covered {
			return false, err
		}
		return false, nil
	}
}

// unsureVerdict: the leader answered 503, its log holding a change of
// the topic it had not applied, or its read barrier not confirmed, for as
// long as a forwarded request waits there (or it no longer led): the
// requests the answer covers are not asked about again (503
// at their deadline); one held since the question left is.
func unsureVerdict(_ int, covered bool) (bool, error) { return covered, nil }

// settleHeldClients applies a leader's answer about the topic to the
// clients' requests held for it (seq up to covered: held before the
// question left). A peer's request waits for its own deadline, as its
// sender asked its leader already.
func (n *Node) settleHeldClients(topic string, covered uint64, verdict heldVerdict) {
	kept := n.held[:0]
	for _, h := range n.held {
		if h.awaiting.topic == topic && !localOnly(h.id) {
			pin, _ := pinnedPartition(h.request)
			settled, err := verdict(pin, h.seq <= covered)
			if err != nil {
				n.reply(h.id, nil, err)
				continue
			}
			h.settled = h.settled || settled
		}
		kept = append(kept, h)
	}
	clear(n.held[len(kept):]) // keeps no answered request alive
	n.held = kept
}

// clientUnsettled reports whether a client's request held for the topic,
// or a partition of it, is still to be asked about.
func (n *Node) clientUnsettled(topic string) bool {
	return slices.ContainsFunc(n.held, func(h heldRequest) bool {
		return h.awaiting.topic == topic && !localOnly(h.id) && !h.settled
	})
}

// serveHeld serves the held requests that need wait no more: this
// replica has what they waited for, or, on a replica that does not lead,
// the topic whose partition they waited for is gone (the applied state
// answers them: 404), or this replica leads, passed a read barrier
// requested since they arrived, and applied every change of the topic
// its log holds (its applied state answers them: 404 or 400, or the
// answer to a question); it answers those whose wait ran out, and wants
// a read for those the leader is to answer that no read covers yet.
func (n *Node) serveHeld() {
	if len(n.held) == 0 {
		return
	}
	n.passReads()
	leads := n.meta.IsLeader()
	waiting := n.held[:0:0]
	var ready []heldRequest
	settles := map[string]bool{} // leaderSettles by topic, asked once per call: each ask decodes the log's unapplied tail
	uncovered := false
	for _, h := range n.held {
		w, waits := n.awaited(h.request)
		settled, asked := settles[w.topic]
		if waits && !asked {
			settled = n.leaderSettles(w.topic)
			settles[w.topic] = settled
		}
		switch {
		case !waits || (!leads && w.partition == msg.PartitionNone && h.awaiting.partition != msg.PartitionNone):
			chaos.Reached(chaos.MarkNodeHeldServed)
			ready = append(ready, h)
		case settled && n.barrierPassed(h):
			chaos.Reached(chaos.MarkNodeHeldAnsweredByLeader)
			ready = append(ready, h) // the leader, past a barrier since the request came, applied every change of the topic: its answer is final
		case h.deadlineMs > n.nowMs:
			h.awaiting = w
			waiting = append(waiting, h)
			uncovered = uncovered || h.seq > n.leaderReads.requested
		default: // nobody settled it: this replica's count may be behind one acknowledged elsewhere
			chaos.Reached(chaos.MarkNodeHeldTimedOut)
			n.reply(h.id, nil, heldUnavailable(h, w))
		}
	}
	n.held = waiting
	if uncovered && n.meta.Barrier() {
		n.wantRead()
	}
	for _, h := range ready {
		n.serve(h.id, h.request)
	}
}

// heldUnavailable is the 503 of a request whose wait ran out.
func heldUnavailable(h heldRequest, w awaiting) error {
	if isQuestion(h.request) {
		return msg.Unavailable("the metadata leader could not confirm what it holds of %s in time; retry", w)
	}
	return msg.Unavailable("%s is not known to this node yet; retry", w)
}

// leaderSettles reports whether this replica leads the metastore and its
// log holds no change of the topic's existence or count past what it
// applied: its applied state then answers for the cluster, past a read
// barrier (barrierPassed).
func (n *Node) leaderSettles(topic string) bool {
	return n.meta.IsLeader() && !n.meta.TopicCountPending(topic)
}
