package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"narad/httpapi"
	"narad/msg"
	"narad/rebalance"
)

// Probes, in simulated milliseconds.
const (
	probeRetryMs = 100
	// livenessProbeMsMax bounds the cluster's liveness checks after the
	// drain: a leader, every member alive, every node serving every
	// partition.
	livenessProbeMsMax = 30_000
	// restsWaitMsMax bounds how much longer than livenessProbeMsMax the
	// placement may take to settle while a leader rests a destination: the
	// longest rest (16 times moveDestinationRestMs), then
	// livenessProbeMsMax for the moves it then gets.
	restsWaitMsMax = 16*moveDestinationRestMs + livenessProbeMsMax
)

// probeSpec is one request an operator's client repeats until its answer
// is what it waits for.
type probeSpec struct {
	// target is the node asked; nil asks a random node each time.
	target *simNode
	kind   string
	url    string
	// judge accepts a response (true) or asks for a retry (false); it
	// fails the run itself for an answer no correct server gives. The
	// response is nil when the request timed out.
	judge func(c *call, response *httpapi.Response) bool
}

// probe sends spec's request until judge accepts an answer, then runs
// next. It gives up silently when the world ends. A target retired
// meanwhile (a drained node the late joiner let leave the voters) is
// asked no more.
func (cl *client) probe(spec probeSpec, next func()) {
	if spec.target != nil && spec.target.retired {
		next()
		return
	}
	c := &call{kind: spec.kind, target: spec.target, httpRequest: newHTTPRequest(http.MethodGet, spec.url, "", "")}
	c.onDone = func(response *httpapi.Response) {
		if spec.judge(c, response) {
			next()
			return
		}
		if cl.w.failure == nil {
			cl.later(probeRetryMs, func() { cl.probe(spec, next) })
		}
	}
	cl.send(c)
}

// awaitMembers asks random nodes for the members until every node is an
// alive member, or waitMsMax passed; then runs then.
func (cl *client) awaitMembers(waitMsMax int64, then func()) {
	deadlineMs := cl.w.nowMs + waitMsMax
	spec := probeSpec{kind: "members", url: "/v1/cluster/members", judge: func(c *call, response *httpapi.Response) bool {
		if cl.w.nowMs >= deadlineMs {
			cl.w.tracef("setup: not every node is an alive member after %d ms", waitMsMax)
			return true
		}
		return cl.w.allMembersAlive(c, response)
	}}
	cl.probe(spec, then)
}

// allMembersAlive judges a members listing: every node of the world is
// listed, alive.
func (w *World) allMembersAlive(c *call, response *httpapi.Response) bool {
	if !w.answered(c, response, http.StatusOK) {
		return false
	}
	var result msg.MembersResult
	if err := json.Unmarshal(response.Body, &result); err != nil {
		w.fail("client", "%s: bad members listing %s: %v", c.describe(), response.Body, err)
		return false
	}
	alive := map[string]bool{}
	for _, m := range result.Members {
		alive[m.ID] = m.Status == "alive"
	}
	for _, n := range w.activeNodes() {
		if !alive[n.id] {
			return false
		}
	}
	return true
}

// judgeOwners takes the owners from a topic description and compares
// them with the committed ones.
func (w *World) judgeOwners(c *call, response *httpapi.Response) bool {
	if !w.answered(c, response, http.StatusOK) {
		return false
	}
	var detail msg.TopicDetail
	if err := json.Unmarshal(response.Body, &detail); err != nil || len(detail.PartitionStats) != w.partitions {
		w.fail("client", "%s: bad topic description %s (%v)", c.describe(), response.Body, err)
		return false
	}
	owners := make([]string, w.partitions)
	for _, stats := range detail.PartitionStats {
		if stats.Index < 0 || stats.Index >= w.partitions || stats.OwnerNode == "" {
			w.fail("client", "%s: partition stats without an owner: %+v", c.describe(), stats)
			return false
		}
		owners[stats.Index] = stats.OwnerNode
	}
	return w.owners.judgeOwners(c, owners)
}

// answered reports whether a probe got the wanted status. A timeout or a
// 5xx is retried; any other status fails the run.
func (w *World) answered(c *call, response *httpapi.Response, status int) bool {
	switch {
	case response == nil || response.Status >= 500:
		return false
	case response.Status != status:
		w.fail("client", "%s: unexpected %d: %s", c.describe(), response.Status, response.Body)
		return false
	}
	return true
}

// checkClusterLiveness runs once the backlog drained and the final replay
// finished: every node not retired is up, one node leads and has applied
// an entry of its term, the placement settled (every move finished or was
// aborted, no draining node owns a partition, the planner plans nothing),
// and through every node the members are all alive, the owners are the
// committed ones, and every partition can be replayed.
func (w *World) checkClusterLiveness() {
	if w.moves != nil {
		w.moves.checkLateJoin()
		if w.failure != nil {
			return
		}
	}
	for _, n := range w.activeNodes() {
		if !n.up() {
			w.fail("liveness", "%s is still down after healing", n.id)
			return
		}
	}
	deadlineMs := w.nowMs + livenessProbeMsMax
	w.loop(func() bool { return !w.oneLeader() && w.nowMs < deadlineMs })
	if w.failure == nil && !w.oneLeader() {
		leaders, terms := w.raft.freshLeaders()
		w.fail("liveness", "no single leader with its barrier after healing: leaders %v of terms %v", nodeIDs(leaders), terms)
		return
	}
	latestMs := deadlineMs + restsWaitMsMax
	w.loop(func() bool {
		// a rest's end counts once it is known, and after it ended; never
		// past latestMs, so a destination that fails again after each rest
		// (a bug) fails the check instead of holding it for good
		deadlineMs = min(w.placementDeadlineMs(deadlineMs), latestMs)
		return w.placementUnsettled() != "" && w.nowMs < deadlineMs
	})
	if unsettled := w.placementUnsettled(); w.failure == nil && unsettled != "" {
		w.fail("liveness", "the placement did not settle after healing: %s", unsettled)
		return
	}
	probes := w.livenessProbes()
	prober := newClient(w, "probe", roleAdmin)
	w.clients = append(w.clients, prober)
	done := 0
	var runFrom func(i int)
	runFrom = func(i int) {
		done = i
		if i < len(probes) {
			prober.probe(probes[i], func() { runFrom(i + 1) })
		}
	}
	runFrom(0)
	w.loop(func() bool { return done < len(probes) && w.nowMs < deadlineMs })
	if w.failure == nil && done < len(probes) {
		w.fail("liveness", "%s through %s did not succeed within %d ms of the drain (last owners mismatch: %q; replicas: %s)",
			probes[done].kind, probes[done].target.id, livenessProbeMsMax, w.owners.describeMismatch, w.replicaSummary())
	}
}

// placementDeadlineMs is how long the liveness check waits for the
// placement to settle: deadlineMs, or longer while a leader rests a
// destination that failed moves in a row (each rest since its last
// completed move twice as long, up to 16 times moveDestinationRestMs):
// until the rest ends plus livenessProbeMsMax for the moves it then
// gets. A destination that failed four times in a row rests 48 s, past
// the usual deadline, and the planner rightly gives it nothing meanwhile.
//
// The extensions together stay under restsWaitMsMax past the usual
// deadline: the longest rest, then livenessProbeMsMax.
func (w *World) placementDeadlineMs(deadlineMs int64) int64 {
	for _, n := range w.activeNodes() {
		if !n.up() {
			continue
		}
		if endMs := n.node.RestsEndMs(); endMs > 0 {
			deadlineMs = max(deadlineMs, endMs-n.clockOffsetMs+livenessProbeMsMax)
		}
	}
	return deadlineMs
}

// replicaSummary lists each running node's metastore replica: term,
// commit, applied and snapshot index, and the leader it knows.
func (w *World) replicaSummary() string {
	var parts []string
	for _, n := range w.activeNodes() {
		if !n.up() {
			parts = append(parts, n.id+" down")
			continue
		}
		s := n.node.MetaStatus()
		parts = append(parts, fmt.Sprintf("%s term %d commit %d applied %d snapshot %d leader %q", n.id, s.Term, s.Commit,
			s.Applied, s.SnapshotIndex, s.Leader))
	}
	return strings.Join(parts, "; ")
}

// oneLeader reports whether exactly one up node leads lately and it
// reached its barrier.
func (w *World) oneLeader() bool {
	leaders, terms := w.raft.freshLeaders()
	return len(leaders) == 1 && w.raft.hasBarrier(terms[0])
}

// livenessProbes lists, for every node: the members, the topic's owners,
// and a replay of offset 0 of every partition.
func (w *World) livenessProbes() []probeSpec {
	var probes []probeSpec
	for _, n := range w.activeNodes() {
		probes = append(probes,
			probeSpec{target: n, kind: "members", url: "/v1/cluster/members", judge: w.allMembersAlive},
			probeSpec{target: n, kind: "describe", url: "/v1/topics/" + w.topic, judge: w.judgeOwners})
		for partition := range w.partitions {
			url := fmt.Sprintf("/v1/topics/%s/consume?partition=%d&offset=0", w.topic, partition)
			probes = append(probes, probeSpec{target: n, kind: fmt.Sprintf("replay-p%d", partition), url: url, judge: w.judgeReplay(partition)})
		}
		probes = append(probes, w.controlTopicProbes(n)...)
	}
	return probes
}

// controlTopicProbes replay offset 0 of every partition the committed log
// gives the operator's topics (grown by it, check_control.go) through n.
func (w *World) controlTopicProbes(n *simNode) []probeSpec {
	var probes []probeSpec
	for i := range controlTopicsCount {
		topic := fmt.Sprintf("ctl%d", i)
		for partition := range w.metaLog.topics[topic] {
			url := fmt.Sprintf("/v1/topics/%s/consume?partition=%d&offset=0", topic, partition)
			probes = append(probes, probeSpec{target: n, kind: fmt.Sprintf("ctl-replay-%s-p%d", topic, partition), url: url,
				judge: w.judgeControlReplay(topic, partition)})
		}
	}
	return probes
}

// judgeControlReplay accepts a replay of offset 0 of a partition of the
// operator's topic that the committed log has: its record, nothing yet,
// or 410 (the record lost to a fault). A 400 or 404 fails the run: the
// node refused a partition, or a topic, the log committed and the
// cluster has healed since (a node that never applied a growth, or
// refused a pin to a partition it had not applied yet instead of waiting
// for it). A partition the log no longer has (a delete applied late) is
// not judged.
func (w *World) judgeControlReplay(topic string, partition int) func(c *call, response *httpapi.Response) bool {
	return func(c *call, response *httpapi.Response) bool {
		switch {
		case partition >= len(w.metaLog.topics[topic]):
			return true
		case response == nil || response.Status >= 500 || response.Status == http.StatusMisdirectedRequest:
			return false
		case response.Status == http.StatusOK:
			return w.control.records.judge(c, topic, response.Body)
		case response.Status == http.StatusNoContent || response.Status == http.StatusGone:
			return true
		}
		w.fail("control-grow", "%s: %d for partition %d of %s, which the log gives %d partitions: %s", c.describe(), response.Status,
			partition, topic, len(w.metaLog.topics[topic]), response.Body)
		return false
	}
}

// judgeReplay accepts a replay of offset 0 of a partition: the record
// there (recorded for the log checker), nothing yet, or 410 when a media
// fault destroyed that record (media_faults.go): the partition served.
func (w *World) judgeReplay(partition int) func(c *call, response *httpapi.Response) bool {
	return func(c *call, response *httpapi.Response) bool {
		if response != nil && response.Status == http.StatusNoContent {
			w.history.readEmpty(partition, 0, c.sentMs, w.nowMs)
			return true
		}
		if response != nil && response.Status == http.StatusGone && w.media.unreadable(partition, 0) {
			return true
		}
		if !w.answered(c, response, http.StatusOK) {
			return false
		}
		m, err := decodeWireMessage(response.Body)
		id := ""
		if err == nil {
			id, err = m.id()
		}
		if err != nil || m.Partition != partition || m.Offset != 0 {
			w.fail("client", "%s: bad replay reply %s (%v)", c.describe(), response.Body, err)
			return false
		}
		w.history.read(id, partition, 0, c.sentMs, w.nowMs)
		return true
	}
}

func nodeIDs(nodes []*simNode) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.id
	}
	return ids
}

// placementUnsettled says why the committed placement is not at rest, or
// returns "": a move is in flight, a draining member still owns or
// receives a partition, or the planner, run over the committed state as
// the leader runs it, still plans a change or an abort.
func (w *World) placementUnsettled() string {
	verdict := &w.metaLog.settledVerdict
	if !verdict.known || verdict.applied != w.metaLog.applied || verdict.inFlightMax != w.moveInFlightMax() {
		*verdict = placementVerdict{known: true, applied: w.metaLog.applied, inFlightMax: w.moveInFlightMax(), unsettled: w.judgePlacement()}
	}
	return verdict.unsettled
}

// placementVerdict is placementUnsettled's answer for one applied entry
// and in-flight bound; known is false until the first verdict.
type placementVerdict struct {
	known       bool
	applied     entryID
	inFlightMax int
	unsettled   string
}

// judgePlacement is placementUnsettled without its cache.
func (w *World) judgePlacement() string {
	if moving := w.metaLog.movesInFlight(); moving > 0 {
		return fmt.Sprintf("%d moves neither finished nor aborted", moving)
	}
	for _, m := range w.metaLog.Members() {
		if m.Draining && w.metaLog.placed(m.ID) {
			return fmt.Sprintf("draining member %s still owns partitions: %v", m.ID, w.metaLog.owners(w.topic))
		}
	}
	result, err := rebalance.Plan(rebalance.InputFromState(w.metaLog, w.moveInFlightMax()))
	switch {
	case err != nil:
		return fmt.Sprintf("the planner failed: %v", err)
	case len(result.Changes) > 0 || len(result.Aborts) > 0:
		return fmt.Sprintf("the planner still plans %+v and aborts %+v over owners %v", result.Changes, result.Aborts, w.metaLog.owners(w.topic))
	}
	return ""
}
