package sim

import (
	"fmt"
	"slices"

	"narad/msg"
)

// idsMax bounds the message ids of a run ("m" and seven digits).
const idsMax = 9_999_999

// history records what clients did and saw, for the end-of-run checkers.
// It never reads the nodes' state: only requests and replies.
type history struct {
	nextID int
	// firstCallMs is when each id was first sent (attempts, in Jepsen's
	// terms); an id counts once however often it was retried.
	firstCallMs map[string]int64
	acked       map[string]bool
	deliveries  map[string]int
	// ackedUndelivered counts acked ids not yet delivered to a consumer.
	ackedUndelivered int
	lastDeliveryMs   int64
	// appends holds acknowledged appends by partition; observations holds
	// every (partition, offset) -> id seen by a consume or a replay.
	appends      map[int][]appendOp
	reads        map[int][]readOp
	observations map[int]map[uint64]string
	// indefinite counts produces whose outcome is unknown, and of those,
	// how many were timeouts.
	indefinite, timeouts int
	replayReads          int
	// ackedAt holds, by id, every distinct placement a produce of it was
	// acknowledged at (a retried produce may place one id twice).
	ackedAt map[string][]msg.Placement
	// corrupt maps the placements whose frame a media fault destroyed on
	// disk (media_faults.go) to the id the frame held; only excuseCorrupt
	// adds to it. The no-loss accounting and the drain excuse an id only
	// when every placement it was acknowledged at is here
	// (history.excused); the log checker patches the append of a
	// destroyed frame nobody saw or acknowledged (patchedAppends).
	corrupt map[msg.Placement]string
	// misdirected counts requests answered 421 (their partition moved
	// while they were under way, or the node asked had not learned of the
	// move yet), by request kind.
	misdirected map[string]int
}

type appendOp struct {
	id              string
	offset          uint64
	callMs, retMs   int64
	fromObservation bool
}

type readOp struct {
	offset        uint64
	id            string // "" when the offset was past the high-watermark
	callMs, retMs int64
}

func newHistory() *history {
	return &history{
		firstCallMs: map[string]int64{}, acked: map[string]bool{}, deliveries: map[string]int{},
		appends: map[int][]appendOp{}, reads: map[int][]readOp{}, observations: map[int]map[uint64]string{},
		misdirected: map[string]int{}, ackedAt: map[string][]msg.Placement{}, corrupt: map[msg.Placement]string{},
	}
}

func (h *history) newID() string {
	h.nextID++
	assert(h.nextID <= idsMax, "ran out of message ids")
	return fmt.Sprintf("m%07d", h.nextID)
}

func (h *history) produceCalled(ids []string, nowMs int64) {
	for _, id := range ids {
		if _, ok := h.firstCallMs[id]; !ok {
			h.firstCallMs[id] = nowMs
		}
	}
}

func (h *history) produceAcked(ids []string, placements []msg.Placement, callMs, retMs int64) {
	if len(placements) != len(ids) {
		return // the client already failed the run on this reply
	}
	for i, id := range ids {
		p := placements[i]
		wasOwed := h.owed(id)
		h.acked[id] = true
		if !slices.Contains(h.ackedAt[id], p) {
			h.ackedAt[id] = append(h.ackedAt[id], p)
		}
		h.recount(id, wasOwed)
		h.appends[p.Partition] = append(h.appends[p.Partition], appendOp{id: id, offset: p.Offset, callMs: callMs, retMs: retMs})
	}
}

func (h *history) produceIndefinite(nowMs int64, timeout bool) {
	h.indefinite++
	if timeout {
		h.timeouts++
	}
}

func (h *history) delivered(id string, partition int, offset uint64, callMs, retMs int64) {
	wasOwed := h.owed(id)
	h.deliveries[id]++
	h.recount(id, wasOwed)
	h.lastDeliveryMs = retMs
	h.read(id, partition, offset, callMs, retMs)
	h.replayReads--
}

// deliveredDeadLetter counts a record consumed from the dead-letter topic
// as delivered (its reads there are not the simulated topic's).
func (h *history) deliveredDeadLetter(id string, retMs int64) {
	wasOwed := h.owed(id)
	h.deliveries[id]++
	h.recount(id, wasOwed)
	h.lastDeliveryMs = retMs
}

func (h *history) read(id string, partition int, offset uint64, callMs, retMs int64) {
	h.replayReads++
	h.reads[partition] = append(h.reads[partition], readOp{offset: offset, id: id, callMs: callMs, retMs: retMs})
	seen := h.observations[partition]
	if seen == nil {
		seen = map[uint64]string{}
		h.observations[partition] = seen
	}
	if _, ok := seen[offset]; !ok {
		seen[offset] = id
	}
}

func (h *history) readEmpty(partition int, offset uint64, callMs, retMs int64) {
	h.replayReads++
	h.reads[partition] = append(h.reads[partition], readOp{offset: offset, callMs: callMs, retMs: retMs})
}

// excuseCorrupt excuses the placement of record id whose frame a media
// fault destroyed; the id is excused only while every placement it was
// acknowledged at is destroyed.
func (h *history) excuseCorrupt(id string, at msg.Placement) {
	wasOwed := h.owed(id)
	h.corrupt[at] = id
	h.recount(id, wasOwed)
}

// excused reports whether id was acknowledged only at placements a media
// fault destroyed: no consumer can get it, and the broker lost nothing.
func (h *history) excused(id string) bool {
	placements := h.ackedAt[id]
	for _, p := range placements {
		if _, hit := h.corrupt[p]; !hit {
			return false
		}
	}
	return len(placements) > 0
}

// owed reports whether the drain still waits for id: acknowledged, never
// delivered, and not excused.
func (h *history) owed(id string) bool {
	return h.acked[id] && h.deliveries[id] == 0 && !h.excused(id)
}

// recount keeps ackedUndelivered in step after a change to id's history;
// wasOwed is h.owed(id) before the change.
func (h *history) recount(id string, wasOwed bool) {
	switch owed := h.owed(id); {
	case owed && !wasOwed:
		h.ackedUndelivered++
	case !owed && wasOwed:
		h.ackedUndelivered--
	}
}

func (h *history) allAckedDelivered() bool { return h.ackedUndelivered == 0 }
