package node

import (
	"narad/msg"
	"slices"

	"narad/chaos"
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
	// pending counts the parts in flight; the reply leaves at zero.
	pending int
	// excludedOwners holds the owners that did not answer a part, and
	// excludedPartitions the partitions whose owner refused one (frozen,
	// not the owner any more, storage failed): re-placed records avoid
	// both.
	excludedOwners     map[string]bool
	excludedPartitions map[int]bool
	// reroutes counts re-placements, bounded by produceReroutesMax.
	reroutes int
	// err is the first failure no re-placement could fix.
	err error
}

// produceAcross sends each owner its part of the request.
func (n *Node) produceAcross(id msg.RequestID, t *topic, r msg.Produce, placements []msg.Placement) {
	chaos.Reached("node-produce-forwarded")
	j := &produceJoin{client: id, topic: t.info.Name, records: r.Records, placements: placements,
		batch: r.Batch, excludedOwners: map[string]bool{}, excludedPartitions: map[int]bool{}}
	indexes := make([]int, len(r.Records))
	for i := range indexes {
		indexes[i] = i
	}
	n.sendProduceParts(j, t, indexes)
}

// sendProduceParts groups the given records by owner and sends each group
// as one request with explicit partitions, served locally only.
func (n *Node) sendProduceParts(j *produceJoin, t *topic, indexes []int) {
	byOwner := map[string][]int{}
	for _, i := range indexes {
		owner := t.owner(j.placements[i].Partition)
		byOwner[owner] = append(byOwner[owner], i)
	}
	owners := make([]string, 0, len(byOwner))
	for owner := range byOwner { //determinism:ok sorted below
		owners = append(owners, owner)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		part := j.part(byOwner[owner])
		done := func(reply msg.Reply) { n.producePartAnswered(j, owner, byOwner[owner], reply) }
		j.pending++
		if owner == n.cfg.NodeID {
			n.handleInternal(part, done)
		} else {
			n.forwardProducePart(owner, part, done)
		}
	}
}

// produceForwardKey names the produce forward of one owner and topic.
type produceForwardKey struct{ owner, topic string }

// produceForward is one ForwardRequest that carries, as one batch
// produce, every produce part this node sends one owner for one topic in
// the Ready being built: the owner serves them in one loop round, and
// answers them with one reply, which is split back into the parts'.
type produceForward struct {
	// id is the forward's id; index is where its envelope is in
	// n.messages while the Ready is built.
	id    uint64
	index int
	// records and payloadBytes size the batch; they stay within
	// ProduceBatchRecordsMax and ProduceBatchBytesMax.
	records, payloadBytes int
	// parts are the parts carried, in batch order.
	parts []produceForwardPart
}

// produceForwardPart is one part of a produceForward: its first records
// of the batch and its continuation.
type produceForwardPart struct {
	records int
	done    func(msg.Reply)
}

// forwardProducePart sends a produce part to owner, in the forward to that
// owner and topic of this Ready when the batch has room, else in a new one.
func (n *Node) forwardProducePart(owner string, part msg.Produce, done func(msg.Reply)) {
	key := produceForwardKey{owner: owner, topic: part.Topic}
	payloadBytes := 0
	for _, rec := range part.Records {
		payloadBytes += len(rec.Payload)
	}
	f := n.routing.produceForwards[key]
	if f == nil || f.records+len(part.Records) > msg.ProduceBatchRecordsMax || f.payloadBytes+payloadBytes > msg.ProduceBatchBytesMax {
		f = &produceForward{index: len(n.messages)}
		f.id = n.forward(owner, msg.Produce{Topic: part.Topic, Batch: true}, n.cfg.ForwardTimeoutMs, f.answered)
		n.routing.produceForwards[key] = f
	} else {
		chaos.Reached("node-produce-forwards-joined")
	}
	envelope := &n.messages[f.index]
	request, ok := envelope.Message.(msg.ForwardRequest)
	assert(ok && request.ID == f.id && envelope.To == owner, "node: produce forward %d is not at message %d", f.id, f.index)
	batch := request.Request.(msg.Produce)
	batch.Records = append(batch.Records, part.Records...)
	request.Request = batch
	envelope.Message = request
	f.records += len(part.Records)
	f.payloadBytes += payloadBytes
	f.parts = append(f.parts, produceForwardPart{records: len(part.Records), done: done})
}

// answered splits the owner's reply into the parts': each gets its own
// placements, or the batch's error (a reply of the wrong shape goes to
// every part as is, which refuses it).
func (f *produceForward) answered(reply msg.Reply) {
	result, ok := reply.Result.(msg.ProduceResult)
	if reply.Err != nil || !ok || len(result.Records) != f.records {
		for _, part := range f.parts {
			part.done(reply)
		}
		return
	}
	start := 0
	for _, part := range f.parts {
		records := result.Records[start : start+part.records]
		start += part.records
		part.done(msg.Reply{Result: msg.ProduceResult{Records: records, Batch: true}})
	}
}

// part builds the request for the records at indexes.
func (j *produceJoin) part(indexes []int) msg.Produce {
	records := make([]msg.ProduceRecord, len(indexes))
	for k, i := range indexes {
		records[k] = j.records[i]
		records[k].Partition = j.placements[i].Partition
	}
	return msg.Produce{Topic: j.topic, Records: records, Batch: true}
}

// producePartAnswered records a part's outcome; a retryable failure
// re-places the part's records away from that owner when none is pinned.
func (n *Node) producePartAnswered(j *produceJoin, owner string, indexes []int, reply msg.Reply) {
	j.pending--
	switch {
	case reply.Err == nil:
		result, ok := reply.Result.(msg.ProduceResult)
		if !ok || len(result.Records) != len(indexes) {
			j.fail(msg.Internal("node %s answered a produce part with %T", owner, reply.Result))
			break
		}
		for k, i := range indexes {
			j.placements[i] = result.Records[k]
		}
	case retryable(reply.Err) && j.reroutes < produceReroutesMax && j.err == nil:
		j.reroutes++
		j.exclude(owner, n.peerReachable(owner), indexes)
		n.rerouteProducePart(j, indexes, reply.Err)
	default:
		j.fail(reply.Err)
	}
	if j.pending == 0 {
		n.finishProduceJoin(j)
	}
}

// rerouteProducePart places the records again, avoiding the owners that
// failed, and sends them.
func (n *Node) rerouteProducePart(j *produceJoin, indexes []int, cause error) {
	t, ok := n.lookupTopic(j.topic)
	if !ok {
		j.fail(msg.NotFound("topic %q not found", j.topic))
		return
	}
	for _, i := range indexes {
		rec := j.records[i]
		index, err := n.routeRecord(t, rec, j.placements[i].Partition, j.excludedOwners, j.excludedPartitions)
		if err != nil {
			j.fail(cause)
			return
		}
		j.placements[i].Partition = index
	}
	chaos.Reached("node-produce-rerouted")
	n.sendProduceParts(j, t, indexes)
}

// exclude keeps re-placed records away from what failed: the owner when
// it did not answer (its forward timed out, so it is marked down), else
// only the partitions it refused.
func (j *produceJoin) exclude(owner string, answered bool, indexes []int) {
	if !answered {
		j.excludedOwners[owner] = true
		return
	}
	for _, i := range indexes {
		j.excludedPartitions[j.placements[i].Partition] = true
	}
}

func (j *produceJoin) fail(err error) {
	if j.err == nil {
		j.err = err
	}
}

// finishProduceJoin answers the client. Parts that succeeded before
// another failed stay written: the client retries, and at-least-once
// allows the duplicates.
func (n *Node) finishProduceJoin(j *produceJoin) {
	if j.err != nil {
		n.reply(j.client, nil, retryableForClient(j.err))
		return
	}
	n.reply(j.client, msg.ProduceResult{Records: j.placements, Batch: j.batch}, nil)
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
