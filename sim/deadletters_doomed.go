package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"narad/httpapi"
	"narad/msg"
)

// The doomed topics (Options.DeadLettersAimed, with DeadLetters in a
// cluster): an operator creates a small topic whose dead letters go to
// the scenario's dead-letter topic with max_deliveries 1, produces a few
// keyed records to it, consumes them and nacks every one (each is then a
// dead letter), and deletes the topic while their dead letters are being
// written; then it starts over with a topic of another name (the state
// checker knows a partition directory by its name for the whole run),
// through the safety phase. The peer network loses every forwarded write
// of a doomed topic's dead letters (a lost message is within the
// transport's contract), so a batch whose copies go to another node stays
// in flight until its forward times out: the deletion applies meanwhile,
// and the batch ends with its source partition gone
// (chaos.MarkNodeDeadLetterOrphaned). A move's flip ends a batch so too,
// but a source refuses new batches once frozen and a move's freeze and
// flip are quick: 0 in 30 seeds of the three-node moves world with dead
// letters.
//
// The doomed topics' records are nobody's workload: their ids are not in
// the history, and the dead-letter consumer takes their dead letters
// (origin topic named doomedPrefix and a round, at least one delivery)
// without counting them. Nothing the operator sees fails the run: its
// requests may be lost or refused under faults, and it goes on with its
// next step.
const (
	doomedPrefix     = "doomed-"
	doomedPartitions = msg.PartitionsMin
	// doomedRecords is how many records a round produces, each with a
	// key of its own, so that their dead letters spread over the
	// dead-letter topic's partitions (and owners).
	doomedRecords = 6
	// doomedConsumeWaitMs bounds the round's consume.
	doomedConsumeWaitMs = 300
	// doomedDeleteAfterMs is the pause between the nacks and the delete:
	// long enough for the owner to start writing the dead letters, well
	// within the node's forward timeout (clusterForwardTimeoutMs).
	doomedDeleteAfterMs = 200
	// doomedRoundPauseMs is the pause between two rounds.
	doomedRoundPauseMs = 300
	// doomedRetryMs is the pause before a step that got no answer or an
	// error goes on.
	doomedRetryMs = 200
)

// doomed is the doomed topics' operator.
type doomed struct {
	// d is the scenario whose dead-letter topic the doomed topics name,
	// and cl the operator's client; both fixed.
	d  *deadLetters
	cl *client
	// round numbers the rounds, for the topic's name and the records'
	// ids.
	round int
	// rounds counts the rounds that reached the delete; delivered the
	// dead letters of doomed topics the consumer took.
	rounds, delivered int
}

// spawnDoomed starts the operator in a world that aims at orphaned dead
// letters.
func (d *deadLetters) spawnDoomed() {
	if !d.w.opts.DeadLettersAimed || !d.w.clustered() {
		return
	}
	d.doomed = &doomed{d: d, cl: newClient(d.w, "doomed", roleAdmin)}
	d.w.clients = append(d.w.clients, d.doomed.cl)
	d.doomed.cl.later(int64(d.rng.IntN(1_000)), d.doomed.next)
}

// topic is the name of the round's topic.
func (o *doomed) topic() string { return fmt.Sprintf("%s%d", doomedPrefix, o.round) }

// next starts a round.
func (o *doomed) next() {
	o.round++
	o.create()
}

// send sends a call of the operator to a node of its own draw, then
// calls then with the answer (nil when lost) while the safety phase lasts.
func (o *doomed) send(kind, method, target, contentType, body string, then func(*httpapi.Response)) {
	if o.d.w.phase != phaseSafety {
		return
	}
	c := &call{kind: kind, httpRequest: newHTTPRequest(method, target, contentType, body), target: o.d.w.clientNode(o.d.rng)}
	if kind == "doomed-consume" {
		c.timeoutMs = doomedConsumeWaitMs + longPollGraceMs
	}
	c.onDone = func(response *httpapi.Response) {
		if o.d.w.phase == phaseSafety {
			then(response)
		}
	}
	o.cl.send(c)
}

func (o *doomed) create() {
	body := fmt.Sprintf(`{"name":%q,"partitions":%d,"max_deliveries":1,"dead_letter_topic":%q}`, o.topic(), doomedPartitions, o.d.topic)
	o.send("doomed-create", http.MethodPost, "/v1/topics", "application/json", body, func(response *httpapi.Response) {
		if response == nil || (response.Status != http.StatusCreated && response.Status != http.StatusConflict) {
			o.cl.later(doomedRetryMs, o.create)
			return
		}
		o.produce()
	})
}

func (o *doomed) produce() {
	var lines strings.Builder
	for i := range doomedRecords {
		fmt.Fprintf(&lines, "{\"key\":\"d%d\",\"payload\":%q}\n", i, fmt.Sprintf("doomed-%d-%d", o.round, i))
	}
	target := "/v1/topics/" + o.topic() + "/produce"
	o.send("doomed-produce", http.MethodPost, target, "application/x-ndjson", lines.String(), func(*httpapi.Response) {
		o.consume() // whatever the answer: some records may be there
	})
}

func (o *doomed) consume() {
	target := fmt.Sprintf("/v1/topics/%s/consume?wait=%dms&max=%d", o.topic(), doomedConsumeWaitMs, msg.ConsumeBatchMax)
	o.send("doomed-consume", http.MethodGet, target, "", "", func(response *httpapi.Response) {
		var body struct {
			Messages []wireMessage `json:"messages"`
		}
		if response == nil || response.Status != http.StatusOK || json.Unmarshal(response.Body, &body) != nil || len(body.Messages) == 0 {
			o.cl.later(doomedRetryMs, o.delete)
			return
		}
		handles := make([]string, len(body.Messages))
		for i, m := range body.Messages {
			handles[i] = m.ReceiptHandle
		}
		o.nack(handles)
	})
}

// nack releases the records: with max_deliveries 1 each is a dead letter.
func (o *doomed) nack(handles []string) {
	body := `{"receipt_handles":["` + strings.Join(handles, `","`) + `"],"extend":"0"}`
	o.send("doomed-nack", http.MethodPost, "/v1/topics/"+o.topic()+"/ack", "application/json", body, func(*httpapi.Response) {
		o.cl.later(doomedDeleteAfterMs, o.delete)
	})
}

func (o *doomed) delete() {
	o.send("doomed-delete", http.MethodDelete, "/v1/topics/"+o.topic(), "", "", func(response *httpapi.Response) {
		if response == nil || (response.Status != http.StatusNoContent && response.Status != http.StatusNotFound) {
			o.cl.later(doomedRetryMs, o.delete)
			return
		}
		o.rounds++
		o.cl.later(doomedRoundPauseMs, o.next)
	})
}

// receivedDoomed takes a dead letter of a doomed topic; it reports
// false for a message whose origin is not the doomed topic.
func (d *deadLetters) receivedDoomed(c *call, m deadLetterMessage) (doomed, ok bool) {
	if d.doomed == nil || m.DeadLetter == nil || !strings.HasPrefix(m.DeadLetter.Topic, doomedPrefix) {
		return false, true
	}
	if m.DeadLetter.DeliveryCount < 1 {
		d.w.fail("dead-letter-origin", "%s: dead letter of %s with %d deliveries", c.describe(), m.DeadLetter.Topic, m.DeadLetter.DeliveryCount)
		return true, false
	}
	d.doomed.delivered++
	return true, true
}

// losesAimedWrite reports whether the peer network loses env, a message
// leaving its sender: a forwarded write of dead letters of a doomed
// topic.
func (d *deadLetters) losesAimedWrite(env msg.Envelope) bool {
	if d == nil || d.doomed == nil {
		return false
	}
	forward, ok := env.Message.(msg.ForwardRequest)
	if !ok {
		return false
	}
	produce, ok := forward.Request.(msg.Produce)
	if !ok || produce.Topic != d.topic {
		return false
	}
	for _, record := range produce.Records {
		if record.Origin != nil && strings.HasPrefix(record.Origin.Topic, doomedPrefix) {
			d.w.tracef("net %s>%s dead letters of %s lost (aimed)", env.From, env.To, record.Origin.Topic)
			return true
		}
	}
	return false
}

// doomedCounts are the report's counts: the doomed topics' rounds that
// reached the delete, and their dead letters the consumer took; 0
// without them.
func (d *deadLetters) doomedCounts() (rounds, delivered int) {
	if d == nil || d.doomed == nil {
		return 0, 0
	}
	return d.doomed.rounds, d.doomed.delivered
}
