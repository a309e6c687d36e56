package node

import (
	"narad/msg"
	"slices"

	"narad/node/lease"
)

// replayRouted serves a replay here or at the partition's owner.
func (n *Node) replayRouted(id msg.RequestID, r msg.Replay) {
	t, err := n.topic(r.Topic)
	if err != nil || r.Partition < 0 || r.Partition >= t.info.Partitions || n.ownedHere(t, r.Partition) || localOnly(id) {
		n.answer(id)(n.replay(r))
		return
	}
	owner := t.owner(r.Partition)
	if !n.ownerAvailable(owner, nil) {
		n.reply(id, nil, msg.Unavailable("partition %d of %s is unavailable (owner %s is down or unreachable); retry", r.Partition, r.Topic, owner))
		return
	}
	r.TopicIncarnation, r.TopicCreatedAtMs = t.identity.Incarnation, t.identity.CreatedAtMs
	n.forward(owner, r, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) { n.passThrough(id, reply) })
}

// ackJoin is an ack whose handles belong to partitions of several owners:
// each owner gets its handles as one batch; results keep request order.
type ackJoin struct {
	client  msg.RequestID
	results []msg.AckItemResult
	batch   bool
	// pending counts the owners yet to answer.
	pending int
}

// ackRouted applies acks of this node's partitions here and sends the
// others to their owners.
func (n *Node) ackRouted(id msg.RequestID, r msg.Ack) {
	t, err := n.topic(r.Topic)
	if err == nil && (len(r.Handles) == 0 || len(r.Handles) > msg.AckBatchHandlesMax) {
		err = msg.Invalid("an ack carries 1 to %d receipt handles, got %d", msg.AckBatchHandlesMax, len(r.Handles))
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	byOwner := n.handlesByOwner(t, r.Handles)
	if len(byOwner) == 0 || localOnly(id) {
		n.answer(id)(n.ack(r))
		return
	}
	n.ackAcross(id, t, r, byOwner)
}

// handlesByOwner maps each other owner to the indexes of its handles;
// handles of this node's partitions and malformed ones stay out. The map
// is nil when every handle stays here (no allocation for a local ack).
func (n *Node) handlesByOwner(t *topic, handles []string) map[string][]int {
	var byOwner map[string][]int
	for i, handle := range handles {
		index, _, _, err := lease.ParseHandle(handle)
		if err != nil {
			continue
		}
		owner, elsewhere := n.ackRoute(t, index)
		if !elsewhere {
			continue
		}
		if byOwner == nil {
			byOwner = map[string][]int{}
		}
		byOwner[owner] = append(byOwner[owner], i)
	}
	return byOwner
}

// ackRoute names the node a handle of partition index is acked at, when
// not this one: its owner, or for a partition this replica does not have,
// the metastore's leader, which knows every growth of the topic and
// answers 410 when the handle names a partition the topic never had (a
// larger creation's, deleted since, or a forged one), where a follower
// can only tell its client to retry (it may lag behind a growth).
func (n *Node) ackRoute(t *topic, index int) (string, bool) {
	if index < t.info.Partitions {
		return t.owner(index), !n.ownedHere(t, index)
	}
	leader, known := n.meta.Leader()
	return leader, known && leader != n.cfg.NodeID
}

// ackAcross applies the local handles and forwards the rest.
func (n *Node) ackAcross(id msg.RequestID, t *topic, r msg.Ack, byOwner map[string][]int) {
	j := &ackJoin{client: id, results: make([]msg.AckItemResult, len(r.Handles)), batch: r.Batch}
	remote := map[int]bool{}
	for _, indexes := range byOwner { //determinism:ok only fills a set
		for _, i := range indexes {
			remote[i] = true
		}
	}
	local := false
	var applied localAcks
	for i, handle := range r.Handles {
		if !remote[i] {
			index, freed, err := n.ackOne(t, handle, r.Action)
			j.results[i] = msg.AckItemResult{Handle: handle, Err: err}
			local = true
			applied.note(index, freed)
		}
	}
	if local {
		n.afterLocalAcks(t, r.Action, applied)
	}
	owners := make([]string, 0, len(byOwner))
	for owner := range byOwner { //determinism:ok sorted below
		owners = append(owners, owner)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		n.sendAckPart(j, owner, r, byOwner[owner])
	}
}

// sendAckPart sends an owner its handles; a failure of the whole part is
// each handle's failure.
func (n *Node) sendAckPart(j *ackJoin, owner string, r msg.Ack, indexes []int) {
	part := msg.Ack{Topic: r.Topic, Action: r.Action, Batch: true, Handles: make([]string, len(indexes))}
	for k, i := range indexes {
		part.Handles[k] = r.Handles[i]
	}
	j.pending++
	n.forward(owner, part, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
		result, ok := reply.Result.(msg.AckResult)
		for k, i := range indexes {
			item := msg.AckItemResult{Handle: r.Handles[i], Err: reply.Err}
			if reply.Err == nil && ok && k < len(result.Results) {
				item.Err = result.Results[k].Err
			} else if reply.Err == nil {
				item.Err = msg.Internal("node %s answered an ack with %T", owner, reply.Result)
			}
			if item.Err != nil {
				item.Err = retryableForClient(item.Err)
			}
			j.results[i] = item
		}
		j.pending--
		if j.pending == 0 {
			n.finishAckJoin(j)
		}
	})
}

func (n *Node) finishAckJoin(j *ackJoin) {
	result := msg.AckResult{Results: j.results, Batch: j.batch}
	if !j.batch {
		n.reply(j.client, result, result.Results[0].Err)
		return
	}
	n.reply(j.client, result, nil)
}

// statsJoin gathers the partition stats of a topic from its owners.
type statsJoin struct {
	client  msg.RequestID
	detail  msg.TopicDetail
	pending int
}

// getTopicRouted describes a topic: this node's partitions from its own
// logs, the others' from their owners. An owner that is down or does not
// answer leaves its partitions "available": false.
func (n *Node) getTopicRouted(id msg.RequestID, r msg.GetTopic) {
	result, err := n.getTopic(r)
	if err != nil || localOnly(id) {
		n.reply(id, result, err)
		return
	}
	j := &statsJoin{client: id, detail: result.(msg.TopicDetail)}
	for _, owner := range n.statsOwners(j.detail) {
		j.pending++
		n.forward(owner, r, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
			if other, ok := reply.Result.(msg.TopicDetail); ok && reply.Err == nil {
				j.merge(owner, other)
			}
			j.pending--
			if j.pending == 0 {
				n.reply(j.client, j.detail, nil)
			}
		})
	}
	if j.pending == 0 {
		n.reply(id, j.detail, nil)
	}
}

// statsOwners lists the other owners of the described partitions that may
// be asked now, sorted.
func (n *Node) statsOwners(detail msg.TopicDetail) []string {
	var owners []string
	for _, stats := range detail.PartitionStats {
		owner := stats.OwnerNode
		if owner != n.cfg.NodeID && !slices.Contains(owners, owner) && n.ownerAvailable(owner, nil) {
			owners = append(owners, owner)
		}
	}
	slices.Sort(owners)
	return owners
}

// merge takes the stats of the partitions owner serves.
func (j *statsJoin) merge(owner string, other msg.TopicDetail) {
	for _, stats := range other.PartitionStats {
		for i := range j.detail.PartitionStats {
			mine := &j.detail.PartitionStats[i]
			if mine.Index == stats.Index && mine.OwnerNode == owner && stats.OwnerNode == owner && stats.Available {
				*mine = stats
			}
		}
	}
}
