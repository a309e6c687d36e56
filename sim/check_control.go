package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"narad/httpapi"
	"narad/msg"
)

// The control-plane workload, in simulated milliseconds.
const (
	// controlTopicsCount is how many topic names the operator works on:
	// few, so that its creates, alters and deletes meet.
	controlTopicsCount = 2
	// controlThinkMsMin and controlThinkMsMax bound the pause between two
	// of its operations.
	controlThinkMsMin = 100
	controlThinkMsMax = 1_500
	// controlCheckTimeout bounds porcupine's check of the history; a check
	// that times out is a failure ("unknown" is never a pass).
	controlCheckTimeout = 30 * time.Second
	// controlPartitionsMax bounds the partition count the operator grows
	// its topics to.
	controlPartitionsMax = 2 * msg.PartitionsMin
)

// controlPlane is an operator that creates, alters, grows and deletes a
// few small topics (the fewest partitions allowed at their creation, at
// most controlPartitionsMax) during the safety phase, and the record of
// what it saw. At the end, porcupine checks that every topic name behaved
// as a linearizable register (control-plane): a create answered 201 found
// no topic, 409 found one; an alter answered 200 found one and set its
// visibility timeout; a grow answered 200 found one (and its answer
// gives at least the count asked for: a grow to the count the topic has
// goes through the log too), 404 none, and 409 changed nothing; a delete
// answered 204 found one, 404 none. An operation with no answer, or a
// 5xx, may or may not have happened: the model allows both (porcupine's
// nondeterministic model).
//
// A grow below the count a node's replica has is refused 400 by that
// replica, which may lag (even behind a delete acknowledged before the
// grow was sent), so the model takes a grow's 400 in any state, with no
// effect. What checks that the grown partitions serve is the liveness
// probe after the heal (controlTopicProbes): every partition the
// committed log gives a control topic is replayed through every node,
// never answered 400 or 404.
//
// A write is answered by its proposer once applied there, so every
// answer of a create, alter or delete is in the history (a create's 409
// comes from the metastore's own check when the entry applies, never
// from a lagging replica's copy: seed 2 of the three-node moves world
// caught that). What a node answers from its own replica of the
// metastore, which may lag the leader, is left out: reads (GET, list).
type controlPlane struct {
	w   *World
	rng *rand.Rand
	cl  *client
	// operations holds the finished operations, in the order they ended.
	operations []porcupine.Operation
	// result is porcupine's verdict, for the report.
	result string
	// records are the operator's writes into its topics and its reads of
	// them (check_resurrect.go).
	records *controlRecords
	// purge aims failing removals and a crash at some of its deletes
	// (purge_faults.go).
	purge purgeFault
}

// controlKinds are the operator's operations and their shares, in
// percent: writes and reads of its topics' records (controlRecords), and
// the creates, alters and deletes porcupine checks.
var controlKinds = []struct {
	kind    string
	percent int
}{{"write", 20}, {"read", 20}, {"create", 20}, {"alter", 5}, {"grow", 15}, {"delete", 20}}

// controlKindOf maps a roll in [0, 100) to an operation's kind.
func controlKindOf(roll int) string {
	for _, k := range controlKinds {
		if roll < k.percent {
			return k.kind
		}
		roll -= k.percent
	}
	panic("sim: control roll out of range")
}

// controlInput is one operation: kind is "create", "alter", "grow" or
// "delete"; visibilityMs the value a create or an alter sets, partitions
// the count a grow asks for.
type controlInput struct {
	topic        string
	kind         string
	visibilityMs int
	partitions   int
}

// controlOutput is its answer: the status, 0 when none came or it was a
// 5xx (the operation's effect is unknown).
type controlOutput struct {
	status int
}

// controlStatuses are the answers a correct server gives the operator
// (0 standing for none, or a 5xx).
var controlStatuses = []int{0, http.StatusCreated, http.StatusConflict, http.StatusOK, http.StatusNoContent, http.StatusNotFound,
	http.StatusBadRequest}

// controlState is a topic name's register.
type controlState struct {
	exists       bool
	visibilityMs int
}

func newControlPlane(w *World) *controlPlane {
	cp := &controlPlane{w: w, rng: newRand(w.opts.Seed, controlStream), cl: newClient(w, "operator-ctl", roleAdmin)}
	cp.records = newControlRecords(cp)
	cp.purge.cp = cp
	return cp
}

// scheduleNext has the operator think, then send its next operation.
func (cp *controlPlane) scheduleNext() {
	cp.cl.later(int64(controlThinkMsMin+cp.rng.IntN(controlThinkMsMax)), cp.next)
}

// start schedules the operator's first operation.
func (cp *controlPlane) start() {
	cp.scheduleNext()
}

// next sends one operation on a random topic name to a random node: a
// create, alter or delete (checked by porcupine), or a write or read of
// the topic's records (checked by controlRecords).
func (cp *controlPlane) next() {
	if cp.w.phase != phaseSafety {
		return
	}
	in := controlInput{topic: fmt.Sprintf("ctl%d", cp.rng.IntN(controlTopicsCount)), visibilityMs: 1_000 + cp.rng.IntN(4_000)}
	in.kind = controlKindOf(cp.rng.IntN(100))
	if topic, forced := cp.purge.forcedRead(); forced {
		in.topic, in.kind = topic, "read" // after a purge fault's crash
	}
	if topic, forced := cp.purge.forcedCreate(); forced {
		in.topic, in.kind = topic, "create" // after a purge fault's delete
	}
	var c *call
	switch in.kind {
	case "write":
		cp.records.write(in.topic)
		return
	case "read":
		cp.records.read(in.topic, 0, 0)
		return
	case "create":
		body := fmt.Sprintf(`{"name":%q,"partitions":%d,"visibility_timeout_ms":%d}`, in.topic, msg.PartitionsMin, in.visibilityMs)
		c = &call{kind: "ctl-create", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics", "application/json", body)}
	case "alter":
		body := fmt.Sprintf(`{"visibility_timeout_ms":%d}`, in.visibilityMs)
		c = &call{kind: "ctl-alter", httpRequest: newHTTPRequest(http.MethodPatch, "/v1/topics/"+in.topic, "application/json", body)}
	case "grow":
		in.partitions = cp.growTo(in.topic)
		body := fmt.Sprintf(`{"partitions":%d}`, in.partitions)
		c = &call{kind: "ctl-grow", httpRequest: newHTTPRequest(http.MethodPatch, "/v1/topics/"+in.topic, "application/json", body)}
	default:
		cp.purge.arm(in.topic)
		c = &call{kind: "ctl-delete", httpRequest: newHTTPRequest(http.MethodDelete, "/v1/topics/"+in.topic, "", "")}
	}
	c.target = cp.w.clientNode(cp.rng)
	c.onDone = func(response *httpapi.Response) { cp.done(c, in, response) }
	cp.cl.send(c)
}

// done records an answered (or timed-out) operation and schedules the
// next one.
func (cp *controlPlane) done(c *call, in controlInput, response *httpapi.Response) {
	op := porcupine.Operation{ClientId: len(cp.operations), Input: in, Call: c.sentMs, Return: cp.w.nowMs}
	status := 0
	if response != nil && response.Status < 500 {
		status = response.Status
	}
	if status == 0 {
		op.Return = math.MaxInt64 // it may take effect at any later time
	}
	op.Output = controlOutput{status: status}
	if !slices.Contains(controlStatuses, status) {
		cp.w.fail("control-plane", "%s answered %d: %s", c.describe(), status, response.Body)
		return
	}
	if problem := controlAnswerProblem(in, status, response); problem != "" {
		cp.w.fail("control-plane", "%s answered %d with %s: %s", c.describe(), status, response.Body, problem)
		return
	}
	cp.operations = append(cp.operations, op)
	cp.records.answered(in, status)
	if in.kind == "create" {
		if status == http.StatusCreated {
			cp.records.created(in.topic, cp.w.nowMs)
		}
		cp.purge.created(in.topic, status)
	}
	cp.scheduleNext()
}

// growTo draws the count a grow asks for: mostly more than the operator
// believes the topic has (controlRecords.partitions), up to
// controlPartitionsMax; sometimes the same count (a grow retried), or
// one fewer (a shrink, refused).
func (cp *controlPlane) growTo(topic string) int {
	believed := cp.records.partitionsOf(topic)
	switch roll := cp.rng.IntN(100); {
	case roll < 15:
		return believed
	case roll < 30 && believed > msg.PartitionsMin:
		return believed - 1
	}
	return min(believed+1+cp.rng.IntN(2), controlPartitionsMax)
}

// controlAnswerProblem names what is wrong with an answer's body, beyond
// its status: an alter's 200 gives the visibility it set, a grow's 200
// at least the count it asked for, and a grow's 400 refuses a shrink; "" when
// nothing is.
func controlAnswerProblem(in controlInput, status int, response *httpapi.Response) string {
	switch {
	case status == http.StatusOK && in.kind == "alter" && !alterSetVisibility(response.Body, in.visibilityMs):
		return "not the visibility it set"
	case status == http.StatusOK && in.kind == "grow" && !grewTo(response.Body, in.partitions):
		return fmt.Sprintf("fewer than the %d partitions it asked for", in.partitions)
	case status == http.StatusBadRequest && (in.kind != "grow" || !strings.Contains(string(response.Body), "partitions can only grow")):
		return "a 400 that is not a grow's refused shrink"
	}
	return ""
}

func grewTo(body []byte, partitions int) bool {
	var info struct {
		Partitions int `json:"partitions"`
	}
	return json.Unmarshal(body, &info) == nil && info.Partitions >= partitions // a growth applied in the same batch may follow it
}

func alterSetVisibility(body []byte, visibilityMs int) bool {
	var info struct {
		VisibilityTimeoutMs int `json:"visibility_timeout_ms"`
	}
	return json.Unmarshal(body, &info) == nil && info.VisibilityTimeoutMs == visibilityMs
}

// check runs porcupine over the history, one partition per topic name.
func (cp *controlPlane) check() {
	result := porcupine.CheckOperationsTimeout(controlModel.ToModel(), cp.operations, controlCheckTimeout)
	cp.result = string(result)
	if result != porcupine.Ok {
		cp.w.fail("control-plane", "porcupine says %s over %d topic operations: a create, alter or delete answer no linearizable order explains: %s",
			result, len(cp.operations), cp.illegalTopic())
	}
}

// illegalTopic describes the operations of the first topic name whose
// history porcupine rejects, in call order.
func (cp *controlPlane) illegalTopic() string {
	model := controlModel.ToModel()
	for _, ops := range partitionByTopic(cp.operations) {
		if porcupine.CheckOperations(model, ops) {
			continue
		}
		sorted := slices.SortedStableFunc(slices.Values(ops), func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		var parts []string
		for _, op := range sorted {
			parts = append(parts, fmt.Sprintf("[%d,%d] %s", op.Call, op.Return, controlModel.DescribeOperation(op.Input, op.Output)))
		}
		return strings.Join(parts, "; ")
	}
	return "no single topic is illegal"
}

// controlModel is the register of one topic name; a status it does not
// know fails the step (no correct server gives it).
var controlModel = porcupine.NondeterministicModel{
	Partition: partitionByTopic,
	Init:      func() []any { return []any{controlState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(controlState), input.(controlInput), output.(controlOutput)
		applied, effect := controlEffect(s, in)
		switch {
		case out.status == 0:
			return []any{s, applied}
		case out.status == effect:
			return []any{applied}
		case in.kind == "grow" && out.status == http.StatusBadRequest:
			return []any{s} // a replica's refusal of a shrink: a read of a replica that may lag
		case in.kind == "grow" && out.status == http.StatusConflict && s.exists:
			return []any{s} // a replica that lagged proposed a growth the log had passed
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(controlInput), output.(controlOutput)
		return fmt.Sprintf("%s %s (visibility %d, partitions %d) -> %d", in.kind, in.topic, in.visibilityMs, in.partitions, out.status)
	},
}

// controlEffect is what an operation does to a register, and the status
// it answers.
func controlEffect(s controlState, in controlInput) (controlState, int) {
	switch {
	case in.kind == "create" && s.exists:
		return s, http.StatusConflict
	case in.kind == "create":
		return controlState{exists: true, visibilityMs: in.visibilityMs}, http.StatusCreated
	case !s.exists:
		return s, http.StatusNotFound
	case in.kind == "alter":
		return controlState{exists: true, visibilityMs: in.visibilityMs}, http.StatusOK
	case in.kind == "grow":
		return s, http.StatusOK
	}
	return controlState{}, http.StatusNoContent
}

func partitionByTopic(history []porcupine.Operation) [][]porcupine.Operation {
	byTopic := map[string][]porcupine.Operation{}
	for _, op := range history {
		topic := op.Input.(controlInput).topic
		byTopic[topic] = append(byTopic[topic], op)
	}
	out := make([][]porcupine.Operation, 0, len(byTopic))
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		out = append(out, byTopic[topic])
	}
	return out
}
