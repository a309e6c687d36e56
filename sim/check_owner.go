package sim

import (
	"fmt"
	"slices"

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
// flip of its ownership.
type ownerChecker struct {
	w *World
	// last holds, per partition name, the node that appended last and the
	// partition's flip generation at that moment.
	last map[string]appendSeen
	// describeMismatch is the latest topic description whose owners
	// differed from the committed ones, for the liveness failure.
	describeMismatch string
}

type appendSeen struct {
	node       string
	generation int
}

func newOwnerChecker(w *World) *ownerChecker {
	return &ownerChecker{w: w, last: map[string]appendSeen{}}
}

// appended records that node n appended a record to a partition now.
func (o *ownerChecker) appended(n *simNode, topic string, partition int) {
	name := partitionName(topic, partition)
	seen := appendSeen{node: n.id, generation: o.w.metaLog.generations[name]}
	if previous, ok := o.last[name]; ok && previous.node != n.id && previous.generation == seen.generation {
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
// to the single-owner checker and ignores the rest.
type nodeObserver struct {
	node.NopObserver
	n *simNode
}

func (o nodeObserver) Produced(topic string, partition int, records int, bytes int64) {
	o.n.w.owners.appended(o.n, topic, partition)
}
