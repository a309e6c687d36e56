package sim

import (
	"net/http"
	"slices"

	"narad/chaos"
	"narad/msg"
)

// leaseModel is a client-side model of consumer leases: every success
// answered to an ack (a 204, or a batch item's 204) must be for the
// current reservation of its record. It knows only what clients saw:
// each receipt handle handed to a client (a handout), each ack sent with
// its answer, and when the committed placement flipped a partition.
//
// A handle H of record R is known stale at the moment an ack of it is
// sent if a client had already received another handle H' of R whose
// consume was sent after H was received: then R was reserved again after
// H was issued, and a reservation is superseded by the next one of its
// record (a handle string handed out again is taken for the same
// reservation, not a newer one; nodes no longer do it, as they did after
// a move back before nonces stayed unique per start, seed 4400727). A
// success for a known stale handle fails the run, checker "lease-model",
// except when the design allows it:
//
//   - the record may already be acknowledged: an ack of an acknowledged
//     record succeeds whatever its handle (a retried ack learns it
//     landed). So any other ack of R, under another handle, sent before
//     the answer came and not refused for sure (answered success, 503,
//     or never answered), excuses it;
//   - the partition changed owner (a committed flip) before H' was
//     received, and H and H' came from different nodes (or starts), one
//     of them perhaps a deposed owner that has not applied the flip yet:
//     it serves and keeps its own reservations until it does, for as
//     long as it lags. Who issued a handle is read off the wire: the
//     node whose forward reply carried it to the node the client asked,
//     else the node that answered the client (handleIssuer). Two handles
//     of one issuer (one node in one start) come from its lease table,
//     where the newer reservation superseded the older whatever the
//     flips: a partition that moved away and back in between has a table
//     rebuilt from the move, which never knew the older handle either;
//   - the record was acknowledged as a dead letter before the answer (a
//     node reports it: the one excuse clients do not see, since the
//     delivery that exhausted a record may never have reached one): an
//     ack of it succeeds whatever its handle;
//   - a media fault destroyed the record's frame on disk: the owner's
//     recovery skips it, consumption resolves it as skipped, and an ack
//     of it then succeeds whatever its handle, as for an acknowledged
//     record (it will never be delivered again).
//
// A handle is also known lapsed when the ack is sent more than the
// longest visibility timeout the workload sets after the handle was
// received (the reservation was made before its consume was answered, so
// its deadline had passed): a success then fails the run too, unless
// another ack of the record, sent before the answer came (under another
// handle, after a redelivery; an extend; another attempt of this one), may
// have landed first, or the record was acknowledged as a dead letter or
// destroyed by a media fault. A flip is no excuse here: a move hands the
// new owner the record as released, never reserved, and a node's receipt
// nonces never repeat for a partition within a start, so a handle from
// before a move away and back matches no newer reservation (seed 4400727
// found them repeating).
//
// A restart is no excuse: a node draws a new handle key at every start,
// so a handle of an earlier start matches no reservation (its delivery
// counts start over too, but handles never match across starts). A
// handout the clients never received (a lost consume answer) is unknown
// here, so some stale acks go unchecked; nothing is failed on a guess.
type leaseModel struct {
	w *World
	// handouts lists each record's handouts in the order received; only
	// grows.
	handouts map[ackRecord][]handout
	// byHandle maps a handle to its record.
	byHandle map[string]ackRecord
	// acks lists each record's acks sent, in order; an ack's answer is
	// filled in when it comes.
	acks map[ackRecord][]*sentAck
	// flipsMs lists, by partition, when each committed flip was seen, in
	// order (the first decides whether a newer handout excuses a success).
	flipsMs map[int][]int64
	// deadLetteredMs is when a node first reported each record
	// acknowledged as a dead letter.
	deadLetteredMs map[ackRecord]int64
	// checked counts the successes judged; stale those for a known stale
	// handle that an excuse allowed.
	checked, stale int
	// startsMs lists when a node started (again), in order: a restart
	// ends every reservation it held (judgeEarlyGone).
	startsMs []int64
	// goneChecked counts the 410s judged by judgeEarlyGone.
	goneChecked int
	// forwardIssuers maps a handle a node sent in a forward's consume
	// reply to that node, as it was when it sent it (the wire shows it).
	forwardIssuers map[string]handleIssuer
	// afterFlip counts the successes judged on a partition that had
	// flipped before their ack was sent (only a handle's issuer decides
	// then whether a flip excuses it); flipExcused the handouts of stale
	// handles that a flip excused, their issuers differing or unknown.
	afterFlip, flipExcused int
}

// handleIssuer is the node, in one of its starts, whose lease table made
// a reservation; its zero value is unknown.
type handleIssuer struct {
	node        string
	incarnation int
}

// handout is one receipt handle a client received.
type handout struct {
	handle                    string
	consumeSentMs, receivedMs int64
	issuer                    handleIssuer
}

// sentAck is one ack request's use of one handle.
type sentAck struct {
	call   *call
	handle string
	// answered is set when an answer came; status is its status then.
	answered bool
	status   int
}

func newLeaseModel(w *World) *leaseModel {
	return &leaseModel{w: w, handouts: map[ackRecord][]handout{}, byHandle: map[string]ackRecord{},
		acks: map[ackRecord][]*sentAck{}, flipsMs: map[int][]int64{}, deadLetteredMs: map[ackRecord]int64{},
		forwardIssuers: map[string]handleIssuer{}}
}

// delivered records a handle a client received from consume c.
func (l *leaseModel) delivered(c *call, m wireMessage) {
	record := ackRecord{m.Partition, m.Offset}
	l.byHandle[m.ReceiptHandle] = record
	l.handouts[record] = append(l.handouts[record], handout{handle: m.ReceiptHandle, consumeSentMs: c.sentMs, receivedMs: l.w.nowMs,
		issuer: l.issuerOf(c, m.ReceiptHandle)})
}

// issuerOf names the node that made the reservation of a handle consume
// c received: the one whose forward reply carried it, else the node that
// answered c (unknown if none took it).
func (l *leaseModel) issuerOf(c *call, handle string) handleIssuer {
	if issuer, forwarded := l.forwardIssuers[handle]; forwarded {
		return issuer
	}
	if c.node == nil {
		return handleIssuer{}
	}
	return handleIssuer{node: c.node.id, incarnation: c.nodeIncarnation}
}

// forwarded notes the handles of a consume's forward reply that node n
// sends now (peerNetwork.send): n made their reservations.
func (l *leaseModel) forwarded(n *simNode, env msg.Envelope) {
	reply, ok := env.Message.(msg.ForwardReply)
	if !ok {
		return
	}
	result, ok := reply.Reply.Result.(msg.ConsumeResult)
	if !ok {
		return
	}
	for _, m := range result.Messages {
		if m.Topic == l.w.topic {
			l.forwardIssuers[m.ReceiptHandle] = handleIssuer{node: n.id, incarnation: n.incarnation}
		}
	}
}

// deadLettered records that a node acknowledged a record of the topic as
// a dead letter.
func (l *leaseModel) deadLettered(topic string, partition int, offset uint64) {
	record := ackRecord{partition, offset}
	if _, seen := l.deadLetteredMs[record]; !seen && topic == l.w.topic {
		l.deadLetteredMs[record] = l.w.nowMs
	}
}

// earlyGoneWindowMs is how soon after its consume was sent an ack must be
// sent for judgeEarlyGone to judge its 410: the shortest visibility
// timeout, less the longest an ack may take to reach the owner (a slow
// client link, then a slow peer link when a node forwards it) and a
// margin, so that an ack sent in time cannot arrive after its lease's
// deadline.
const earlyGoneWindowMs = visibilityMsMin - slowLinkDelayMsMax - peerSlowDelayMsMax - 50

// nodeStarted records that a node started, at its first start or again.
func (l *leaseModel) nodeStarted() { l.startsMs = append(l.startsMs, l.w.nowMs) }

// judgeEarlyGone fails a 410 to an ack sent before its handle's lease
// could have lapsed: the reservation was made after its consume was sent,
// for at least visibilityMsMin, so an ack sent within earlyGoneWindowMs of
// that reaches the owner before its deadline, and only another reservation of
// the record, another ack of it (a nack releases it), a node's restart (a
// new handle key), a move of the partition, a dead letter or a media
// fault, or the fault site that cuts a lease short may end it (sim
// review: leases lasting a fiftieth of their timeout passed every
// checker).
func (l *leaseModel) judgeEarlyGone(record ackRecord, handle string, c *call, mine *sentAck) {
	handouts := l.handouts[record]
	own := slices.IndexFunc(handouts, func(h handout) bool { return h.handle == handle })
	if l.w.failure != nil || own < 0 || c.sentMs >= handouts[own].consumeSentMs+earlyGoneWindowMs {
		return
	}
	since := handouts[own].consumeSentMs
	switch {
	case len(handouts) > 1, l.anotherAckSent(record, mine), l.settledWithoutAck(record), l.w.opts.FanoutAgedOut,
		len(l.flipsMs[record.partition]) > 0, l.eventSince(l.startsMs, since),
		chaos.Fired()[chaos.SiteNodeLeaseCutShort] > 0:
		return
	}
	l.goneChecked++
	l.w.fail("lease-model", "%s answered 410 for handle %s of %s offset %d, whose consume was sent at %d ms: the ack was sent at %d ms, before any lease of it could lapse (visibility timeouts are at least %d ms)",
		c.describe(), handle, partitionName(l.w.topic, record.partition), record.offset, since, c.sentMs, visibilityMsMin)
}

// anotherAckSent reports whether an ack of record other than mine was
// sent, whatever its answer.
func (l *leaseModel) anotherAckSent(record ackRecord, mine *sentAck) bool {
	return slices.ContainsFunc(l.acks[record], func(a *sentAck) bool { return a != mine })
}

// eventSince reports whether one of the times (in order) is at or after
// sinceMs.
func (l *leaseModel) eventSince(timesMs []int64, sinceMs int64) bool {
	return len(timesMs) > 0 && timesMs[len(timesMs)-1] >= sinceMs
}

// flipped records a committed flip of a partition of the topic.
func (l *leaseModel) flipped(topic string, partition int) {
	if topic == l.w.topic {
		l.flipsMs[partition] = append(l.flipsMs[partition], l.w.nowMs)
	}
}

// sent records the handles of an ack request as it leaves the client.
func (l *leaseModel) sent(c *call, handles []string) {
	for _, handle := range handles {
		if record, ok := l.byHandle[handle]; ok {
			l.acks[record] = append(l.acks[record], &sentAck{call: c, handle: handle})
		}
	}
}

// answered judges the answer of ack c for one handle.
func (l *leaseModel) answered(c *call, handle string, status int) {
	record, ok := l.byHandle[handle]
	if !ok {
		return
	}
	mine := l.findAck(record, c, handle)
	if mine != nil {
		mine.answered, mine.status = true, status
	}
	if status == http.StatusGone {
		l.judgeEarlyGone(record, handle, c, mine)
	}
	if status != http.StatusNoContent {
		return
	}
	l.checked++
	if l.flippedBy(record.partition, c.sentMs) {
		l.afterFlip++
	}
	l.judgeLapsed(record, handle, c, mine)
	own, newer, stale := l.staleness(record, handle, c.sentMs)
	if !stale {
		return
	}
	l.stale++
	if l.settledWithoutAck(record) || l.otherAckMayHaveLanded(record, mine) {
		return
	}
	if newer, stale = l.supersededUnexcused(record, own, c.sentMs); !stale {
		return
	}
	l.w.fail("lease-model", "%s answered 204 for handle %s of %s offset %d, received at %d ms, though handle %s of the same record (consume sent at %d ms) was received at %d ms, before the ack was sent at %d ms",
		c.describe(), handle, partitionName(l.w.topic, record.partition), record.offset, own.receivedMs,
		newer.handle, newer.consumeSentMs, newer.receivedMs, c.sentMs)
}

// settledWithoutAck reports whether the record was settled other than by
// a client's ack, so that any ack of it succeeds whatever its handle: it
// was acknowledged as a dead letter, or a media fault destroyed it (the
// owner skips it and resolves it, and it is never delivered again).
func (l *leaseModel) settledWithoutAck(record ackRecord) bool {
	_, dead := l.deadLetteredMs[record]
	return dead || l.w.media.unreadable(record.partition, record.offset)
}

// judgeLapsed fails a 204 to an ack whose handle's lease lapsed before
// the ack was sent, unless an excuse applies.
func (l *leaseModel) judgeLapsed(record ackRecord, handle string, c *call, mine *sentAck) {
	if l.w.failure != nil {
		return
	}
	var latest handout
	for _, h := range l.handouts[record] {
		if h.handle == handle && h.receivedMs <= c.sentMs {
			latest = h
		}
	}
	if latest.handle == "" || c.sentMs-latest.receivedMs <= visibilityMsMin+visibilityMsSpread {
		return
	}
	if l.settledWithoutAck(record) || l.anotherAckMayHaveLanded(record, mine) {
		return
	}
	l.w.fail("lease-model", "%s answered 204 for handle %s of %s offset %d, received at %d ms: its lease had lapsed when the ack was sent at %d ms (visibility timeouts are below %d ms)",
		c.describe(), handle, partitionName(l.w.topic, record.partition), record.offset, latest.receivedMs, c.sentMs,
		visibilityMsMin+visibilityMsSpread)
}

// anotherAckMayHaveLanded reports whether an ack of record other than
// mine (under any handle, an extend included, sent so far: before mine's
// answer came) may have landed: it was answered with success or 503, or
// not answered.
func (l *leaseModel) anotherAckMayHaveLanded(record ackRecord, mine *sentAck) bool {
	for _, a := range l.acks[record] {
		if a == mine {
			continue
		}
		if !a.answered || a.status == http.StatusNoContent || a.status >= http.StatusInternalServerError {
			return true
		}
	}
	return false
}

func (l *leaseModel) findAck(record ackRecord, c *call, handle string) *sentAck {
	for _, a := range l.acks[record] {
		if a.call == c && a.handle == handle {
			return a
		}
	}
	return nil
}

// staleness finds the handout of handle and a newer handout of the same
// record received before sentMs.
func (l *leaseModel) staleness(record ackRecord, handle string, sentMs int64) (own, newer handout, stale bool) {
	handouts := l.handouts[record]
	first := slices.IndexFunc(handouts, func(h handout) bool { return h.handle == handle })
	if first < 0 {
		return handout{}, handout{}, false
	}
	own = handouts[first]
	for _, h := range handouts {
		if h.handle != handle && h.consumeSentMs > own.receivedMs && h.receivedMs < sentMs {
			return own, h, true
		}
	}
	return own, handout{}, false
}

// otherAckMayHaveLanded reports whether an ack of record under another
// handle than mine's, sent before now, may have landed: it was answered
// with success or 503, or not answered.
func (l *leaseModel) otherAckMayHaveLanded(record ackRecord, mine *sentAck) bool {
	for _, a := range l.acks[record] {
		if a == mine || (mine != nil && a.handle == mine.handle) {
			continue
		}
		if !a.answered || a.status == http.StatusNoContent || a.status >= http.StatusInternalServerError {
			return true
		}
	}
	return false
}

// supersededUnexcused finds a handout of record newer than own (its
// consume sent after own was received, itself received before sentMs)
// that no flip excuses: none was seen before it was received, or its
// issuer also issued own.
func (l *leaseModel) supersededUnexcused(record ackRecord, own handout, sentMs int64) (handout, bool) {
	for _, h := range l.handouts[record] {
		if h.handle == own.handle || h.consumeSentMs <= own.receivedMs || h.receivedMs >= sentMs {
			continue
		}
		if !l.flippedBy(record.partition, h.receivedMs) {
			return h, true
		}
		if own.issuer.node != "" && own.issuer == h.issuer {
			return h, true
		}
		l.flipExcused++
	}
	return handout{}, false
}

// flippedBy reports whether a committed flip of partition was seen at or
// before atMs.
func (l *leaseModel) flippedBy(partition int, atMs int64) bool {
	flips := l.flipsMs[partition]
	return len(flips) > 0 && flips[0] <= atMs
}
