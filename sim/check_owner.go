package sim

import (
	"fmt"
	"slices"

	"narad/meta"
	"narad/node"
)

// ownerChecker checks single ownership: at no simulated instant do two
// nodes accept writes to one partition. Every append is reported by the
// appending node's observer (its Produced hook), at the instant it
// happens. In a cluster the appender must be the partition's owner in the
// committed metastore at that instant (metaLog): a new owner appends only
// after the flip that made it owner committed, and an old owner must not
// append once it committed (its writes stay frozen until it learns). In
// every world, a partition's appender may change only across a committed
// flip of its ownership, or a creation of its topic again under its name.
// A delete freezes nothing: a node that has not applied it (cut off from
// the metastore, inside its write fence) may still append to a partition
// it owned in the creation the delete removed, and only that node.
type ownerChecker struct {
	w *World
	// last holds, per partition name, the node that appended last and the
	// partition's flip generation at that moment.
	last map[string]appendSeen
	// deletedCreationAppends counts the appends staleAppend excused.
	deletedCreationAppends int
	// describeMismatch is the latest topic description whose owners
	// differed from the committed ones, for the liveness failure.
	describeMismatch string
}

type appendSeen struct {
	node       string
	generation int
	// identity is the committed topic's identity: a topic created again
	// under its name is placed anew, with no flip between the creations.
	identity meta.TopicIdentity
}

func newOwnerChecker(w *World) *ownerChecker {
	return &ownerChecker{w: w, last: map[string]appendSeen{}}
}

// appended records that node n appended a record to a partition now.
func (o *ownerChecker) appended(n *simNode, topic string, partition int) {
	name := partitionName(topic, partition)
	if o.staleAppend(n, topic, partition) {
		return
	}
	seen := appendSeen{node: n.id, generation: o.w.metaLog.generations[name], identity: o.w.metaLog.identities[topic]}
	if previous, ok := o.last[name]; ok && previous.node != n.id && previous.generation == seen.generation && previous.identity == seen.identity {
		o.w.fail("single-owner", "%s appended to %s after %s did, and its ownership did not change in between", n.id, name, previous.node)
		return
	}
	o.last[name] = seen
	if !o.w.clustered() {
		return
	}
	if owner := o.w.metaLog.owner(topic, partition); owner != n.id {
		o.w.fail("single-owner", "%s appended to %s, but the committed metastore says %q owns it", n.id, name, owner)
	}
}

// staleAppend reports whether n's append went to a creation of the topic
// that a committed delete removed, and n has not applied that delete but
// had applied the entry that made it the partition's owner then. Such an
// append is not compared with the appenders of the committed creation: it
// writes a removed one, whose directory n deletes when it applies the
// delete. It must come within the node's write fence: its last applied
// heartbeat was sent before the delete committed, so less than half of
// MemberDeadAfterMs after the commit (docs/api.md, delete a topic), on
// the node's clock, which a restart may have set back by up to the
// world's clock spread.
func (o *ownerChecker) staleAppend(n *simNode, topic string, partition int) bool {
	deletions := o.w.metaLog.deletions[topic]
	if len(deletions) == 0 {
		return false
	}
	applied := n.node.MetaAppliedIndex()
	for _, deletion := range deletions {
		if deletion.index <= applied {
			continue
		}
		if partition >= len(deletion.owners) || deletion.owners[partition] != n.id || deletion.ownedSince[partition] > applied {
			return false
		}
		fenceMs := clusterMemberDeadAfterMs/2 + o.w.clockSkew.spreadMs()
		if sinceMs := o.w.nowMs - deletion.committedMs; sinceMs >= fenceMs {
			o.w.fail("single-owner", "%s appended to %s/%d %d ms after the delete of its creation committed, past its write fence (%d ms)",
				n.id, topic, partition, sinceMs, fenceMs)
		}
		o.deletedCreationAppends++
		return true
	}
	return false
}

// judgeOwners compares the owners a topic description returned (from the
// replica of the node asked) with the committed ones: once faults stopped
// and no move is under way, every replica must catch up with them. A
// mismatch is retried; it is remembered for the failure report.
func (o *ownerChecker) judgeOwners(c *call, owners []string) bool {
	committed := o.w.metaLog.owners(o.w.topic)
	if !slices.Equal(owners, committed) {
		o.describeMismatch = fmt.Sprintf("%s says the owners are %v, the committed ones are %v", c.target.id, owners, committed)
		return false
	}
	return true
}

// ownerCount is how many distinct nodes own partitions of the topic.
func (o *ownerChecker) ownerCount() int {
	distinct := slices.Clone(o.w.metaLog.owners(o.w.topic))
	slices.Sort(distinct)
	return len(slices.Compact(distinct))
}

// nodeObserver is a node's observer in the simulator: it reports appends
// to the single-owner checkers (node.AppendObserver), applied acks to the
// ack checker (node.AckObserver) and the ends of moves and freezes to the
// moves scenario (node.MoveObserver), and ignores the rest.
type nodeObserver struct {
	node.NopObserver
	n *simNode
}

var (
	_ node.AppendObserver = nodeObserver{}
	_ node.MoveObserver   = nodeObserver{}
	_ node.AckObserver    = nodeObserver{}
)

// Appended is one record appended by the node, before it is durable.
func (o nodeObserver) Appended(topic string, partition int, offset uint64) {
	o.n.w.owners.appended(o.n, topic, partition)
	o.n.w.writers.appended(o.n, topic, partition, offset)
}

// Event is something an operator would see in the node's log: traced,
// unless it repeats the node's previous event of that kind word for word
// (a refusal retried every planning round would bury the trace).
func (o nodeObserver) Event(kind, detail string) {
	if kind == "stale-partition-removed" {
		o.n.w.staleCreationsRemoved++
	}
	key := o.n.id + " " + kind
	if o.n.w.lastEvents[key] == detail {
		return
	}
	o.n.w.lastEvents[key] = detail
	o.n.w.tracef("%s event %s: %s", o.n.id, kind, detail)
}

// MoveEnded is a move into the node that completed, was force-promoted
// or aborted.
func (o nodeObserver) MoveEnded(outcome string, durationMs, bytesCopied int64) {
	o.n.w.tracef("%s move ended: %s after %d ms, %d bytes copied", o.n.id, outcome, durationMs, bytesCopied)
	o.n.w.moveStats.ended(outcome)
}

// MoveCopied is bytes a move into the node copied.
func (o nodeObserver) MoveCopied(bytes int64) { o.n.w.moveStats.bytesCopied += bytes }

// FreezeEnded is a freeze the node held for a move, over.
func (o nodeObserver) FreezeEnded(durationMs int64) {
	o.n.w.tracef("%s freeze ended after %d ms", o.n.id, durationMs)
	o.n.w.moveStats.freezes = append(o.n.w.moveStats.freezes, durationMs)
}
