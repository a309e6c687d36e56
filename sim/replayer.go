package sim

import (
	"fmt"
	"net/http"

	"narad/httpapi"
)

// replayNext reads the next offset of the current partition. Past the
// high-watermark (204) it moves to the next partition. The final replayer
// reads every partition to its end once and stops.
func (cl *client) replayNext() {
	if cl.done {
		return
	}
	partition := cl.next
	offset := cl.cursors[partition]
	target := fmt.Sprintf("/v1/topics/%s/consume?partition=%d&offset=%d", cl.w.topic, partition, offset)
	c := &call{kind: "replay", httpRequest: newHTTPRequest(http.MethodGet, target, "", ""), target: cl.w.replayTarget(partition)}
	c.onDone = func(response *httpapi.Response) { cl.replayed(c, partition, offset, response) }
	cl.send(c)
}

// replayTarget picks the node a replay goes to: in a cluster, half the
// time the partition's committed owner now (so reads follow a partition
// across its moves at once, even before the other replicas learn of
// them), else a random node (nil).
func (w *World) replayTarget(partition int) *simNode {
	if !w.clustered() || w.workloadRng.IntN(2) == 0 {
		return nil
	}
	owner := w.nodeByID(w.metaLog.owner(w.topic, partition))
	if owner == nil || owner.retired || owner.joining {
		return nil
	}
	return owner
}

func (cl *client) replayed(c *call, partition int, offset uint64, response *httpapi.Response) {
	think := int64(cl.w.workloadRng.IntN(replayThinkMsMax))
	if cl.final {
		think = 0
	}
	switch {
	case response != nil && response.Status == http.StatusMisdirectedRequest:
		// 421 (docs/api.md#status-codes): the node asked has not learned that
		// the partition moved (or it moved while the read was under way);
		// retried.
		cl.w.history.misdirected[c.kind]++
		cl.later(50, cl.replayNext)
		return
	case response == nil || response.Status >= 500:
		cl.later(50, cl.replayNext)
		return
	case response.Status == http.StatusGone && cl.w.media.unreadable(partition, offset):
		// The media fault made this offset unreadable (media_faults.go).
		cl.cursors[partition]++
	case response.Status == http.StatusGone && cl.w.agedOut.skipTaken(partition, &cl.cursors[partition]): // offset is the cursor
		// Retention took it (fanout_agedout.go): the cursor moved on.
	case response.Status == http.StatusNoContent:
		cl.w.history.readEmpty(partition, offset, c.sentMs, cl.w.nowMs)
		cl.nextPartition()
	case response.Status == http.StatusOK:
		m, err := decodeWireMessage(response.Body)
		id := ""
		if err == nil {
			id, err = m.id()
		}
		if err != nil || m.Partition != partition || m.Offset != offset {
			cl.w.fail("client", "%s: bad replay reply %s (%v)", c.describe(), response.Body, err)
			return
		}
		cl.w.history.read(id, partition, offset, c.sentMs, cl.w.nowMs)
		if cl.final {
			cl.w.finalRead(id, m.TimestampMs)
		}
		cl.cursors[partition]++
	default:
		cl.unexpected(c, response)
		return
	}
	if !cl.done {
		cl.later(think, cl.replayNext)
	}
}

// finalRead keeps the earliest commit time of a record the final replay
// read (a retried produce may have committed it more than once).
func (w *World) finalRead(id string, committedMs int64) {
	if w.topicCommitMs == nil {
		w.topicCommitMs = map[string]int64{}
	}
	if first, ok := w.topicCommitMs[id]; !ok || committedMs < first {
		w.topicCommitMs[id] = committedMs
	}
}

func (cl *client) nextPartition() {
	cl.next = (cl.next + 1) % len(cl.cursors)
	if cl.final && cl.next == 0 {
		cl.done = true
	}
}

// finalReplayMsPerRecordMax bounds the final replay's simulated time per
// record produced: it reads one record per request, some forwarded.
const finalReplayMsPerRecordMax = 50

// finalReplay reads every partition from offset 0 to its high-watermark,
// so that every record in every log is observed: the log checker needs to
// place records whose produce never got an answer.
func (w *World) finalReplay() {
	r := newClient(w, "final", roleReplayer)
	r.cursors = make([]uint64, w.partitions)
	r.final = true
	w.clients = append(w.clients, r)
	r.replayNext()
	boundMs := livenessProbeMsMax + finalReplayMsPerRecordMax*int64(len(w.history.firstCallMs))
	deadlineMs := w.nowMs + boundMs
	w.loop(func() bool { return !r.done && w.nowMs < deadlineMs })
	if !r.done && w.failure == nil {
		w.fail("liveness", "the final replay did not finish within %d ms", boundMs)
	}
}
