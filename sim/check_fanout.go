package sim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"narad/httpapi"
)

// The fan-out scenario (Options.Fanout): the topic gets a fan-out child
// and a delay child before the workload starts, and after the drain a
// reader checks that every record answered 202 in the parent reached both
// children, the delayed one no earlier than its commit time plus the
// delay (docs/api.md#fan-out-children).
const (
	// fanoutDelayMs is the delay child's delay: long enough that a move
	// of a parent partition often finds a backlog not yet due.
	fanoutDelayMs = 1_500
	// fanoutReadMsMax bounds the end-of-run reading of the children: past
	// it, a record still missing fails the run (liveness).
	fanoutReadMsMax = 60_000
	// fanoutRoundPauseMs is the pause between two reading rounds.
	fanoutRoundPauseMs = 200
	// fanoutMissingShown bounds the ids a failure lists.
	fanoutMissingShown = 5
)

// fanoutChild is one child of the scenario.
type fanoutChild struct {
	name    string
	delayMs int64
}

func (w *World) fanoutChildren() []fanoutChild {
	return []fanoutChild{{name: w.topic + "-copy"}, {name: w.topic + "-later", delayMs: fanoutDelayMs}}
}

// createChildren creates the children one after the other, each with the
// topic as its parent, then starts the safety phase.
func (cl *client) createChildren(children []fanoutChild) {
	if len(children) == 0 {
		cl.w.phase = phaseSafety
		return
	}
	child := children[0]
	body := fmt.Sprintf(`{"name":%q,"parent":%q,"fanout_delay_ms":%d}`, child.name, cl.w.topic, child.delayMs)
	c := &call{kind: "create-child", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics", "application/json", body)}
	c.onDone = func(response *httpapi.Response) {
		switch {
		case response != nil && (response.Status == http.StatusCreated || response.Status == http.StatusConflict):
			cl.createChildren(children[1:]) // 409: an earlier attempt applied, its answer was lost
		case response != nil && response.Status < 500:
			cl.w.fail("client", "create child %s answered %d: %s", child.name, response.Status, response.Body)
		default:
			cl.later(100, func() { cl.createChildren(children) })
		}
	}
	cl.send(c)
}

// fanoutReader reads the children to their ends by replay, round after
// round, remembering how far it got. The parent needs no second reading:
// the final replay, just before, read every record of it
// (World.topicCommitMs).
type fanoutReader struct {
	cl *client
	// topics are the children, in fanoutChildren order.
	topics []string
	// cursors[topic][partition] is the next offset to read.
	cursors map[string][]uint64
	// seen[topic][id] is the earliest commit time of id in topic.
	seen map[string]map[string]int64
	// at is the topic and partition being read.
	topicIndex, partition int
	deadlineMs            int64
	done                  bool
}

// checkFanout reads the children until every acknowledged record is in
// each (or fanoutReadMsMax passes), then checks the delay.
func (w *World) checkFanout() {
	r := &fanoutReader{cl: newClient(w, "fanout-reader", roleReplayer),
		cursors: map[string][]uint64{}, seen: map[string]map[string]int64{}, deadlineMs: w.nowMs + fanoutReadMsMax}
	w.clients = append(w.clients, r.cl)
	for _, child := range w.fanoutChildren() {
		r.topics = append(r.topics, child.name)
	}
	for _, topic := range r.topics {
		r.cursors[topic], r.seen[topic] = make([]uint64, w.partitions), map[string]int64{}
	}
	r.readNext()
	w.loop(func() bool { return !r.done })
	if w.failure == nil {
		r.checkComplete(true)
	}
	if w.failure == nil {
		r.checkDelay()
	}
}

func (r *fanoutReader) readNext() {
	topic := r.topics[r.topicIndex]
	offset := r.cursors[topic][r.partition]
	target := fmt.Sprintf("/v1/topics/%s/consume?partition=%d&offset=%d", topic, r.partition, offset)
	c := &call{kind: "fanout-read", httpRequest: newHTTPRequest(http.MethodGet, target, "", "")}
	c.onDone = func(response *httpapi.Response) { r.read(c, topic, response) }
	r.cl.send(c)
}

// read takes one replay answer: a record moves the cursor on, the end of
// a partition moves to the next one.
func (r *fanoutReader) read(c *call, topic string, response *httpapi.Response) {
	switch {
	case response == nil || response.Status >= 500 || response.Status == http.StatusMisdirectedRequest:
		r.cl.later(50, r.readNext)
		return
	case response.Status == http.StatusNoContent:
		r.nextPartition()
		return
	case response.Status != http.StatusOK:
		r.cl.unexpected(c, response)
		return
	}
	m, err := decodeWireMessage(response.Body)
	id := ""
	if err == nil {
		id, err = m.id()
	}
	if err != nil {
		r.cl.w.fail("client", "%s: bad replay reply %s (%v)", c.describe(), response.Body, err)
		return
	}
	if first, ok := r.seen[topic][id]; !ok || m.TimestampMs < first {
		r.seen[topic][id] = m.TimestampMs
	}
	r.cursors[topic][r.partition]++
	r.cl.later(0, r.readNext)
}

// nextPartition moves on; after a whole round it stops when every child
// is complete or the time is up, else pauses and reads again.
func (r *fanoutReader) nextPartition() {
	r.partition++
	if r.partition == r.cl.w.partitions {
		r.partition, r.topicIndex = 0, r.topicIndex+1
	}
	if r.topicIndex < len(r.topics) {
		r.cl.later(0, r.readNext)
		return
	}
	r.topicIndex = 0
	if r.checkComplete(false) || r.cl.w.nowMs >= r.deadlineMs {
		r.done = true
		return
	}
	r.cl.later(fanoutRoundPauseMs, r.readNext)
}

// checkComplete reports whether every record answered 202 in the parent
// is in every child, except those a media fault destroyed at every
// placement they were acknowledged at (history.excused: a child copies
// from the parent's log, where they are no more) and those retention took
// from every placement they were acknowledged at before a copy reached
// them (fanoutAgedOut.excused); with fail it fails the run naming what is
// missing, and counts the records retention excused.
// A record in a child that nobody produced fails the run at once.
func (r *fanoutReader) checkComplete(fail bool) bool {
	h := r.cl.w.history
	for _, topic := range r.topics {
		for _, id := range slices.Sorted(maps.Keys(r.seen[topic])) {
			if _, attempted := h.firstCallMs[id]; !attempted {
				r.cl.w.fail("nothing-invented", "child %s holds %s, which nobody produced", topic, id)
				return true
			}
		}
		var missing []string
		for _, id := range slices.Sorted(maps.Keys(h.acked)) {
			_, ok := r.seen[topic][id]
			switch {
			case ok || h.excused(id):
			case r.cl.w.agedOut.excused(id):
				if fail {
					r.cl.w.agedOut.excusedIDs++
				}
			default:
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 && fail {
			r.cl.w.fail("fanout-complete", "%d records answered 202 in %s never reached its child %s within %d ms of the drain (first: %v)",
				len(missing), r.cl.w.topic, topic, fanoutReadMsMax, h.placed(missing[:min(len(missing), fanoutMissingShown)]))
		}
		if len(missing) > 0 {
			return false
		}
	}
	return true
}

// checkDelay fails the run when a delay child holds a record earlier
// than its first commit in the parent plus the delay. A record a media
// fault destroyed a copy of in the parent is not judged: its first commit
// may be the copy destroyed, which no reader saw (seed 2400261 of the
// three-node moves world with -media-clusters: the child held the first
// copy, the parent only a retried produce's later one). Likewise a copy
// retention took (fanout_agedout.go): a record produced before a removal
// is judged from its first produce call instead, which its first commit
// cannot precede (seed 3200100 of the aged-out world: the child held the
// first copy, retention had taken it, the parent kept a retry's later one).
func (r *fanoutReader) checkDelay() {
	parent := r.cl.w.topicCommitMs
	destroyed := map[string]bool{}
	for _, id := range r.cl.w.history.corrupt { //determinism:ok a set is built
		destroyed[id] = true
	}
	for _, child := range r.cl.w.fanoutChildren() {
		for _, id := range slices.Sorted(maps.Keys(r.seen[child.name])) {
			committedMs, inParent := parent[id]
			if r.cl.w.agedOut.mayHaveTaken(id) {
				committedMs, inParent = r.cl.w.history.firstCallMs[id], true
			}
			// Both times are nodes' clocks, the parent's owner's and the
			// child's, which may differ by the clocks' spread.
			if atMs := r.seen[child.name][id]; inParent && !destroyed[id] && atMs < committedMs+child.delayMs-r.cl.w.clockSkew.spreadMs() {
				r.cl.w.fail("fanout-delay", "%s reached %s at %d ms, %d ms after its commit in %s at %d ms: earlier than its delay of %d ms",
					id, child.name, atMs, atMs-committedMs, r.cl.w.topic, committedMs, child.delayMs)
				return
			}
		}
	}
}
