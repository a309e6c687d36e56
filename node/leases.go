package node

import (
	"fmt"

	"narad/invariant"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

// The node's lease budget. A topic's caps (max_in_flight_per_partition,
// max_acked_ahead_per_partition, up to lease.CapMax each) bound what one
// partition's lease table holds, about 100 bytes an offset; nothing bounded
// the node's tables together, and one topic of 108 partitions with the
// largest caps and a 12-hour visibility timeout could hold 20 GB of leases
// until an OOM kill. Config.LeasesMax bounds them: while the tables hold
// that many offsets, a consume here delivers only records delivered before
// and released since (a lapse, a nack: they add nothing), and one that
// finds none answers 503 (with Retry-After), naming the bound, until acks
// bring the tables back under it.
//
// Every table the node tracks counts into one lease.Tally, which each
// change of a table's Held moves as it happens (a first delivery, an ack
// at the frontier collapsing the acked run after it, a skip, retention, a
// dead letter settled): the count is exact at every moment, without a
// walk of the partitions, which at 20,000 of them was the largest cost of
// a tick. A table joins the tally when the node makes it (openLog, a
// move's adoptMovedLeases) and leaves it when the node drops it
// (forgetLeases, removePartition). A consume right after the acks that
// freed room is served; a batch consume stops at the bound but for
// redeliveries.

// leaseCountIntervalMs is how often the node looks again at its lease
// budget (checkLeaseBudget).
const leaseCountIntervalMs = 100

// leaseBudget is what the node knows of its lease tables' size. Only the
// node's methods below change it.
type leaseBudget struct {
	// tally is the sum of Held over the lease tables of the tracked
	// partitions (n.partitions): each counts into it from when the node
	// makes it to when the node drops it (countLeasesOf, uncountLeasesOf).
	tally lease.Tally
	// nextCheckMs is when the next checkLeaseBudget is due (node clock).
	nextCheckMs int64
	// heldBack holds the partitions of which a reserve at the budget left
	// a record undelivered (one never delivered before): the polls that
	// may take it, here and on the nodes whose probes were refused, are
	// told once the count falls under the budget (tellHeldBack, after
	// acks and at each checkLeaseBudget). Nothing else tells them: an ack
	// wakes only the polls of its own partitions.
	heldBack partitionsToTell
	// due orders the partitions whose tables hold a reservation deadline
	// by a lower bound of their earliest one: each deadline a table takes
	// lowers its partition's (noteLeaseDeadlines), and expireLeases looks
	// only at the partitions due, and puts them back at the exact
	// earliest deadline they have left. Acks and lapses leave a
	// partition's due time low, which costs it at most one look that
	// finds nothing.
	due leaseDue
}

// noteLeaseDeadlines lowers p's due time to its table's earliest
// reservation deadline; called after every change that may give p's
// table a deadline (a reservation, an extend, a table carried by a move).
func (n *Node) noteLeaseDeadlines(p *partition) {
	if d, ok := p.leases.NextDeadline(); ok {
		n.leaseBudget.due.note(p, d)
	}
}

// checkLeaseBudget, every leaseCountIntervalMs, tells the polls the
// budget held back if the tables are under it now (retention, a dead
// letter settled or a table dropped may have taken them there since the
// last ack), and, in the invariants build, recounts the tables against
// the tally.
func (n *Node) checkLeaseBudget() {
	if n.nowMs < n.leaseBudget.nextCheckMs {
		return
	}
	n.leaseBudget.nextCheckMs = n.nowMs + leaseCountIntervalMs
	invariant.Costly(n.checkLeaseTally)
	n.tellHeldBack()
}

// checkLeaseTally reports whether the tally holds the sum of Held over
// the tracked partitions' tables.
func (n *Node) checkLeaseTally() error {
	held := 0
	for _, p := range n.partitions { //determinism:ok a sum
		if p.leases != nil {
			held += p.leases.Held()
		}
	}
	if tallied := n.leasesHeld(); tallied != held {
		return fmt.Errorf("node: the lease tally counts %d held offsets, the tables hold %d", tallied, held)
	}
	return nil
}

// countLeasesOf makes p's new table count into the node's tally.
func (n *Node) countLeasesOf(p *partition) { p.leases.CountInto(&n.leaseBudget.tally) }

// uncountLeasesOf takes p's table, which the node drops, out of the
// tally: a dead-letter batch may still settle a record in it.
func (n *Node) uncountLeasesOf(p *partition) {
	if p.leases != nil {
		p.leases.CountInto(nil)
	}
}

// reserveLease reserves p's next record: any, under the budget; at it,
// only one delivered before and released since (a lapse, a nack), which
// adds nothing to the tables: those records still go out, and their acks
// bring the budget back.
func (n *Node) reserveLease(t *topic, p *partition, log *storage.Log) (lease.Reservation, bool) {
	reserve := p.leases.Reserve
	atBudget := n.atLeaseBudget()
	if atBudget {
		reserve = p.leases.ReserveReleased
	}
	reservation, ok := reserve(n.nowMs, log.HWM(), t.info.VisibilityTimeoutMs)
	n.noteLeaseDeadlines(p)
	if !ok && atBudget && p.leases.Deliverable(log.HWM()) {
		n.leaseBudget.heldBack.add(t.info.Name, p.key.index)
	}
	return reservation, ok
}

// tellHeldBack tells the polls that may take the records the budget held
// back, once the count is under it (after acks, and at each
// checkLeaseBudget):
// a poll of another topic than the acked one, parked before the budget
// was reached, otherwise waited out its wait and was answered empty with
// its record deliverable since.
func (n *Node) tellHeldBack() {
	if n.atLeaseBudget() {
		return
	}
	n.tellPartitions(&n.leaseBudget.heldBack)
}

// leasesHeld is the number of offsets the lease tables hold.
func (n *Node) leasesHeld() int { return n.leaseBudget.tally.Held() }

// atLeaseBudget reports that the lease tables may hold LeasesMax offsets:
// a consume here may only deliver records again.
func (n *Node) atLeaseBudget() bool { return n.leasesHeld() >= n.cfg.LeasesMax }

// leasesFull is the answer to a consume that found nothing to deliver
// again at the lease budget.
func (n *Node) leasesFull() error {
	return msg.Unavailable("this node holds %d leases (records delivered and not acked), at most %d: ack, or retry later", n.leasesHeld(), n.cfg.LeasesMax)
}
