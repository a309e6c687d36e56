package node

import "narad/msg"

// Reads of a round. A consume reply holds up to ConsumeReplyBytesMax of
// records read from disk, and one round (the inputs between two Readys)
// takes up to a thousand requests: without a bound of their own, a
// round of large consumes read gigabytes into memory before the driver's
// reply budget could refuse any of them. The node counts the payload
// bytes its reserves and replays read in the round (reserve, replay) and
// stops at Config.RoundReadBytesMax: a consume or replay that would read
// more is refused with a 503 (readsSpent, spentReads; a round of a
// thousand replays of 1 MiB records read a gigabyte before replays
// counted), and a parked poll that stops there is looked at again at the
// next Tick (the partition it is pinned to, or its topic's unpinned
// polls, go into reads.capped), as are the polls parked on other nodes
// whose probe was refused (through their subscriptions: tellPollsOf). One
// message alone always fits a reply, so a round reads at most the bound
// plus one record per consume or replay that started under it.

// roundReads is what this round's consumes and replays read. Only
// readBudget, reserve, replay, readsSpent and wakeReadsCapped change it.
type roundReads struct {
	// round is the node's round these counts are of; bytes the payload
	// bytes read in it.
	round uint64
	bytes int
	// capped holds the polls that found the round's reads spent, by the
	// partition they are pinned to (msg.PartitionNone: the unpinned polls
	// of the topic): told at the next Tick (wakeReadsCapped).
	capped partitionsToTell
}

// readBudget is how many more payload bytes one reserve may read now:
// ConsumeReplyBytesMax, or less once the round's reads near their bound
// (0: spent).
func (n *Node) readBudget() int {
	if n.reads.round != n.round {
		n.reads.round, n.reads.bytes = n.round, 0
	}
	return max(0, min(n.cfg.ConsumeReplyBytesMax, n.cfg.RoundReadBytesMax-n.reads.bytes))
}

// readsSpent reports whether the round's reads are spent for a consume
// of a topic pinned to partition (msg.PartitionNone: unpinned), noting
// it then: the polls that may take what it could not, here and (through
// their subscriptions) on the nodes whose probe was refused, look again
// at the next Tick.
func (n *Node) readsSpent(topicName string, partition int) bool {
	if n.readBudget() > 0 {
		return false
	}
	n.reads.capped.add(topicName, partition)
	return true
}

// spentReads is the answer to a consume or replay once the round's reads
// are spent.
func (n *Node) spentReads() error {
	return msg.Unavailable("this node read %d bytes of records for the consumes and replays of this round, its bound: retry", n.reads.bytes)
}

// wakeReadsCapped tells the polls that found a round's reads spent, so
// that they look again.
func (n *Node) wakeReadsCapped() {
	n.tellPartitions(&n.reads.capped)
}
