package node

import (
	"fmt"

	"narad/invariant"
	"narad/meta"
	"narad/msg"
)

const topicsDir = "topics"

// topicCursors are a topic's in-memory cursors on this node.
type topicCursors struct {
	// produce is the partition keyless records went to in round
	// produceRound; the next round moves it on by one.
	produce      int
	produceRound uint64
	// consume is where the next consume starts looking.
	consume int
	// consumes counts the unpinned consumes of clients this node served
	// with other owners to ask: every remoteFirstEvery-th asks them first
	// (consume.go), unless the last such round found nothing there less
	// than remoteBackoffMs ago (remoteQuietUntilMs): remoteBackoffMs
	// doubles with each empty round, up to remoteBackoffMsMax, and a round
	// that finds records there resets it.
	consumes           uint64
	remoteQuietUntilMs int64
	remoteBackoffMs    int64
}

// topic is a topic as the metastore's applied state has it, with this
// node's cursors. It is built per request; only the cursors persist
// between requests (in Node.cursors).
type topic struct {
	info        msg.TopicInfo
	assignments []meta.Assignment
	cursors     *topicCursors
	// schemaID is the id of the latest schema version, 0 for none.
	schemaID uint64
	// attachEpoch is the child's attach epoch (meta.TopicRecord's), 0
	// for a topic without a parent.
	attachEpoch uint64
	// identity is meta.TopicRecord's: it tells this topic from one
	// deleted and created again under its name.
	identity meta.TopicIdentity
}

// lookupTopic reads a topic from the local replica of the metastore,
// through topicCache. The topic returned must not be changed.
func (n *Node) lookupTopic(name string) (*topic, bool) {
	if version := n.meta.State().TopicsVersion(); n.topicCache == nil || version != n.topicCacheVersion {
		n.topicCache, n.topicCacheVersion = map[string]*topic{}, version
	}
	if t, ok := n.topicCache[name]; ok {
		return t, true
	}
	record, ok := n.meta.State().Topic(name)
	if !ok {
		return nil, false
	}
	cursors := n.cursors[name]
	if cursors == nil {
		cursors = &topicCursors{}
		n.cursors[name] = cursors
	}
	latest, _ := record.LatestSchema()
	t := &topic{info: topicInfoOf(record), assignments: record.Assignments, cursors: cursors, schemaID: latest.ID, attachEpoch: record.AttachEpoch, identity: record.Identity()}
	n.topicCache[name] = t
	return t, true
}

// creationOf is the creation of topicName this node's replica shows (zero
// when it shows none): what a move's requests and its end name.
func (n *Node) creationOf(topicName string) meta.TopicIdentity {
	if t, ok := n.lookupTopic(topicName); ok {
		return t.identity
	}
	return meta.TopicIdentity{}
}

func topicInfoOf(r meta.TopicRecord) msg.TopicInfo {
	info := msg.TopicInfo{
		Name: r.Name, Partitions: r.Partitions, RetentionMs: r.RetentionMs,
		VisibilityTimeoutMs: r.VisibilityTimeoutMs, InFlightMax: r.MaxInFlightPerPartition,
		AckedAheadMax: r.MaxAckedAheadPerPartition, CreatedAt: r.CreatedAtMs / 1000, Owner: r.CreatedBy,
		SchemaVersion: latestSchemaVersion(r), MaxDeliveries: r.MaxDeliveries, DeadLetterTopic: r.DeadLetterTopic,
		Children: childNamesOf(r), Parent: r.Parent,
		FanoutDelayMs: r.FanoutDelayMs, AttachEpoch: attachEpochText(r.AttachEpoch),
	}
	if role := r.Role(); role != meta.RoleStandalone {
		info.Role = role
	}
	return info
}

// childNamesOf lists a parent's children (nil for any other topic).
func childNamesOf(r meta.TopicRecord) []string {
	var names []string
	for _, link := range r.Children {
		names = append(names, link.Name)
	}
	return names
}

// attachEpochText shows an attach epoch as 16 hex digits; "" for none.
func attachEpochText(epoch uint64) string {
	if epoch == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", epoch)
}

// owner is the node that serves a partition now.
func (t *topic) owner(index int) string {
	if index >= len(t.assignments) { // not invariant.Check(...): its arguments would be boxed on every call
		invariant.Broken("node: topic %s has %d assignments, partition %d asked", t.info.Name, len(t.assignments), index)
	}
	return t.assignments[index].Owner
}

// ownedHere reports whether this node serves partition index of t. Only
// the owner may write a partition or serve its queue: the single-owner
// invariant. (Forwarding to other owners arrives with the cluster; until
// then a request for another node's partition is answered 421.)
func (n *Node) ownedHere(t *topic, index int) bool {
	return t.owner(index) == n.cfg.NodeID
}

func notOwner(t *topic, index int) *msg.Error {
	return msg.NotOwner("partition %d of %s is owned by %s", index, t.info.Name, t.owner(index))
}
