package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"narad/httpapi"
	"narad/msg"
)

// Workload shape.
const (
	producerThinkMsMax = 40
	batchRecordsMax    = 12
	consumerThinkMsMax = 30
	// slowAckMs is how long a slow consumer holds its records before it
	// acks them: past the longest visibility timeout the workload sets, so
	// its handles may have been handed out again meanwhile.
	slowAckMs        = 6_000
	replayThinkMsMax = 60
	// The topic's visibility timeout, drawn at its creation and at every
	// alter: visibilityMsMin plus less than visibilityMsSpread.
	visibilityMsMin    = 1_000
	visibilityMsSpread = 4_000
)

// spawnWorkload starts producers, consumers and a replayer. Some seeds
// pin several producers on partition 0: a write storm on one partition.
func (w *World) spawnWorkload() {
	rng := w.workloadRng
	producers, consumers := 2+rng.IntN(4), 1+rng.IntN(3)
	if w.clustered() {
		// Requests cross nodes (forwards, consume probes), so a consumer
		// settles fewer records per second than on a single node: a
		// cluster has fewer producers and more consumers, or its backlog
		// would not drain.
		producers = (producers + 1) / 2
		consumers += 2 * producers
	}
	storm := rng.IntN(3) == 0
	for i := range producers {
		p := newClient(w, fmt.Sprintf("p%d", i+1), roleProducer)
		if storm && i > 0 {
			p.pinnedPartition = 0
		}
		w.clients = append(w.clients, p)
		p.later(int64(rng.IntN(50)), p.produceNext)
	}
	for i := range consumers {
		c := newClient(w, fmt.Sprintf("c%d", i+1), roleConsumer)
		w.clients = append(w.clients, c)
		c.later(int64(rng.IntN(50)), c.consumeNext)
	}
	if admin := w.clients[0]; admin.role == roleAdmin {
		admin.later(int64(1_000+rng.IntN(4_000)), admin.alterNext)
	}
	if w.deadLetters != nil {
		w.deadLetters.spawn()
	}
	w.agedOut.start()
	r := newClient(w, "r1", roleReplayer)
	r.cursors = make([]uint64, w.partitions)
	w.clients = append(w.clients, r)
	r.later(int64(rng.IntN(50)), r.replayNext)
	w.tracef("workload: %d producers, %d consumers, storm=%v", producers, consumers, storm)
}

// produceNext sends a new single or batch produce, while the safety phase
// lasts.
func (cl *client) produceNext() {
	if cl.w.phase != phaseSafety || (cl.storm != nil && !cl.storm.active()) {
		cl.busy = false
		return
	}
	if pauseMs := cl.w.agedOut.producersPausedFor(); pauseMs > 0 {
		cl.busy = false
		cl.later(pauseMs, cl.produceNext)
		return
	}
	cl.busy = true
	count := 1
	switch {
	case cl.storm != nil:
		count = stormBatchRecords
	case cl.w.workloadRng.IntN(3) == 0:
		count = 2 + cl.w.workloadRng.IntN(batchRecordsMax-1)
	}
	ids := make([]string, count)
	for i := range ids {
		ids[i] = cl.w.history.newID()
	}
	cl.produce(ids, count > 1, 1)
}

func (cl *client) produce(ids []string, batch bool, attempt int) {
	c := &call{kind: "produce", httpRequest: cl.produceRequest(ids, batch)}
	cl.w.history.produceCalled(ids, cl.w.nowMs)
	c.onDone = func(response *httpapi.Response) { cl.produced(c, ids, batch, attempt, response) }
	cl.send(c)
}

func (cl *client) produceRequest(ids []string, batch bool) *http.Request {
	target := "/v1/topics/" + cl.w.topic + "/produce"
	if !batch {
		if cl.pinnedPartition != msg.PartitionNone {
			target += fmt.Sprintf("?partition=%d", cl.pinnedPartition)
		}
		return newHTTPRequest(http.MethodPost, target, "text/plain", cl.payloadOf(ids[0]))
	}
	var lines strings.Builder
	for _, id := range ids {
		switch {
		case cl.pinnedPartition != msg.PartitionNone:
			fmt.Fprintf(&lines, "{\"payload\":%q,\"partition\":%d}\n", cl.payloadOf(id), cl.pinnedPartition)
		case cl.w.workloadRng.IntN(3) == 0: // keyed: spread by the key's hash
			fmt.Fprintf(&lines, "{\"key\":\"k%d\",\"payload\":%q}\n", cl.w.workloadRng.IntN(50), id)
		default:
			fmt.Fprintf(&lines, "{\"payload\":%q}\n", id)
		}
	}
	return newHTTPRequest(http.MethodPost, target, "application/x-ndjson", lines.String())
}

func (cl *client) produced(c *call, ids []string, batch bool, attempt int, response *httpapi.Response) {
	switch {
	case response != nil && response.Status == http.StatusAccepted:
		cl.w.history.produceAcked(ids, placementsOf(cl, c, response, batch), c.sentMs, cl.w.nowMs)
	case response != nil && response.Status < 500:
		cl.unexpected(c, response)
		return
	default:
		cl.retryProduce(ids, batch, attempt, response)
		return
	}
	cl.later(int64(cl.w.workloadRng.IntN(cl.thinkMsMax())), cl.produceNext)
}

// retryProduce handles a produce whose outcome is unknown (a timeout or a
// 5xx): the records may or may not have landed, so the same ids are sent
// again, up to produceAttemptsMax times.
func (cl *client) retryProduce(ids []string, batch bool, attempt int, response *httpapi.Response) {
	cl.w.history.produceIndefinite(cl.w.nowMs, response == nil)
	if attempt < produceAttemptsMax {
		cl.later(int64(10*attempt+cl.w.workloadRng.IntN(50)), func() { cl.produce(ids, batch, attempt+1) })
		return
	}
	cl.later(int64(cl.w.workloadRng.IntN(cl.thinkMsMax())), cl.produceNext)
}

// thinkMsMax bounds a producer's pause between two produces. A lull of
// the weather slows the workload's producers down (not a write storm's):
// without faults they would produce an order of magnitude more records
// than under them, and the end of a run reads every record.
func (cl *client) thinkMsMax() int {
	switch {
	case cl.storm != nil:
		return stormThinkMsMax
	case cl.w.weather.calm(cl.w.nowMs):
		return producerThinkMsMax * lullThinkFactor
	}
	return producerThinkMsMax
}

func placementsOf(cl *client, c *call, response *httpapi.Response, batch bool) []msg.Placement {
	if !batch {
		var placement msg.Placement
		if err := json.Unmarshal(response.Body, &placement); err != nil {
			cl.w.fail("client", "bad produce reply %s: %v", response.Body, err)
		}
		return []msg.Placement{placement}
	}
	var result struct {
		Accepted int             `json:"accepted"`
		Records  []msg.Placement `json:"records"`
	}
	if err := json.Unmarshal(response.Body, &result); err != nil || result.Accepted != len(result.Records) {
		cl.w.fail("client", "bad batch produce reply %s: %v", response.Body, err)
	}
	return result.Records
}

// wireMessage is the consumed-message JSON (docs/api.md#consumed-message).
type wireMessage struct {
	Partition       int             `json:"partition"`
	Offset          uint64          `json:"offset"`
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	ReceiptHandle   string          `json:"receipt_handle"`
	DeliveryCount   int             `json:"delivery_count"`
	// TimestampMs is the record's commit time at its owner.
	TimestampMs int64 `json:"timestamp_ms"`
}

// id extracts the message id: every simulated payload is an id, sent as
// text (single produce) or as a JSON string (batch); both come back as a
// JSON string.
func (m wireMessage) id() (string, error) {
	payload, plain := plainJSONString(m.Payload)
	if !plain {
		if err := json.Unmarshal(m.Payload, &payload); err != nil {
			return "", fmt.Errorf("payload %s is not an id: %w", m.Payload, err)
		}
	}
	return checkedIDOfPayload(payload)
}

// plainJSONString returns the string a JSON string of printable ASCII
// without escapes holds (what encoding/json decodes it to); ok is false
// for anything else.
func plainJSONString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(inner), true
}

// alterNext changes the topic's visibility timeout now and then during the
// safety phase, as an operator might: leases taken before keep their
// deadline, later ones get the new timeout.
func (cl *client) alterNext() {
	if cl.w.phase != phaseSafety {
		return
	}
	visibilityMs := visibilityMsMin + cl.w.workloadRng.IntN(visibilityMsSpread)
	body := fmt.Sprintf(`{"visibility_timeout_ms":%d}`, visibilityMs)
	c := &call{kind: "alter-topic", httpRequest: newHTTPRequest(http.MethodPatch, "/v1/topics/"+cl.w.topic, "application/json", body)}
	c.onDone = func(response *httpapi.Response) {
		if response != nil && response.Status != http.StatusOK && response.Status < 500 {
			cl.unexpected(c, response)
			return
		}
		cl.later(int64(2_000+cl.w.workloadRng.IntN(6_000)), cl.alterNext)
	}
	cl.send(c)
}

// witnessProduce produces one record pinned to partition at node n, once,
// with no retry; acked runs after its 202 was recorded. The record counts
// in the accounting as any other.
func (w *World) witnessProduce(n *simNode, partition int, acked func()) {
	cl := newClient(w, "witness", roleProducer)
	cl.pinnedPartition = partition
	ids := []string{w.history.newID()}
	c := &call{kind: "produce", httpRequest: cl.produceRequest(ids, false), target: n}
	w.history.produceCalled(ids, w.nowMs)
	c.onDone = func(response *httpapi.Response) {
		if response == nil || response.Status != http.StatusAccepted {
			w.history.produceIndefinite(w.nowMs, response == nil)
			return
		}
		w.history.produceAcked(ids, placementsOf(cl, c, response, false), c.sentMs, w.nowMs)
		acked()
	}
	cl.send(c)
}
