package sim

import (
	"encoding/json"
	"net/http"

	"narad/httpapi"
)

// ackChecker checks that acks are idempotent: once an ack of a record
// landed (its owner applied it, whether or not the answer reached the
// client), a later ack of that record answers 204 and the record is not
// delivered again, unless the ack could have been lost since: the node
// that applied it restarted or is down (the committed offset persists
// within a tick, and the acked-ahead set not at all), the partition
// changed owner (a move carries only the committed offset; a
// force-promotion may carry less), or the node that applied it was not
// the partition's committed owner then (a deposed owner not yet told).
// Such a loss is counted, not failed: the record comes back, as any
// unacknowledged one does. Landings are reported by the applying node's
// observer (node.AckObserver), so the checker is off in a black-box run;
// everything else is what clients saw.
type ackChecker struct {
	w *World
	// records maps a receipt handle delivered to a client to the record
	// it names.
	records map[string]ackRecord
	// landed holds, per record, its first ack applied.
	landed map[ackRecord]ackLanding
	// answered204 holds, per record, the first 204 a client got to a
	// commit ack of it, with the partition's committed owner then as the
	// node that applied it: what clients saw, so it holds in a black-box
	// run too, and it judges a 204 whose ack the node never applied.
	answered204 map[ackRecord]ackLanding
	// retries counts ack requests sent again after a lost answer or a
	// 503; retriedLanded counts the handles of retried acks whose ack had
	// landed before (the retry learned it did); redeliveredAfterLoss
	// counts deliveries of records whose ack landed and may have been
	// lost since, and answersAfterLoss the ack answers of such records.
	retries, retriedLanded, redeliveredAfterLoss, answersAfterLoss int
}

// ackRecord names one record of the simulated topic.
type ackRecord struct {
	partition int
	offset    uint64
}

// ackLanding is where and when an ack was applied.
type ackLanding struct {
	atMs int64
	// node applied it, in its incarnation; generation is the partition's
	// committed flip count then, and committedOwner whether node was its
	// committed owner.
	node           *simNode
	incarnation    int
	generation     int
	committedOwner bool
}

func newAckChecker(w *World) *ackChecker {
	return &ackChecker{w: w, records: map[string]ackRecord{}, landed: map[ackRecord]ackLanding{}, answered204: map[ackRecord]ackLanding{}}
}

// AckApplied is an ack the node applied (node.AckObserver).
func (o nodeObserver) AckApplied(topic string, partition int, offset uint64, _ string) {
	o.n.w.acks.applied(o.n, topic, partition, offset)
}

func (a *ackChecker) applied(n *simNode, topic string, partition int, offset uint64) {
	if a.w.opts.BlackBox || topic != a.w.topic {
		return // it hears from the nodes: not a black-box checker; the dead letters' acks are not its records
	}
	record := ackRecord{partition, offset}
	if _, ok := a.landed[record]; ok && !a.mayHaveLost(record) {
		a.w.fail("ack-idempotent", "%s applied an ack of %s/%d again, though its first ack landed", n.id, partitionName(topic, partition), offset)
		return
	}
	committedOwner := !a.w.clustered() || a.w.metaLog.owner(topic, partition) == n.id
	a.landed[record] = ackLanding{atMs: a.w.nowMs, node: n, incarnation: n.incarnation,
		generation: a.w.metaLog.generations[partitionName(topic, partition)], committedOwner: committedOwner}
}

// mayHaveLost reports whether the record's landed ack may have been lost
// since it landed.
func (a *ackChecker) mayHaveLost(record ackRecord) bool {
	return a.lostSince(record, a.landed[record])
}

// lostSince reports whether an ack that landed as landing may have been
// lost since: its node was not the committed owner, went down or
// restarted, or the partition changed owner.
func (a *ackChecker) lostSince(record ackRecord, landing ackLanding) bool {
	n := landing.node
	return n == nil || !landing.committedOwner || !n.up() || n.incarnation != landing.incarnation ||
		a.w.metaLog.generations[partitionName(a.w.topic, record.partition)] != landing.generation
}

// answeredNoContent records a 204 to a commit ack of the record sent at
// sentMs, answered now: the partition's committed owner (the one node of
// a single-node world) applied it, or had it applied already. An owner
// that started since the ack was sent may have applied it in its
// previous incarnation (an answer slow on the network outlives a
// restart) and lost it at the restart, as any ack not yet persisted: such
// a 204 is held to nothing, unless the owner's current incarnation is the
// one that took the request.
func (a *ackChecker) answeredNoContent(record ackRecord, c *call) {
	if _, ok := a.answered204[record]; ok {
		return
	}
	owner := a.w.nodes[0]
	if a.w.clustered() {
		owner = a.w.nodeByID(a.w.metaLog.owner(a.w.topic, record.partition))
	}
	tookIt := c.node == owner && c.nodeIncarnation == owner.incarnation
	if owner == nil || !owner.up() || (owner.startedMs > c.sentMs && !tookIt) {
		return // a 204 from a node that has since gone or started again: nothing to hold it to
	}
	a.answered204[record] = ackLanding{atMs: a.w.nowMs, node: owner, incarnation: owner.incarnation,
		generation: a.w.metaLog.generations[partitionName(a.w.topic, record.partition)], committedOwner: true}
}

// answeredBefore reports whether a client got a 204 to a commit ack of the
// record before sentMs (a consume sent then must not get the record) and,
// if so, whether the ack may have been lost since; a 204 that may have
// been is forgotten.
func (a *ackChecker) answeredBefore(record ackRecord, sentMs int64) (answered, excused bool) {
	landing, ok := a.answered204[record]
	if !ok || landing.atMs >= sentMs {
		return false, false
	}
	if a.lostSince(record, landing) {
		delete(a.answered204, record)
		return true, true
	}
	return true, false
}

// landedBefore reports whether the record's ack landed before sentMs
// (landed) and, if so, whether it may have been lost since (excused). A
// landing that may have been lost is forgotten, so the record's next ack
// is judged afresh.
func (a *ackChecker) landedBefore(record ackRecord, sentMs int64) (landed, excused bool) {
	landing, ok := a.landed[record]
	if !ok || landing.atMs >= sentMs {
		return false, false
	}
	if a.mayHaveLost(record) {
		delete(a.landed, record)
		return true, true
	}
	return true, false
}

// delivered checks a delivery to a client: a consume sent after the
// record's ack landed must not get it.
func (a *ackChecker) delivered(c *call, m wireMessage) {
	record := ackRecord{m.Partition, m.Offset}
	a.records[m.ReceiptHandle] = record
	landed, excused := a.landedBefore(record, c.sentMs)
	if excused {
		a.redeliveredAfterLoss++
	}
	if landed && !excused {
		landing := a.landed[record]
		a.w.fail("ack-idempotent", "%s: %s offset %d was delivered again (delivery %d) though its ack landed at %d ms on %s",
			c.describe(), partitionName(a.w.topic, m.Partition), m.Offset, m.DeliveryCount, landing.atMs, landing.node.id)
		return
	}
	if answered, excused := a.answeredBefore(record, c.sentMs); answered && !excused {
		landing := a.answered204[record]
		a.w.fail("ack-answered", "%s: %s offset %d was delivered again (delivery %d) though a commit ack of it was answered 204 at %d ms (owner %s)",
			c.describe(), partitionName(a.w.topic, m.Partition), m.Offset, m.DeliveryCount, landing.atMs, landing.node.id)
	}
}

// answered checks the answer to one handle of a commit ack (attempt
// counts from 1): an ack sent after the record's ack landed must answer
// 204.
func (a *ackChecker) answered(c *call, handle string, status, attempt int) {
	record, ok := a.records[handle]
	if !ok || status == http.StatusServiceUnavailable {
		return
	}
	if status == http.StatusNoContent {
		a.answeredNoContent(record, c)
	}
	landed, excused := a.landedBefore(record, c.sentMs)
	if excused {
		a.answersAfterLoss++
	}
	if !landed || excused {
		return
	}
	if attempt > 1 {
		a.retriedLanded++
	}
	if status != http.StatusNoContent {
		a.w.fail("ack-idempotent", "%s (attempt %d): answered %d for %s, whose ack landed at %d ms on %s",
			c.describe(), attempt, status, handle, a.landed[record].atMs, a.landed[record].node.id)
	}
}

// answeredBatch checks each item of a batch ack's 200 answer and returns
// the handles answered 503 (to retry).
func (a *ackChecker) answeredBatch(c *call, response *httpapi.Response, attempt int) (unavailable []string, err error) {
	var body struct {
		Results []struct {
			Handle string `json:"receipt_handle"`
			Status int    `json:"status"`
		} `json:"results"`
	}
	if err := json.Unmarshal(response.Body, &body); err != nil {
		return nil, err
	}
	for _, item := range body.Results {
		a.w.leases.answered(c, item.Handle, item.Status)
		a.answered(c, item.Handle, item.Status, attempt)
		if item.Status == http.StatusServiceUnavailable {
			unavailable = append(unavailable, item.Handle)
		}
	}
	return unavailable, nil
}
