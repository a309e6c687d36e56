package sim

import (
	"fmt"

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
	// corrupt holds the ids of the records a media fault destroyed on
	// disk (media_faults.go): the no-loss accounting excuses them, and
	// only them. Only excuseCorrupt adds to it.
	corrupt map[string]bool
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
		misdirected: map[string]int{}, corrupt: map[string]bool{},
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
		if !h.acked[id] {
			h.acked[id] = true
			if h.deliveries[id] == 0 && !h.corrupt[id] {
				h.ackedUndelivered++
			}
		}
		p := placements[i]
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
	h.deliveries[id]++
	if h.deliveries[id] == 1 && h.acked[id] && !h.corrupt[id] {
		h.ackedUndelivered--
	}
	h.lastDeliveryMs = retMs
	h.read(id, partition, offset, callMs, retMs)
	h.replayReads--
}

// deliveredDeadLetter counts a record consumed from the dead-letter topic
// as delivered (its reads there are not the simulated topic's).
func (h *history) deliveredDeadLetter(id string, retMs int64) {
	h.deliveries[id]++
	if h.deliveries[id] == 1 && h.acked[id] && !h.corrupt[id] {
		h.ackedUndelivered--
	}
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

// excuseCorrupt excuses a record a media fault destroyed from being
// delivered.
func (h *history) excuseCorrupt(id string) {
	if h.corrupt[id] {
		return
	}
	h.corrupt[id] = true
	if h.acked[id] && h.deliveries[id] == 0 {
		h.ackedUndelivered--
	}
}

func (h *history) allAckedDelivered() bool { return h.ackedUndelivered == 0 }
