package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"narad/httpapi"
	"narad/msg"
)

// controlReadOffsetsMax bounds the offsets one read of the operator walks
// in a partition of its topics.
const controlReadOffsetsMax = 8

// controlRecords is the operator's data in its own topics, and the check
// that a topic created again never serves a record of an earlier creation
// of its name (control-resurrection). The operator is sequential, so a
// record whose produce it saw acknowledged (202) was appended before its
// next operation began: if a later create of the name was answered 201,
// the topic was absent at that create, so the creation holding the record
// had been deleted, and a read that starts after the 201 must not find
// the record. Records of produces with no answer are not judged (one
// could land after the create, in the new creation, legitimately).
//
// The check needs the deleted creation's files on disk (a delete whose
// removal failed, or a crash cut, before a restart): partition
// directories carry their creation's stamp (node: stampPartition), and
// this check is what fails when a node opens another creation's files.
type controlRecords struct {
	cp *controlPlane
	// createdMs are, by topic name, the return times of the creates
	// answered 201, in order.
	createdMs map[string][]int64
	// written maps an acknowledged record's payload to its topic and the
	// number of creates of the topic answered 201 before it was produced.
	written map[string]controlWrite
	// produced numbers the operator's payloads.
	produced int
	// judged counts the reads of acknowledged records the check judged.
	judged int
	// partitions is, by topic name, the count the operator believes the
	// topic has: msg.PartitionsMin from a create answered 201 (or none
	// seen), the count a grow answered 200 asked for when more. Its writes
	// and reads cover that many partitions; a belief that is wrong (an
	// operation with no answer took effect) only costs refusals.
	partitions map[string]int
}

// controlWrite is where an acknowledged record of the operator went.
type controlWrite struct {
	topic     string
	creations int
}

func newControlRecords(cp *controlPlane) *controlRecords {
	return &controlRecords{cp: cp, createdMs: map[string][]int64{}, written: map[string]controlWrite{}, partitions: map[string]int{}}
}

// partitionsOf is the count the operator believes topic has.
func (r *controlRecords) partitionsOf(topic string) int {
	return max(r.partitions[topic], msg.PartitionsMin)
}

// answered updates the belief from an answer of the register's
// operations: a create answered 201, a delete answered 204 and a 404 to
// anything leave the name with (or for) a new creation's count; a grow
// answered 200 has at least the count it asked for.
func (r *controlRecords) answered(in controlInput, status int) {
	switch {
	case status == http.StatusCreated, status == http.StatusNoContent, status == http.StatusNotFound:
		delete(r.partitions, in.topic)
	case status == http.StatusOK && in.kind == "grow":
		r.partitions[in.topic] = max(r.partitionsOf(in.topic), in.partitions)
	}
}

// created notes a create answered 201.
func (r *controlRecords) created(topic string, returnMs int64) {
	r.createdMs[topic] = append(r.createdMs[topic], returnMs)
}

// write produces one record into each partition the operator believes
// the topic has, in one batch, then goes on.
func (r *controlRecords) write(topic string) {
	var lines strings.Builder
	var payloads []string
	for partition := range r.partitionsOf(topic) {
		r.produced++
		payload := fmt.Sprintf("ctlw%d", r.produced)
		payloads = append(payloads, payload)
		fmt.Fprintf(&lines, "{\"payload\":%q,\"partition\":%d}\n", payload, partition)
	}
	c := &call{kind: "ctl-produce", target: r.cp.w.clientNode(r.cp.rng),
		httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics/"+topic+"/produce", "application/x-ndjson", lines.String())}
	c.onDone = func(response *httpapi.Response) {
		if response != nil && response.Status == http.StatusAccepted {
			for _, payload := range payloads {
				r.written[payload] = controlWrite{topic: topic, creations: len(r.createdMs[topic])}
			}
		}
		r.cp.scheduleNext()
	}
	r.cp.cl.send(c)
}

// read walks every partition the operator believes the topic has from
// offset 0, judging each record, until each ends or a read is refused,
// then goes on.
func (r *controlRecords) read(topic string, partition int, offset uint64) {
	target := fmt.Sprintf("/v1/topics/%s/consume?partition=%d&offset=%d", topic, partition, offset)
	c := &call{kind: "ctl-replay", target: r.cp.w.clientNode(r.cp.rng), httpRequest: newHTTPRequest(http.MethodGet, target, "", "")}
	c.onDone = func(response *httpapi.Response) {
		ok := response != nil && response.Status == http.StatusOK
		if ok && (!r.judge(c, topic, response.Body) || r.cp.w.failure != nil) {
			return
		}
		switch {
		case ok && offset+1 < controlReadOffsetsMax:
			r.read(topic, partition, offset+1)
		case partition+1 < r.partitionsOf(topic):
			r.read(topic, partition+1, 0) // ended, absent, moved or refused: the next partition
		default:
			r.cp.scheduleNext()
		}
	}
	r.cp.cl.send(c)
}

// judge fails the run when the record read belongs to a creation of the
// topic that a create answered 201 before the read began had replaced.
func (r *controlRecords) judge(c *call, topic string, body []byte) bool {
	var m wireMessage
	var payload string
	if json.Unmarshal(body, &m) != nil || json.Unmarshal(m.Payload, &payload) != nil || !strings.HasPrefix(payload, "ctlw") {
		r.cp.w.fail("control-resurrection", "%s: a reply that is not one of the operator's records: %s", c.describe(), body)
		return false
	}
	written, acknowledged := r.written[payload]
	if !acknowledged {
		return true
	}
	if written.topic != topic {
		r.cp.w.fail("control-resurrection", "%s returned %s, produced into topic %s", c.describe(), payload, written.topic)
		return false
	}
	if r.servedStale(topic) {
		return true
	}
	r.judged++
	creates := r.createdMs[topic]
	for k := written.creations; k < len(creates); k++ {
		if creates[k] <= c.sentMs {
			r.cp.w.fail("control-resurrection", "%s at %d ms returned %s, produced into creation %d of %s, but creation %d was answered 201 at %d ms: a deleted creation's record is served by its namesake",
				c.describe(), c.sentMs, payload, written.creations, topic, k+1, creates[k])
			return false
		}
	}
	return true
}

// servedStale reports whether a node that has not applied the topic's
// current creation is up: its replica may still hold the creation before
// as the topic, and serve (or forward to) that creation's partitions,
// which is allowed of a lagging replica (three-node moves seed 6368075:
// the purge fault's node restarted behind the log and answered a read
// from the deleted creation). A node that opens another creation's files
// as the current one has applied the current create, so it is judged.
// In a single node (no metaLog view) nothing is stale.
func (r *controlRecords) servedStale(topic string) bool {
	created, known := r.cp.w.metaLog.createdIndex[topic]
	if !known || !r.cp.w.clustered() {
		return false
	}
	for _, n := range r.cp.w.activeNodes() {
		if n.up() && n.node.MetaAppliedIndex() < created {
			return true
		}
	}
	return false
}
