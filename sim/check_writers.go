package sim

import (
	"slices"
	"strings"
)

// writerChecker is the strong single-owner checker: after every step, at
// most one node answers AcceptsWrites for a partition (a frozen or fenced
// source answers false; a destination that applied the flip answers
// true). It also fails the run when a node appends to a partition it
// keeps frozen at that moment.
type writerChecker struct {
	w *World
	// accepting[node index][partition] is the node's AcceptsWrites answer
	// after the last step that touched it; all false while it is down.
	// Rows are added as nodes are; only afterStep changes them.
	accepting [][]bool
	// names[partition] is partitionName of the topic's partition, built
	// with the first row (the partition count is fixed after setup).
	names []string
	// contested[partition][node index] says whether the node is one of the
	// partition's past owners when it had more than one (all false when
	// it had one): the metaLog's pastOwners as of its version
	// contestedVersion and the nodes of contestedNodes, looked up once
	// per change instead of by name for every partition of every touched
	// node after every step.
	contested        [][]bool
	contestedVersion int
	contestedNodes   int
}

func newWriterChecker(w *World) *writerChecker { return &writerChecker{w: w} }

// afterStep asks the touched nodes again and checks every partition that
// one of them accepts writes for.
func (c *writerChecker) afterStep(touched []*simNode) {
	if !c.w.clustered() || c.w.partitions == 0 {
		return
	}
	for len(c.names) < c.w.partitions {
		c.names = append(c.names, partitionName(c.w.topic, len(c.names)))
	}
	for len(c.accepting) < len(c.w.nodes) {
		c.accepting = append(c.accepting, make([]bool, c.w.partitions))
	}
	if c.contested == nil || c.contestedVersion != c.w.metaLog.pastOwnersVersion || c.contestedNodes != len(c.w.nodes) {
		c.findContested()
	}
	for _, n := range touched {
		c.refresh(n)
	}
	for _, n := range touched {
		for partition, accepts := range c.accepting[n.index] {
			if accepts {
				c.checkPartition(partition)
			}
		}
	}
}

// findContested sets contested from the metaLog's past owners.
func (c *writerChecker) findContested() {
	c.contested = make([][]bool, c.w.partitions)
	c.contestedVersion, c.contestedNodes = c.w.metaLog.pastOwnersVersion, len(c.w.nodes)
	for partition, name := range c.names {
		c.contested[partition] = make([]bool, len(c.w.nodes))
		if past := c.w.metaLog.pastOwners[name]; len(past) > 1 {
			for _, n := range c.w.nodes {
				c.contested[partition][n.index] = slices.Contains(past, n.id)
			}
		}
	}
}

// refresh records what n answers now. Only the partitions that had more
// than one owner in the committed log are asked, and only of their past
// owners: a replica's placement is a committed prefix, so no other node
// can believe it owns one, and a partition that never moved has one
// candidate writer.
func (c *writerChecker) refresh(n *simNode) {
	row := c.accepting[n.index]
	for partition := range row {
		row[partition] = n.up() && c.contested[partition][n.index] && n.node.AcceptsWrites(c.w.topic, partition)
	}
}

// checkPartition fails the run when two nodes accept writes to it.
func (c *writerChecker) checkPartition(partition int) {
	var writers []string
	for _, n := range c.w.nodes {
		if c.accepting[n.index][partition] {
			writers = append(writers, n.id)
		}
	}
	if len(writers) > 1 {
		a := c.w.metaLog.assignment(c.w.topic, partition)
		c.w.fail("single-writer", "%s all accept writes to %s (committed: %+v)",
			strings.Join(writers, " and "), partitionName(c.w.topic, partition), a)
	}
}

// appended checks, at the instant a node appends a record, that the node
// does not keep that partition frozen for a move. FrozenPartitions only
// reads the node's state, so asking it from inside the node's own call is
// safe.
func (c *writerChecker) appended(n *simNode, topic string, partition int, offset uint64) {
	if c.w.opts.BlackBox || !n.up() {
		return
	}
	for _, frozen := range n.node.FrozenPartitions() {
		if frozen.Topic == topic && frozen.Partition == partition {
			c.w.fail("frozen-accepts-no-produce", "%s appended offset %d to %s while frozen for the move to %s",
				n.id, offset, partitionName(topic, partition), frozen.Target)
			return
		}
	}
}
