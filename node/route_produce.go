package node

import (
	"slices"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/route"
)

// produceJoin is a produce request whose records span several owners: one
// part per owner, each answered after that owner's sync round; the client
// is answered when the last part is.
type produceJoin struct {
	client msg.RequestID
	topic  string
	// records are the request's records; placements[i] is where record i
	// landed (or is headed).
	records    []msg.ProduceRecord
	placements []msg.Placement
	batch      bool
	// fanoutEpoch and schemaID are the request's msg.Produce.FanoutEpoch
	// and SchemaID, and identity the topic's its records were placed for:
	// every part carries the three, and a re-placement happens only in
	// that topic.
	fanoutEpoch uint64
	schemaID    uint64
	identity    meta.TopicIdentity
	// parts counts the parts in flight, the re-placements and what they
	// avoid, and the first failure no re-placement could fix.
	parts *route.Join
}

// produceAcross sends each owner its part of the request.
func (n *Node) produceAcross(id msg.RequestID, t *topic, r msg.Produce, placements []msg.Placement) {
	chaos.Reached(chaos.MarkNodeProduceForwarded)
	invariant.Check(len(placements) == len(r.Records), "node: %d placements for %d records", len(placements), len(r.Records))
	j := &produceJoin{client: id, topic: t.info.Name, records: r.Records, placements: placements, batch: r.Batch,
		fanoutEpoch: r.FanoutEpoch, schemaID: r.SchemaID, identity: t.identity, parts: route.NewJoin()}
	indexes := make([]int, len(r.Records))
	for i := range indexes {
		indexes[i] = i
	}
	n.sendProduceParts(j, t, indexes)
}

// sendProduceParts groups the given records by owner and sends each group
// as one request with explicit partitions, served locally only.
func (n *Node) sendProduceParts(j *produceJoin, t *topic, indexes []int) {
	for _, byOwner := range route.ByOwner(indexes, func(i int) string { return t.owner(j.placements[i].Partition) }) {
		if byOwner.Owner == n.cfg.NodeID {
			n.sendProducePart(j, byOwner, notMoving)
			continue
		}
		for _, share := range j.byMovingPartition(t, byOwner) {
			n.sendProducePart(j, share.part, share.moving)
		}
	}
}

// sendProducePart sends one part: to this node's own partitions, or in
// the forward to its owner for moving (a partition being moved, or
// notMoving).
func (n *Node) sendProducePart(j *produceJoin, part route.Part, moving int) {
	request := j.part(part.Indexes)
	done := func(reply msg.Reply) { n.producePartAnswered(j, part.Owner, part.Indexes, reply) }
	j.parts.Sent()
	if part.Owner == n.cfg.NodeID {
		n.handleInternal(request, done)
		return
	}
	n.forwardProducePart(part.Owner, request, moving, done)
}

// notMoving marks a share of records whose partitions no move targets.
const notMoving = -1

// movingShare is the share of a part bound for one partition being
// moved (moving), or for partitions no move targets (notMoving).
type movingShare struct {
	part   route.Part
	moving int
}

// byMovingPartition splits an owner's part: the records of each partition
// a move targets in the applied placement go apart from the others. The
// owner refuses a whole forward at its first record of a partition it
// froze for the move; sharing one, the records of its partitions that
// nobody froze were refused with them, round after round while clients
// kept producing to the frozen one, until they ran out of re-placements
// (produce review).
func (j *produceJoin) byMovingPartition(t *topic, part route.Part) []movingShare {
	var shares []movingShare
	share := func(moving int) *movingShare {
		for k := range shares {
			if shares[k].moving == moving {
				return &shares[k]
			}
		}
		shares = append(shares, movingShare{part: route.Part{Owner: part.Owner}, moving: moving})
		return &shares[len(shares)-1]
	}
	for _, i := range part.Indexes {
		partition, moving := j.placements[i].Partition, notMoving
		if t.assignments[partition].Target != "" {
			moving = partition
		}
		s := share(moving)
		s.part.Indexes = append(s.part.Indexes, i)
	}
	return shares
}

// produceForwardKey names the produce forward of one owner, topic and
// the fields a forward carries once for all its parts (msg.Produce's
// FanoutEpoch, SchemaID and topic identity): parts that differ in them
// never share one.
type produceForwardKey struct {
	owner, topic string
	fanoutEpoch  uint64
	schemaID     uint64
	identity     meta.TopicIdentity
	// moving is the partition being moved whose records alone the
	// forward carries, or notMoving (byMovingPartition).
	moving int
}

// forwardProducePart sends a produce part to owner, in the forward to that
// owner and topic of this Ready when the batch has room, else in a new one:
// one ForwardRequest carries, as one batch produce, every produce part this
// node sends one owner for one topic in the Ready being built (those of
// a partition being moved apart, byMovingPartition); the owner
// serves them in one loop round, and answers them with one reply, which is
// split back into the parts'.
func (n *Node) forwardProducePart(owner string, part msg.Produce, moving int, done func(msg.Reply)) {
	key := produceForwardKey{owner: owner, topic: part.Topic, fanoutEpoch: part.FanoutEpoch, schemaID: part.SchemaID,
		identity: meta.TopicIdentity{Incarnation: part.TopicIncarnation, CreatedAtMs: part.TopicCreatedAtMs}, moving: moving}
	payloadBytes := 0
	for _, rec := range part.Records {
		payloadBytes += len(rec.Payload)
	}
	f := n.routing.produceForwards[key]
	if f == nil || !f.Fits(len(part.Records), payloadBytes, msg.ProduceBatchRecordsMax, msg.ProduceBatchBytesMax) {
		f = &route.Batch[func(msg.Reply)]{Index: len(n.produceForwards)}
		header := part
		header.Records = nil
		f.ID = n.forward(owner, header, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
			// Answered (failed: its owner unreachable) before the Ready was
			// taken, the batch takes no more parts: one added now would
			// ride a forward whose answer matches nothing, never answered.
			// Nor does it leave: its parts are placed again, and sent as
			// well it would write their records twice (Ready drops it).
			if n.routing.produceForwards[key] == f {
				delete(n.routing.produceForwards, key)
			}
			n.dropUnsentForward(f)
			produceBatchAnswered(f, reply)
		})
		n.routing.produceForwards[key] = f
		n.maybeForwardTwice(f.Index)
	} else {
		chaos.Reached(chaos.MarkNodeProduceForwardsJoined)
	}
	envelope := &n.produceForwards[f.Index]
	request, ok := envelope.Message.(msg.ForwardRequest)
	invariant.Check(ok && request.ID == f.ID && envelope.To == owner, "node: produce forward %d is not at forward %d", f.ID, f.Index)
	batch := request.Request.(msg.Produce)
	batch.Records = append(batch.Records, part.Records...)
	request.Request = batch
	envelope.Message = request
	f.Add(len(part.Records), payloadBytes, done)
}

// dropUnsentForward blanks a produce forward that failed while still in
// the Ready being built (Ready drops it), whether or not a later batch
// for its owner and topic replaced it: a full one had been (diff review).
func (n *Node) dropUnsentForward(f *route.Batch[func(msg.Reply)]) {
	if f.Index >= len(n.produceForwards) {
		return
	}
	if request, ok := n.produceForwards[f.Index].Message.(msg.ForwardRequest); ok && request.ID == f.ID {
		n.produceForwards[f.Index].Message = nil
	}
}

// produceBatchAnswered splits the owner's reply into the parts': each gets
// its own placements, or the batch's error (a reply of the wrong shape
// goes to every part as is, which refuses it).
func produceBatchAnswered(f *route.Batch[func(msg.Reply)], reply msg.Reply) {
	result, ok := reply.Result.(msg.ProduceResult)
	shares, split := f.Split(len(result.Records))
	if reply.Err != nil || !ok || !split {
		for _, done := range f.Continuations() {
			done(reply)
		}
		return
	}
	for _, share := range shares {
		share.Continuation(msg.Reply{Result: msg.ProduceResult{Records: result.Records[share.From:share.To], Batch: true}})
	}
}

// part builds the request for the records at indexes.
func (j *produceJoin) part(indexes []int) msg.Produce {
	records := make([]msg.ProduceRecord, len(indexes))
	for k, i := range indexes {
		records[k] = j.records[i]
		records[k].Partition = j.placements[i].Partition
	}
	return msg.Produce{Topic: j.topic, Records: records, Batch: true, FanoutEpoch: j.fanoutEpoch, SchemaID: j.schemaID,
		TopicIncarnation: j.identity.Incarnation, TopicCreatedAtMs: j.identity.CreatedAtMs}
}

// producePartAnswered records a part's outcome; a retryable failure
// re-places the part's records away from that owner when none is pinned.
func (n *Node) producePartAnswered(j *produceJoin, owner string, indexes []int, reply msg.Reply) {
	j.parts.Answered()
	switch {
	case reply.Err == nil:
		result, ok := reply.Result.(msg.ProduceResult)
		if !ok || len(result.Records) != len(indexes) {
			j.parts.Fail(msg.Internal("node %s answered a produce part with %T", owner, reply.Result))
			break
		}
		for k, i := range indexes {
			j.placements[i] = result.Records[k]
		}
	case j.parts.Reroute(retryable(reply.Err)):
		j.parts.Exclude(owner, n.peerReachable(owner), n.refusedPartitions(j, owner, indexes))
		n.rerouteProducePart(j, indexes, reply.Err)
	default:
		j.parts.Fail(reply.Err)
	}
	if j.parts.Done() {
		n.finishProduceJoin(j)
	}
}

// refusedPartitions are the partitions of a refused part that its records
// move off. The owner refuses a whole forward at its first record it may
// not write, and one forward carries every part of the Ready for that
// owner and topic (other clients' too; a partition being moved in the
// applied placement travels apart, but this node's placement may lag the
// owner's), so a partition frozen for a move could push keyed records off
// partitions nobody froze. So: when some of
// the part's partitions are moving in the applied placement, only those
// are refused; when none is but another partition of the owner's is, the
// refusal was likely that one's, and nothing is (the records are sent
// again as they were, using a re-placement); when the owner moves nothing
// (it fenced itself, say), all of them are. A partition that another node
// owns by now in the applied placement is never refused: the refusal was
// its old owner's "not the owner", and sent again its records go to the
// new one (excluded, it pushed a keyed record off its key's partition though
// nobody froze or refused it there).
func (n *Node) refusedPartitions(j *produceJoin, owner string, indexes []int) []int {
	ownedBy := func(partition int) (meta.Assignment, bool) {
		a, ok := n.meta.State().Assignment(j.topic, partition)
		return a, ok && a.Owner == owner
	}
	all := slices.DeleteFunc(j.partitionsOf(indexes), func(partition int) bool {
		_, owned := ownedBy(partition)
		return !owned
	})
	moving := func(partition int) bool {
		a, owned := ownedBy(partition)
		return owned && a.Target != ""
	}
	if refused := slices.DeleteFunc(slices.Clone(all), func(partition int) bool { return !moving(partition) }); len(refused) > 0 {
		return refused
	}
	if t, ok := n.lookupTopic(j.topic); ok {
		for partition := range t.info.Partitions {
			if moving(partition) {
				return nil
			}
		}
	}
	return all
}

// partitionsOf lists the partitions the records at indexes are placed in.
func (j *produceJoin) partitionsOf(indexes []int) []int {
	partitions := make([]int, len(indexes))
	for k, i := range indexes {
		partitions[k] = j.placements[i].Partition
	}
	return partitions
}

// rerouteProducePart places the records again, avoiding the owners that
// failed, and sends them.
func (n *Node) rerouteProducePart(j *produceJoin, indexes []int, cause error) {
	t, ok := n.lookupTopic(j.topic)
	if !ok {
		j.parts.Fail(msg.NotFound("topic %q not found", j.topic))
		return
	}
	if t.identity != j.identity { // its placements name partitions of the topic that was deleted
		j.parts.Fail(topicRecreated(j.topic, "produce"))
		return
	}
	for _, i := range indexes {
		rec := j.records[i]
		index, err := n.routeRecord(t, rec, j.placements[i].Partition, j.parts)
		if err != nil {
			j.parts.Fail(cause)
			return
		}
		j.placements[i].Partition = index
	}
	chaos.Reached(chaos.MarkNodeProduceRerouted)
	n.sendProduceParts(j, t, indexes)
}

// topicRecreated refuses a request (a produce part, a consume, a replay)
// placed or routed for a topic deleted and created again under its name:
// the node that routed it, or this one, had not applied that yet.
func topicRecreated(name, request string) error {
	return msg.Unavailable("topic %q was deleted and created again while this %s was on its way to the partition's owner; retry", name, request)
}

// finishProduceJoin answers the client. Parts that succeeded before
// another failed stay written: the client retries, and at-least-once
// allows the duplicates.
func (n *Node) finishProduceJoin(j *produceJoin) {
	if err := j.parts.Err(); err != nil {
		n.replyDurable(j.client, nil, retryableForClient(err))
		return
	}
	n.replyDurable(j.client, msg.ProduceResult{Records: j.placements, Batch: j.batch}, nil)
}

// retryableForClient turns an owner's "not the owner" (views of the
// placement disagreed while it changed) into the retryable 503 a client
// of produce or ack expects; other errors pass.
func retryableForClient(err error) error {
	if msg.CodeOf(err) == msg.CodeNotOwner {
		return msg.Unavailable("the partition is changing owner; retry: %v", err)
	}
	return err
}
