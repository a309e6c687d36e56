package sim

import (
	"encoding/json"
	"fmt"
	"net/http"

	"narad/httpapi"
	"narad/msg"
)

// The emptied-queue check. The drain ends once every acknowledged record
// was delivered and the consumers got nothing for a while; it counts
// records by id, so a second copy of a record (a retried produce) that
// stays in the queue for good, never delivered, or a committed offset
// that stops short of the high watermark (an ack applied but not
// counted, a skipped record never passed), is invisible to it: no record
// is lost. This check asks for what a user of a queue expects once the
// consumers have taken everything: each partition of the topic, as its
// owner describes it, has its committed offset at its high watermark and
// nothing in flight. The consumers keep running meanwhile, so a lease
// left open by a lost ack runs out and its record is delivered and acked
// again within the bound; they forget no delivery meanwhile (settle), or
// a record forgotten at each of its redeliveries (seed 6940127: five in a
// row, each one chance in 12) would stay in flight past any bound.

const (
	// emptiedMsMax bounds the wait: the longest visibility timeout of the
	// topic, a redelivery's quiet drain and a few retries.
	emptiedMsMax = visibilityMsMin + visibilityMsSpread + 2*drainQuietMs + 5_000
	// emptiedRetryMs is the pause between two descriptions.
	emptiedRetryMs = 250
)

// checkQueueEmptied describes the topic until every partition is emptied,
// and fails the run if one is not within emptiedMsMax.
func (w *World) checkQueueEmptied() {
	prober := newClient(w, "emptied", roleAdmin)
	w.clients = append(w.clients, prober)
	deadlineMs := w.nowMs + emptiedMsMax
	done, last := false, "no description answered"
	var describe func()
	describe = func() {
		c := &call{kind: "describe-emptied", httpRequest: newHTTPRequest(http.MethodGet, "/v1/topics/"+w.topic, "", "")}
		c.onDone = func(response *httpapi.Response) {
			if pending, answered := queuePending(response); answered && pending == "" {
				done = true
				return
			} else if answered {
				last = pending
			}
			prober.later(emptiedRetryMs, describe)
		}
		prober.send(c)
	}
	describe()
	w.emptying = true
	w.loop(func() bool { return !done && w.nowMs < deadlineMs })
	w.emptying = false
	if !done && w.failure == nil {
		w.fail("liveness", "the topic's queue was not emptied within %d ms of the drain: %s", emptiedMsMax, last)
	}
}

// queuePending reads a description of the topic: answered is false when
// there is none to read (an error, a node down); pending names the first
// partition not emptied, "" when every one is.
func queuePending(response *httpapi.Response) (pending string, answered bool) {
	if response == nil || response.Status != http.StatusOK {
		return "", false
	}
	var described msg.TopicDetail
	if json.Unmarshal(response.Body, &described) != nil || len(described.PartitionStats) == 0 {
		return "", false
	}
	for _, p := range described.PartitionStats {
		if !p.Available || p.Committed != p.HighWatermark || p.InFlight != 0 {
			return fmt.Sprintf("partition %d at %s: available %t, committed %d of %d, %d in flight",
				p.Index, p.OwnerNode, p.Available, p.Committed, p.HighWatermark, p.InFlight), true
		}
	}
	return "", true
}
