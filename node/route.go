package node

import (
	"sort"

	"narad/chaos"
	"narad/invariant"
	"narad/msg"
	"narad/node/route"
)

// ownerAvailable reports whether writes to a partition owned by owner may
// be sent there now: the owner is not excluded by the request's join (nil
// when there is none), is an alive member, and has not just let a forward
// time out.
func (n *Node) ownerAvailable(owner string, join *route.Join) bool {
	if join != nil && join.OwnerExcluded(owner) {
		return false
	}
	if owner == n.cfg.NodeID {
		return n.writable() == nil
	}
	member, ok := n.meta.State().Member(owner)
	return ok && member.Alive && n.peerReachable(owner)
}

// diskLowElsewhere reports whether owner is another node whose last
// applied heartbeat said its disk is under its reserve. The view may be a
// heartbeat interval old, so it only steers keyless records; a record
// pinned by partition or key is sent to its owner, which answers for
// itself (a keyed one refused there moves on: routeRecord).
func (n *Node) diskLowElsewhere(owner string) bool {
	if owner == n.cfg.NodeID {
		return false
	}
	member, ok := n.meta.State().Member(owner)
	return ok && member.DiskLow
}

// refusesWrites is why owner refuses writes when it is this node (a stale
// heartbeat, or a disk under its reserve: writable), for the answer to a
// record that could go nowhere else; nil for another node, whose reason
// this one cannot know.
func (n *Node) refusesWrites(owner string) error {
	if owner != n.cfg.NodeID {
		return nil
	}
	return n.writable()
}

// routeRecord picks the partition of a record that may be sent to any
// owner: the preferred one when its owner is available, else the next
// available one in ring order. A record pinned by an explicit partition
// never moves. A record pinned by its key moves only off a partition that
// is frozen for a move or that its live owner refused (a produce never
// waits on a freeze); when the partition's owner is dead or unreachable it
// gets a prompt Unavailable instead: rerouting it would split the key's
// records over two partitions for as long as the owner is gone, and the
// client can retry as cheaply as the node could reroute. join, when set,
// is the request's join, whose exclusions are avoided.
func (n *Node) routeRecord(t *topic, rec msg.ProduceRecord, preferred int, join *route.Join) (int, error) {
	usable := func(index int) bool {
		excluded := join != nil && join.PartitionExcluded(index)
		return !excluded && !n.frozen(t, index) && n.ownerAvailable(t.owner(index), join)
	}
	if rec.Partition != msg.PartitionNone {
		if !usable(rec.Partition) {
			if n.frozen(t, rec.Partition) { // a freeze here, at the owner: not a dead one
				return 0, frozenError(t, rec.Partition)
			}
			if err := n.refusesWrites(t.owner(rec.Partition)); err != nil {
				return 0, err
			}
			return 0, msg.Unavailable("partition %d of %s is unavailable (owner %s is down or unreachable); retry", rec.Partition, t.info.Name, t.owner(rec.Partition))
		}
		return rec.Partition, nil
	}
	if owner := t.owner(preferred); len(rec.Key) > 0 && !n.ownerAvailable(owner, join) {
		chaos.Reached(chaos.MarkNodeKeyedProduceOwnerDown)
		if err := n.refusesWrites(owner); err != nil {
			return 0, err
		}
		return 0, msg.Unavailable("partition %d of %s, where the key belongs, is unavailable (owner %s is down or unreachable%s); retry", preferred, t.info.Name, owner, n.notServingNote())
	}
	index, ok := route.RingNext(preferred, t.info.Partitions, usable)
	if ok && len(rec.Key) == 0 && n.diskLowElsewhere(t.owner(index)) {
		// a keyless record avoids an owner whose disk the metastore says is
		// under its reserve, when another may take it: the owner would
		// refuse it and the record come back for another try
		roomy := func(index int) bool { return usable(index) && !n.diskLowElsewhere(t.owner(index)) }
		if roomier, found := route.RingNext(index, t.info.Partitions, roomy); found {
			chaos.Reached(chaos.MarkNodeKeylessAvoidsLowDisk)
			index = roomier
		}
	}
	if !ok {
		if err := n.writable(); err != nil && len(n.ownersElsewhere(t, false)) == 0 {
			return 0, err // this node owns every partition: say why it refuses
		}
		return 0, msg.Unavailable("no partition of %s is available (every owner is down or unreachable%s); retry", t.info.Name, n.notServingNote())
	}
	if index < 0 || index >= t.info.Partitions { // guarded: the arguments would allocate on every record
		invariant.Broken("node: record of %s routed to partition %d of %d", t.info.Name, index, t.info.Partitions)
	}
	return index, nil
}

// notServingNote says, for an answer that finds every owner out of reach,
// when the cause may be this node itself: one starting up (no leader known
// yet, its peers not yet connected) sees the others as unreachable.
func (n *Node) notServingNote() string {
	if err := n.Serving(); err != nil {
		return "; this node is not serving yet: " + err.Error()
	}
	return ""
}

// remoteOwners lists the other nodes that own partitions of t (the pinned
// partition only, when pinned >= 0) and may be asked now, sorted and then
// rotated by the topic's consume cursor so probes spread over owners.
func (n *Node) remoteOwners(t *topic) []string { return n.ownersElsewhere(t, true) }

// ownersElsewhere lists the other nodes that own partitions of t, those that
// may be asked now only when available is set, sorted and then rotated
// by the topic's consume cursor.
func (n *Node) ownersElsewhere(t *topic, available bool) []string {
	seen := map[string]bool{}
	var owners []string
	for index := range t.info.Partitions {
		owner := t.owner(index)
		if owner == n.cfg.NodeID || seen[owner] || (available && !n.ownerAvailable(owner, nil)) {
			continue
		}
		seen[owner] = true
		owners = append(owners, owner)
	}
	sort.Strings(owners)
	if len(owners) > 1 {
		shift := t.cursors.consume % len(owners)
		owners = append(owners[shift:], owners[:shift]...)
	}
	return owners
}

// retryable reports whether a part's failure may be retried elsewhere.
func retryable(err error) bool {
	switch msg.CodeOf(err) {
	case msg.CodeUnavailable, msg.CodeNotOwner:
		return true
	}
	return false
}
