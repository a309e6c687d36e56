package node

import (
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
// Counting every table at each consume would cost a walk of the
// partitions; instead the node counts them every leaseCountIntervalMs
// (Tick) and adds at once what grows a table meanwhile: every first
// delivery (a redelivery adds nothing), a skip of a corrupt record, a
// table a move restored. What an ack takes out of a table (an ack at its
// partition's frontier, collapsing the acked run after it) comes off at
// once too, so a consume right after the acks that freed room is served;
// since every addition was counted, the count stays an upper bound of
// what the tables hold. A batch consume stops at the bound but for
// redeliveries.

// leaseCountIntervalMs is how often the node counts its lease tables.
const leaseCountIntervalMs = 100

// leaseBudget is what the node knows of its lease tables' size. Only the
// node's methods below change it.
type leaseBudget struct {
	// held is an upper bound of the sum of Held over every lease table:
	// exact at each count, then moved by every change since
	// (leasesChanged).
	held int
	// nextCountMs is when the next count is due (node clock).
	nextCountMs int64
	// heldBack holds the topics of which a reserve at the budget left a
	// record undelivered (one never delivered before): their polls, here
	// and on the nodes whose probes were refused, are told once the count
	// falls under the budget (tellHeldBack). Nothing else tells them: an
	// ack wakes only its own topic's polls.
	heldBack topicsToTell
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

// countLeases recounts the lease tables when due.
func (n *Node) countLeases() {
	if n.nowMs < n.leaseBudget.nextCountMs {
		return
	}
	n.leaseBudget.nextCountMs = n.nowMs + leaseCountIntervalMs
	held := 0
	for _, p := range n.partitions { //determinism:ok a sum
		if p.leases != nil {
			held += p.leases.Held()
		}
	}
	n.leaseBudget.held = held
	n.tellHeldBack()
}

// reserveLease reserves p's next record: any, under the budget; at it,
// only one delivered before and released since (a lapse, a nack), which
// adds nothing to the tables: those records still go out, and their acks
// bring the budget back.
func (n *Node) reserveLease(t *topic, p *partition, log *storage.Log) (lease.Reservation, bool) {
	held := p.leases.Held()
	reserve := p.leases.Reserve
	atBudget := n.atLeaseBudget()
	if atBudget {
		reserve = p.leases.ReserveReleased
	}
	reservation, ok := reserve(n.nowMs, log.HWM(), t.info.VisibilityTimeoutMs)
	n.leasesChanged(held, p.leases.Held())
	n.noteLeaseDeadlines(p)
	if !ok && atBudget && p.leases.Deliverable(log.HWM()) {
		n.leaseBudget.heldBack.add(t.info.Name)
	}
	return reservation, ok
}

// tellHeldBack tells the polls of the topics whose records the budget
// held back, once the count is under it (after acks, and at each count):
// a poll of another topic than the acked one, parked before the budget
// was reached, otherwise waited out its wait and was answered empty with
// its record deliverable since.
func (n *Node) tellHeldBack() {
	if n.atLeaseBudget() {
		return
	}
	for _, name := range n.leaseBudget.heldBack.take() {
		n.tellPolls(name)
	}
}

// leasesChanged moves the count by a change of one lease table's Held,
// from before to after: what it added, and what it took out (an ack at
// the frontier). Every addition is counted, so the count stays an upper
// bound.
func (n *Node) leasesChanged(before, after int) {
	n.leaseBudget.held = max(0, n.leaseBudget.held+after-before)
}

// leasesHeld is the upper bound of the offsets the lease tables hold.
func (n *Node) leasesHeld() int { return n.leaseBudget.held }

// atLeaseBudget reports that the lease tables may hold LeasesMax offsets:
// a consume here may only deliver records again.
func (n *Node) atLeaseBudget() bool { return n.leasesHeld() >= n.cfg.LeasesMax }

// leasesFull is the answer to a consume that found nothing to deliver
// again at the lease budget.
func (n *Node) leasesFull() error {
	return msg.Unavailable("this node holds %d leases (records delivered and not acked), at most %d: ack, or retry later", n.leasesHeld(), n.cfg.LeasesMax)
}
