package node

import (
	"fmt"
	"maps"
	"slices"

	"narad/meta"
	"narad/msg"
)

// Heartbeats. Every node tells the metastore it is alive once every
// MemberHeartbeatIntervalMs, at the multiples of the interval on its own
// clock, by a msg.Heartbeat to the leader it knows (the leader's own
// heartbeat needs no message). The leader gathers the heartbeats of a
// round and proposes them as one entry (meta.MemberHeartbeats): one entry
// per interval for the whole cluster, where each member's own proposal
// cost one entry each (a raft round and a metastore write on every
// replica). A round is proposed as soon as it holds a heartbeat of every
// alive member, or heartbeatGatherMs after its first arrived, whichever
// is first: with clocks in step the members' heartbeats arrive together
// and the round goes at once; with clocks out of step (by up to half the
// gather time either way) they still share one entry, where a fixed short
// window made one entry per member.
//
// Each beat keeps its member's own clock: the write fence (writable)
// compares a node's applied heartbeat with that node's clock only, and
// dead detection (detectDeadMembers) ages a heartbeat on the leader's
// clock only, as before. A heartbeat lost on its way (no leader, a leader
// deposed, a cut link) is not resent: the next one follows an interval
// later, and MemberDeadAfterMs spans at least three.

// heartbeatGatherDivisor: the leader holds a round at least
// MemberHeartbeatIntervalMs/heartbeatGatherDivisor after its first
// heartbeat arrived (unless every alive member's is in it).
const heartbeatGatherDivisor = 10

// heartbeatGatherMs is the longest the leader holds a round of heartbeats
// after its first arrived. The write fence (writable) stops a node's
// writes once its latest applied heartbeat is MemberDeadAfterMs/2 old on
// its own clock, and an applied heartbeat is at most an interval plus the
// gather time (plus a raft round) old when the next one applies: the
// gather time takes half of the slack the fence leaves past an interval,
// the other half is left for raft rounds and late messages. At most half
// an interval, at least interval/heartbeatGatherDivisor. With the
// defaults (an interval of 5 s, dead after 30 s) it is 2.5 s, and a
// node one of whose heartbeats is lost stays writable (2 intervals and
// the gather time, under 3); at the tightest configuration allowed (dead
// after three intervals) it is a quarter of an interval. A heartbeat that
// is news (a node not yet a member, a member marked dead, new addresses,
// a disk that ran short or has room again) is proposed at once with the
// round: a node starting up may own partitions only once a member.
func (c Config) heartbeatGatherMs() int64 {
	interval := c.MemberHeartbeatIntervalMs
	return min(max((c.MemberDeadAfterMs/2-interval)/2, interval/heartbeatGatherDivisor), interval/2)
}

// retiredBeatWarnEveryMs: the leader names a retired node that still
// heartbeats (one started again, or cut off before it learned of its
// removal) in a heartbeat-dropped event at most once per this period, not
// at each of its beats, so a node left running does not fill the log.
const retiredBeatWarnEveryMs = 5 * 60 * 1000

// heartbeatRound is the round of heartbeats the leader is gathering. Only
// the node's own methods change it.
type heartbeatRound struct {
	// beats holds the round's heartbeats, the latest of each member (at
	// most meta.HeartbeatsPerEntryMax); empty unless this node leads (a
	// node that stopped leading drops them at its next look).
	beats map[string]meta.MemberHeartbeat
	// proposeAtMs is when the round is proposed (this node's clock): set
	// heartbeatGatherMs after its first heartbeat arrived, and brought to
	// the present by a heartbeat that is news or that completes the round
	// (awaited, heard).
	proposeAtMs int64
	// awaited is how many members the round waits for (alive and not
	// retired, counted when its first heartbeat arrived), and heard how
	// many of those it holds a heartbeat of: at heard == awaited the
	// round is whole and is proposed at once.
	awaited, heard int
	// retiredWarned holds the retired nodes whose heartbeat this node
	// dropped and said so within retiredBeatWarnEveryMs (this node's
	// clock); pruned at each pruneMemberState too, so it holds only the
	// retired nodes that beat within that period.
	retiredWarned onceEvery[string]
	// otherDataWarned holds the members whose beat from another data
	// directory this node dropped and said so within
	// retiredBeatWarnEveryMs; pruned like retiredWarned.
	otherDataWarned onceEvery[string]
}

// heartbeat tells the leader this node is alive now.
func (n *Node) heartbeat(leaderID string) {
	beat := msg.Heartbeat{HTTPAddr: n.cfg.AdvertiseAddr, ClusterAddr: n.cfg.ClusterAddr, NowMs: n.nowMs, Incarnation: n.incarnation,
		DiskLow: n.underReserve(), DataID: n.cfg.DataID}
	if leaderID == n.cfg.NodeID {
		n.gatherHeartbeat(n.cfg.NodeID, beat)
		return
	}
	n.send(leaderID, beat)
}

// stepHeartbeat gathers a member's heartbeat while this node leads, and
// proposes the round if it is due (news is at once); a node that does
// not lead drops it (the member's next heartbeat goes to the leader it
// knows then).
func (n *Node) stepHeartbeat(from string, m msg.Heartbeat) {
	if !n.meta.IsLeader() {
		n.observer.Event("heartbeat-dropped", from+": this node does not lead the metastore")
		return
	}
	n.gatherHeartbeat(from, m)
	n.proposeHeartbeats()
}

// gatherHeartbeat adds a valid heartbeat to the round, starting the round
// if it is the first.
func (n *Node) gatherHeartbeat(id string, m msg.Heartbeat) {
	beat := meta.MemberHeartbeat{ID: id, HTTPAddr: m.HTTPAddr, ClusterAddr: m.ClusterAddr, NowMs: m.NowMs, Incarnation: m.Incarnation, DiskLow: m.DiskLow,
		DataID: m.DataID}
	if err := beat.Validate(); err != nil {
		n.observer.Event("heartbeat-dropped", id+": "+err.Error())
		return
	}
	if n.meta.State().Retired(id) {
		// its decommission is complete: a retired node stays out of the
		// members once forgotten (forgetRetiredMembers), even if started again
		n.warnRetiredBeat(id)
		return
	}
	member, known := n.meta.State().Member(id)
	if known && member.DataID != "" && beat.DataID != "" && beat.DataID != member.DataID {
		n.warnOtherDataDirBeat(id, member.DataID, beat.DataID) // the metastore would change nothing for it
		return
	}
	round := &n.cluster.heartbeats
	last, gathered := round.beats[id]
	switch {
	case gathered && (last.Incarnation > beat.Incarnation || last.Incarnation == beat.Incarnation && last.NowMs >= beat.NowMs):
		return // a late copy of an earlier heartbeat (or of an earlier start's)
	case !gathered && len(round.beats) >= meta.HeartbeatsPerEntryMax:
		n.observer.Event("heartbeat-dropped", id+": the round is full")
		return
	case len(round.beats) == 0:
		round.proposeAtMs = n.nowMs + n.cfg.heartbeatGatherMs()
		round.awaited, round.heard = n.meta.State().HeartbeatingMembers(), 0
	}
	if !gathered && known && member.Alive {
		round.heard++ // not retired: checked above
	}
	round.beats[id] = beat
	if n.heartbeatIsNews(beat) || round.heard >= round.awaited {
		round.proposeAtMs = n.nowMs // news, or no other heartbeat is awaited
	}
}

// warnRetiredBeat tells the operator that a retired node still runs, at
// most once per retiredBeatWarnEveryMs for each.
func (n *Node) warnRetiredBeat(id string) {
	if !n.cluster.heartbeats.retiredWarned.due(id, n.nowMs, retiredBeatWarnEveryMs) {
		return
	}
	n.observer.Event("heartbeat-dropped", id+": its decommission is complete (it left the voters); stop that node")
}

// warnOtherDataDirBeat tells the operator, at most once per
// retiredBeatWarnEveryMs for each member, that the member's node id runs
// on another data directory than the member's.
func (n *Node) warnOtherDataDirBeat(id, known, other string) {
	if !n.cluster.heartbeats.otherDataWarned.due(id, n.nowMs, retiredBeatWarnEveryMs) {
		return
	}
	n.observer.Event("heartbeat-dropped", fmt.Sprintf("%s: it runs on data directory %s, but member %s is the one on data directory %s, "+
		"which holds its partitions and what it acknowledged; start %s on that directory", id, other, id, known, id))
}

// heartbeatIsNews reports whether applying beat changes more than its
// member's heartbeat time: it creates or revives the member (marked dead,
// or proposed dead by this leader for its current heartbeat, the mark
// still on its way), or changes its addresses or its disk's state.
func (n *Node) heartbeatIsNews(beat meta.MemberHeartbeat) bool {
	member, found := n.meta.State().Member(beat.ID)
	if !found || !member.Alive || member.HTTPAddr != beat.HTTPAddr || member.ClusterAddr != beat.ClusterAddr || member.DiskLow != beat.DiskLow {
		return true
	}
	return n.proposedDead(member)
}

// proposeHeartbeats proposes the round once its gather time has passed,
// unless the last round is younger than an interval and still pending
// (the beats then wait for it, the latest of each member kept). A node
// that no longer leads drops the round.
func (n *Node) proposeHeartbeats() {
	round := &n.cluster.heartbeats
	if len(round.beats) == 0 || n.nowMs < round.proposeAtMs {
		return
	}
	if !n.meta.IsLeader() {
		clear(round.beats)
		return
	}
	for _, pending := range n.proposals { //determinism:ok only looks for one kind
		if pending.kind == proposalHeartbeat && n.nowMs-pending.proposedAtMs < n.cfg.MemberHeartbeatIntervalMs {
			return
		}
	}
	beats := make([]meta.MemberHeartbeat, 0, len(round.beats))
	for _, id := range slices.Sorted(maps.Keys(round.beats)) {
		beats = append(beats, round.beats[id])
	}
	clear(round.beats)
	n.propose(0, proposalHeartbeat, "", meta.MemberHeartbeats{Beats: beats})
}
