package sim

import (
	"math/rand/v2"
	"net/http"

	"narad/chaos"
	"narad/httpapi"
	"narad/node"
	"narad/rebalance"
)

// Move timings of every multi-node world (node.MoveConfig and the chunk
// of a copy), in simulated milliseconds and bytes: short enough that moves
// start, stall, abort, get force-promoted and finish within a run of a few
// tens of seconds, and a copy slow enough (small chunks) that a write
// storm outruns it.
const (
	moveChunkBytesMax    = 1_024
	moveLagBytes         = 2_048
	moveCatchUpPassesMax = 4
	// moveRestartsMax is lower than the default (8), so that the runs
	// where faults restart one move's sessions again and again reach it.
	moveRestartsMax    = 4
	moveFreezeTTLMs    = 3_000
	moveStallTimeoutMs = 5_000
	// moveForcePromoteAfterMs exceeds clusterMemberDeadAfterMs: a source
	// is declared dead before its partitions may be promoted elsewhere.
	moveForcePromoteAfterMs = 6_000
	movePlanIntervalMs      = 200
	moveSweepIntervalMs     = 1_000
	// moveDestinationRestMs is the leader's rest of a destination whose
	// moves keep failing, a tenth of the default as the freeze's is, so
	// that rests end within a run and the rested node receives again.
	moveDestinationRestMs      = 6_000
	moveDestinationFailuresMax = 2
)

// moveInFlightChoices are the bounds on moves in flight a moves world
// draws from (one at a time up to the default).
var moveInFlightChoices = []int{1, 2, 3, rebalance.MaxInFlightMovesDefault}

// Timings of the moves scenario, in simulated milliseconds from the start
// of the safety phase or from the event named.
const (
	scaleUpAtMsMin           = 2_000
	scaleUpAtMsSpread        = 10_000
	decommissionAtMsMin      = 2_000
	decommissionAtMsSpread   = 14_000
	cancelAfterMsMin         = 1_000
	cancelAfterMsSpread      = 4_000
	cancelPercent            = 25
	retireAfterMsMin         = 300
	retireAfterMsSpread      = 1_500
	operatorRetryMs          = 200
	operatorNotFoundRetryMax = 25
)

// moveConfig is the node.MoveConfig of every node of the world.
func (w *World) moveConfig() node.MoveConfig {
	return node.MoveConfig{MaxInFlight: w.moveInFlightMax(), LagBytes: moveLagBytes, CatchUpPassesMax: moveCatchUpPassesMax, RestartsMax: moveRestartsMax,
		FreezeTTLMs: moveFreezeTTLMs, StallTimeoutMs: moveStallTimeoutMs, ForcePromoteAfterMs: moveForcePromoteAfterMs,
		PlanIntervalMs: movePlanIntervalMs, SweepIntervalMs: moveSweepIntervalMs,
		DestinationFailuresMax: moveDestinationFailuresMax, DestinationRestMs: moveDestinationRestMs}
}

// moveInFlightMax is the planner's bound of the world: drawn in a moves
// world, the default otherwise.
func (w *World) moveInFlightMax() int {
	if w.moves == nil {
		return rebalance.MaxInFlightMovesDefault
	}
	return w.moves.inFlightMax
}

// movesScenario makes the planner move partitions while faults land in
// the moves' phases: a three-node world scales up to four and/or
// decommissions a node (meta keeps three voters, so without the scale-up
// the node only drains); a five-node world decommissions one and may
// scale up to six. A decommissioned node that leaves the voters is shut
// down for good (retired), as an operator would: its decommission is then
// complete, as a voter is removed only while it still drains and a cancel
// that comes later is refused (409).
type movesScenario struct {
	w   *World
	rng *rand.Rand
	// inFlightMax is the planner's bound, drawn once.
	inFlightMax int
	// scaleUp and decommission say which events the run has, drawn once.
	scaleUp, decommission bool
	// joiner is the node the scale-up added; nil before.
	joiner *simNode
	// late is the join after healing (latejoin.go).
	late lateJoin
	// drained is the node whose decommission was accepted; "" before.
	drained string
	// operator is the client that sends decommissions and cancels.
	operator *client
	// watcher aims faults at move phases; storm floods moving partitions.
	watcher *moveWatcher
	storm   *stormState
	// installCrashRng draws the crashes between an install's renames
	// (install_crash.go).
	installCrashRng *rand.Rand
}

// moveStats counts what the nodes' move observers reported (in every
// multi-node world: a node that was down at the topic's creation gets
// partitions moved to it, too).
type moveStats struct {
	// outcomes counts the ended moves into a node by outcome (completed,
	// force_promoted, aborted).
	outcomes    map[string]int
	bytesCopied int64
	// freezes are the freeze durations the sources held, in ms.
	freezes []int64
}

func (s *moveStats) ended(outcome string) {
	if s.outcomes == nil {
		s.outcomes = map[string]int{}
	}
	s.outcomes[outcome]++
}

func newMovesScenario(w *World) *movesScenario {
	rng := w.moveRng
	s := &movesScenario{w: w, rng: rng, inFlightMax: moveInFlightChoices[rng.IntN(len(moveInFlightChoices))]}
	switch {
	case w.opts.Nodes >= 5:
		s.decommission, s.scaleUp = true, rng.IntN(2) == 0
	default:
		kind := rng.IntN(4) // scale-up, decommission, or both (twice as likely)
		s.scaleUp, s.decommission = kind != 1, kind != 0
	}
	s.watcher = newMoveWatcher(w, rng)
	s.storm = newStormState(w, rng)
	s.installCrashRng = newRand(w.opts.Seed, installCrashStream)
	return s
}

// start schedules the scenario's events, at the start of the safety
// phase.
func (s *movesScenario) start() {
	w := s.w
	s.operator = newClient(w, "operator", roleAdmin)
	w.clients = append(w.clients, s.operator)
	s.storm.spawn()
	scaleUpAtMs, decommissionAtMs := int64(-1), int64(-1)
	if s.scaleUp {
		scaleUpAtMs = int64(scaleUpAtMsMin + s.rng.IntN(scaleUpAtMsSpread))
		w.at(scaleUpAtMs, s.scaleUpNow)
	}
	if s.decommission {
		decommissionAtMs = int64(decommissionAtMsMin + s.rng.IntN(decommissionAtMsSpread))
		w.at(decommissionAtMs, s.decommissionNow)
	}
	w.tracef("moves scenario: in-flight max %d, scale-up at +%d ms, decommission at +%d ms", s.inFlightMax, scaleUpAtMs, decommissionAtMs)
}

// scaleUpNow starts a new node that joins the cluster: the planner then
// moves partitions to it.
func (s *movesScenario) scaleUpNow() {
	w := s.w
	if w.phase != phaseSafety {
		return
	}
	s.joiner = s.addJoiner()
	chaos.Reached(markScaleUp)
	w.countFault("scale-up")
}

// addJoiner starts a new node that asks to join the cluster.
func (s *movesScenario) addJoiner() *simNode {
	w := s.w
	n := newSimNode(w, len(w.nodes))
	n.joining, n.joined = true, true
	w.joiningCount++
	w.nodes = append(w.nodes, n)
	w.peers.addNode(n)
	n.start()
	n.scheduleTick()
	return n
}

// decommissionNow asks a random node to decommission a random member.
func (s *movesScenario) decommissionNow() {
	w := s.w
	if w.phase != phaseSafety {
		return
	}
	var candidates []string
	for _, n := range w.activeNodes() {
		if _, member := w.metaLog.member(n.id); member {
			candidates = append(candidates, n.id)
		}
	}
	if len(candidates) == 0 {
		return
	}
	id := candidates[s.rng.IntN(len(candidates))]
	s.operatorRequest(http.MethodPost, id, 0, func(int) {
		s.drained = id
		chaos.Reached(markDecommissionAccepted)
		w.countFault("decommission")
		if s.rng.IntN(100) < cancelPercent {
			w.at(int64(cancelAfterMsMin+s.rng.IntN(cancelAfterMsSpread)), s.cancelNow)
		}
	})
}

// cancelNow cancels the decommission, unless the node left the voters
// already.
func (s *movesScenario) cancelNow() {
	if s.w.phase != phaseSafety || !s.w.metaLog.isVoter(s.drained) {
		return
	}
	s.operatorRequest(http.MethodDelete, s.drained, 0, func(status int) {
		if status == http.StatusConflict { // it left the voters meanwhile: the decommission is complete
			s.w.tracef("operator: the cancel came too late, %s left the voters", s.drained)
			return
		}
		chaos.Reached(markDecommissionCancelled)
		s.w.countFault("decommission-cancel")
	})
}

// operatorRequest sends a decommission (POST) or its cancel (DELETE)
// through a random node, as the CLI would, until it is answered 204, or
// a cancel 409 (the member left the voters: its decommission is
// complete); then it runs done with that status. A decommission refused
// with 409 (no other member could take the partitions) is given up. A lagging replica may
// not know the member yet (404): that is retried a bounded number of
// times.
func (s *movesScenario) operatorRequest(method, id string, notFound int, done func(status int)) {
	cl := s.operator
	c := &call{kind: "decommission", httpRequest: newHTTPRequest(method, "/v1/cluster/members/"+id+"/decommission", "", "")}
	c.onDone = func(response *httpapi.Response) {
		switch {
		case response != nil && (response.Status == http.StatusNoContent || (method == http.MethodDelete && response.Status == http.StatusConflict)):
			done(response.Status)
		case response != nil && method == http.MethodPost && response.Status == http.StatusConflict:
			// No other member alive and not draining in the answering
			// node's view: the drain could never end, so it is refused.
			s.w.tracef("operator: decommission of %s refused: %s", id, response.Body)
		case response != nil && response.Status == http.StatusNotFound && notFound < operatorNotFoundRetryMax:
			cl.later(operatorRetryMs, func() { s.operatorRequest(method, id, notFound+1, done) })
		case response != nil && response.Status < 500:
			cl.unexpected(c, response)
		case s.w.phase == phaseSafety:
			cl.later(operatorRetryMs, func() { s.operatorRequest(method, id, notFound, done) })
		}
	}
	cl.send(c)
}

// memberAdded: the joiner's first heartbeat committed; the planner moves
// partitions to it from now on.
func (s *movesScenario) memberAdded(id string) {
	n := s.w.nodeByID(id)
	if n == nil || !n.joining {
		return
	}
	n.joining = false
	s.w.joiningCount--
	s.w.tracef("%s is a member: clients may use it", id)
	if n == s.joiner {
		s.watcher.maybeChangeLeader(markLeaderChangeAfterScaleUp)
	}
}

// drainingSet: a decommission committed; the planner drains the node from
// now on.
func (s *movesScenario) drainingSet(id string, draining bool) {
	if draining {
		s.watcher.maybeChangeLeader(markLeaderChangeAfterDecommission)
	}
}

// flipped: a partition changed hands; a storm's partition that did cut
// over is the hot-partition case the storms are for.
func (s *movesScenario) flipped(topic string, partition int) {
	if topic == s.w.topic && s.storm.stormed[partition] {
		delete(s.storm.stormed, partition)
		chaos.Reached(markStormMoveCutOver)
	}
}

// aborted: a partition's move was aborted; a storm on it did not end in
// a cut-over.
func (s *movesScenario) aborted(topic string, partition int) {
	if topic == s.w.topic {
		delete(s.storm.stormed, partition)
	}
}

// voterRemoved: a drained node left the voters; the operator shuts it
// down for good a little later.
func (s *movesScenario) voterRemoved(id string) {
	n := s.w.nodeByID(id)
	if n == nil {
		return
	}
	chaos.Reached(markVoterRemoved)
	s.w.at(int64(retireAfterMsMin+s.rng.IntN(retireAfterMsSpread)), func() { n.retire() })
}

// retire shuts the node down for good.
func (n *simNode) retire() {
	if n.retired {
		return
	}
	n.retired = true
	n.w.retiredCount++
	n.w.tracef("%s retired", n.id)
	if n.up() {
		if err := n.node.Abandon(); err != nil {
			n.w.fail("crash", "%s: closing its metastore: %v", n.id, err)
		}
		n.down()
	}
}

// freezeMsMax is the longest freeze a source held.
func (s moveStats) freezeMsMax() int64 {
	longest := int64(0)
	for _, ms := range s.freezes {
		longest = max(longest, ms)
	}
	return longest
}
