package node

import (
	"maps"
	"slices"

	"narad/meta"
	"narad/storage"
)

// Backlogs after a start. A partition's backlog (its high watermark less
// its committed consumer offset) is in the node's memory only while its
// log is open, or after it closed since the start; a restarted node opens
// a log only when something asks for it. So that the consumer-lag series
// of a partition no one consumes does not vanish at every restart (when
// an alert on it matters most), the node reads, after its start, the two
// small files that hold those figures (storage.PersistedBacklog: the hwm
// file and consumer.offset) of every partition it owns whose log it has
// not opened, at most backlogPeeksPerTick per Tick, without opening
// (recovering) the logs. PartitionBacklogs reports each that holds a
// backlog, as persisted, until its log opens, or the node no longer owns
// it, or its topic is deleted or created again.

// backlogPeeksPerTick bounds how many partitions one Tick reads the
// persisted backlog of (two small file reads each, on the loop): a node
// of 20,000 partitions is through in about 300 ticks.
const backlogPeeksPerTick = 64

// backlogPeeks is the reading of persisted backlogs after the start. Only
// peekBacklogs and PartitionBacklogs change it.
type backlogPeeks struct {
	// listed is set once the partitions to read were listed: at the first
	// Tick, from the applied placement.
	listed bool
	// pending are the partitions still to read, in key order; peekBacklogs
	// reads from its front.
	pending []partitionKey
	// found holds the persisted backlog of each partition read that had
	// one; PartitionBacklogs forgets those whose log has opened since (the
	// log then reports it) and those no longer owned here.
	found map[partitionKey]peekedBacklog
}

// peekedBacklog is a partition's backlog as its files held it.
type peekedBacklog struct {
	// identity is the topic's identity when the files were read: a topic
	// deleted and created again under the name is another topic.
	identity       meta.TopicIdentity
	hwm, committed uint64
}

// peekBacklogs lists the owned partitions at its first call, then reads
// the persisted backlog of up to backlogPeeksPerTick of them.
func (n *Node) peekBacklogs() {
	peeks := &n.backlogPeeks
	if !peeks.listed {
		peeks.listed, peeks.pending = true, n.ownedPartitionKeys()
	}
	count := min(len(peeks.pending), backlogPeeksPerTick)
	for _, key := range peeks.pending[:count] {
		n.peekBacklog(key)
	}
	peeks.pending = peeks.pending[count:]
	if len(peeks.pending) == 0 {
		peeks.pending = nil
	}
}

// ownedPartitionKeys lists the partitions the applied placement gives
// this node, in key order.
func (n *Node) ownedPartitionKeys() []partitionKey {
	var keys []partitionKey
	for _, name := range n.meta.State().TopicNames() {
		t, ok := n.lookupTopic(name)
		if !ok {
			continue
		}
		for index := range t.info.Partitions {
			if n.ownedHere(t, index) {
				keys = append(keys, partitionKey{name, index})
			}
		}
	}
	return keys
}

// peekBacklog reads the persisted backlog of one partition, unless its
// log was opened or closed since the start (the node knows better then)
// or it is no longer owned here. A partition without a backlog, or whose
// files cannot be read or say too little (storage.PersistedBacklog), is
// left out: its log reports it when it opens, and a read error then.
func (n *Node) peekBacklog(key partitionKey) {
	if !n.backlogUnknown(key) {
		return
	}
	hwm, committed, ok, err := storage.PersistedBacklog(n.fs, PartitionDir(key.topic, key.index))
	if err != nil || !ok || hwm == committed {
		return
	}
	if n.backlogPeeks.found == nil {
		n.backlogPeeks.found = map[partitionKey]peekedBacklog{}
	}
	n.backlogPeeks.found[key] = peekedBacklog{identity: n.known[key.topic], hwm: hwm, committed: committed}
}

// backlogUnknown reports whether the node knows key's backlog only from
// its files: the partition is owned here and its log was neither opened
// nor closed since the start (the node knows better then).
func (n *Node) backlogUnknown(key partitionKey) bool {
	t, ok := n.lookupTopic(key.topic)
	if !ok || key.index >= t.info.Partitions || !n.ownedHere(t, key.index) {
		return false
	}
	p, tracked := n.partitions[key]
	return !tracked || (p.log == nil && !p.closedKnown)
}

// peekedBacklogs returns, for PartitionBacklogs, the persisted backlogs
// still standing for partitions whose log has not opened or closed since
// the start, sorted by key, with the lease table's acks and leases when
// the partition has one; it forgets the others.
func (n *Node) peekedBacklogs() []PartitionState {
	found := n.backlogPeeks.found
	var out []PartitionState
	for _, key := range slices.SortedFunc(maps.Keys(found), compareKeys) {
		peeked := found[key]
		if n.known[key.topic] != peeked.identity || !n.backlogUnknown(key) {
			delete(found, key)
			continue
		}
		p, tracked := n.partitions[key]
		state := PartitionState{Dir: PartitionDir(key.topic, key.index), Topic: key.topic, Identity: peeked.identity,
			Partition: key.index, HWM: peeked.hwm, Committed: peeked.committed}
		if tracked && p.leases != nil {
			state.InFlight, state.AckedAhead = p.leases.InFlight(), p.leases.AckedAhead()
			state.Committed = max(peeked.committed, min(p.leases.Committed(), peeked.hwm))
		}
		if state.HWM == state.Committed && state.InFlight == 0 && state.AckedAhead == 0 {
			continue // acked meanwhile: no backlog (lag 0), as for a closed log
		}
		out = append(out, state)
	}
	return out
}
