package sim

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/chaos"
	"narad/meta"
)

// confChange sends a configuration change entry after the leader's last
// entry, with the given commit index.
func (l *leader) confChange(kind raftpb.ConfChangeType, id string, commit uint64) entryID {
	raftID := meta.RaftIDOf(id)
	data, err := proto.Marshal(&raftpb.ConfChange{Type: kind.Enum(), NodeId: &raftID})
	require.NoError(l.t, err)
	index, logTerm := l.last.index, l.last.term
	next := entryID{index: index + 1, term: l.term}
	msg := raftMessage(raftpb.MsgApp, l.term, commit, [2]uint64{next.term, next.index})
	entryType := raftpb.EntryConfChange
	msg.Index, msg.LogTerm, msg.Entries[0].Data, msg.Entries[0].Type = &index, &logTerm, data, &entryType
	l.w.metaLog.observe(msg)
	l.last = next
	return next
}

// recordingListener remembers the membership changes it hears of.
type recordingListener struct{ heard []string }

func (r *recordingListener) memberAdded(id string) { r.heard = append(r.heard, "added "+id) }
func (r *recordingListener) drainingSet(id string, draining bool) {
	r.heard = append(r.heard, "draining "+id+map[bool]string{true: " on", false: " off"}[draining])
}
func (r *recordingListener) voterRemoved(id string) { r.heard = append(r.heard, "removed "+id) }
func (r *recordingListener) aborted(topic string, partition int) {
	r.heard = append(r.heard, "aborted "+partitionName(topic, partition))
}
func (r *recordingListener) flipped(topic string, partition int) {
	r.heard = append(r.heard, "flipped "+partitionName(topic, partition))
}

// TestMetaLogFollowsMembersAndVoters: the shadow state keeps what the
// planner reads (alive, draining) with meta's guards, and the voters with
// meta's floor of three.
func TestMetaLogFollowsMembersAndVoters(t *testing.T) {
	w := newWiredWorld(t)
	heard := &recordingListener{}
	w.metaLog.listener = heard
	l := &leader{t: t, w: w, term: 2, last: entryID{index: 3, term: 1}}
	l.append(nil, 3)
	for _, id := range []string{"n1", "n2", "n3"} {
		l.append(meta.MemberHeartbeat{ID: id, HTTPAddr: id + ":1", ClusterAddr: id + ":2", NowMs: 10}, 3)
	}
	l.append(proposedCreate("sim", 1, "n1", "n2", "n3"), 3)
	l.append(meta.MarkMemberDead{ID: "n3", ObservedHeartbeatMs: 9}, 3) // a stale guard: refused
	l.append(meta.MarkMemberDead{ID: "n2", ObservedHeartbeatMs: 10}, 3)
	l.append(meta.SetDraining{ID: "n1", Draining: true}, 3)
	l.append(proposedCreate("late", 2, "n3", "n1"), 3) // n1 drains: refused
	l.append(proposedCreate("stale", 2, "n2"), 3)      // n2 is dead: refused
	l.append(meta.SetTarget{Topic: "sim", Partition: 0, ExpectedOwner: "n1", Target: "n3", NowMs: 2}, 3)
	l.append(meta.CompleteMove{Topic: "sim", Partition: 0, ExpectedOwner: "n1", ExpectedTarget: "n3"}, 3)
	l.append(meta.SetTarget{Topic: "sim", Partition: 1, ExpectedOwner: "n2", Target: "n3", NowMs: 3}, 3)
	l.append(meta.AbortMove{Topic: "sim", Partition: 1, ExpectedTarget: "n3"}, 3)
	last := l.confChange(raftpb.ConfChangeRemoveNode, "n1", 3) // three voters: refused
	w.metaLog.observe(raftMessage(raftpb.MsgHeartbeat, 2, last.index))
	require.Nil(t, w.failure)

	members := w.metaLog.Members()
	require.Len(t, members, 3)
	require.Equal(t, []bool{true, false, true}, []bool{members[0].Alive, members[1].Alive, members[2].Alive})
	require.True(t, members[0].Draining)
	require.True(t, w.metaLog.isVoter("n1"), "meta refuses a removal below three voters")
	require.Equal(t, []string{"added n1", "added n2", "added n3", "draining n1 on", "flipped sim/0", "aborted sim/1"}, heard.heard)
	require.Equal(t, []string{"n1", "n3"}, w.metaLog.pastOwners["sim/0"])
	require.Equal(t, []string{"n2"}, w.metaLog.pastOwners["sim/1"])
	require.Equal(t, []string{"sim"}, slices.Sorted(maps.Keys(w.metaLog.topics)), "no new partition on a dead or draining member")
}

// TestMetaLogRemovesAVoterAboveThree: a fourth voter lets a draining one
// go, and the listener hears of it; a removal of a member whose drain was
// cancelled is refused (the removal is guarded by the drain), and so is
// the cancel of a member that left the voters.
func TestMetaLogRemovesAVoterAboveThree(t *testing.T) {
	w := newWiredWorld(t)
	joiner := newSimNode(w.World, 3)
	w.nodes = append(w.nodes, joiner)
	heard := &recordingListener{}
	w.metaLog.listener = heard
	l := &leader{t: t, w: w, term: 2, last: entryID{index: 3, term: 1}}
	l.append(nil, 3)
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		l.append(meta.MemberHeartbeat{ID: id, HTTPAddr: id + ":1", ClusterAddr: id + ":2", NowMs: 10}, 3)
	}
	l.confChange(raftpb.ConfChangeAddNode, joiner.id, 3)
	l.append(meta.SetDraining{ID: "n3", Draining: true}, 3)
	l.append(meta.SetDraining{ID: "n3", Draining: false}, 3)
	l.confChange(raftpb.ConfChangeRemoveNode, "n3", 3) // its drain was cancelled: refused
	l.append(meta.SetDraining{ID: "n2", Draining: true}, 3)
	l.confChange(raftpb.ConfChangeRemoveNode, "n2", 3)
	last := l.append(meta.SetDraining{ID: "n2", Draining: false}, 3) // it left the voters: refused
	w.metaLog.observe(raftMessage(raftpb.MsgHeartbeat, 2, last.index))
	require.Nil(t, w.failure)
	require.True(t, w.metaLog.isVoter("n4"))
	require.True(t, w.metaLog.isVoter("n3"), "a member no longer draining stays a voter")
	require.False(t, w.metaLog.isVoter("n2"))
	member, _ := w.metaLog.member("n2")
	require.True(t, member.Draining, "the cancel of a member that left the voters is refused")
	require.Equal(t, []string{"added n1", "added n2", "added n3", "added n4", "draining n3 on", "draining n3 off", "draining n2 on", "removed n2"}, heard.heard)
	next := l.confChange(raftpb.ConfChangeAddNode, "n2", 0)
	w.metaLog.observe(raftMessage(raftpb.MsgHeartbeat, 2, next.index))
	require.False(t, w.metaLog.isVoter("n2"), "a removed raft id never comes back")
}

// TestPlacementUnsettled: the liveness check names what keeps the
// placement from rest — a move in flight, a draining member that still
// owns a partition, a plan that is not at its fixpoint — and accepts a
// balanced placement.
func TestPlacementUnsettled(t *testing.T) {
	w := newWiredWorld(t)
	for _, id := range []string{"n1", "n2", "n3"} {
		w.metaLog.members[id] = &meta.Member{ID: id, Alive: true}
	}
	w.metaLog.topics[w.topic] = []meta.Assignment{{Owner: "n1"}, {Owner: "n2"}, {Owner: "n3"}}
	// the shadow state changes only when an entry is applied: each change
	// below applies one, as commit would
	applied := func() string {
		w.metaLog.applied.index++
		return w.placementUnsettled()
	}
	require.Empty(t, applied())

	w.metaLog.topics[w.topic][0].Target = "n2"
	require.Empty(t, w.placementUnsettled(), "the verdict is kept until the next applied entry")
	require.Contains(t, applied(), "1 moves neither finished nor aborted")
	w.metaLog.topics[w.topic][0].Target = ""

	w.metaLog.members["n3"].Draining = true
	require.Contains(t, applied(), "draining member n3 still owns partitions")
	w.metaLog.topics[w.topic][1].Owner, w.metaLog.topics[w.topic][2].Owner = "n1", "n1"
	require.Contains(t, applied(), "the planner still plans", "n1 holds all three, n2 none: not balanced")
	w.metaLog.topics[w.topic][2].Owner = "n2"
	require.Empty(t, applied(), "n1 holds two of three and n2 one; n3 drained")
}

// TestTwoWritersFailTheRun: two nodes that both accept writes to one
// partition fail the single-writer checker; one does not.
func TestTwoWritersFailTheRun(t *testing.T) {
	w := newWiredWorld(t)
	w.partitions = 2
	w.writers.accepting = [][]bool{{true, false}, {false, false}, {false, true}}
	w.writers.checkPartition(0)
	w.writers.checkPartition(1)
	require.Nil(t, w.failure)
	w.writers.accepting[2][0] = true
	w.writers.checkPartition(0)
	require.NotNil(t, w.failure)
	require.Equal(t, "single-writer", w.failure.Checker)
	require.Contains(t, w.failure.Detail, "n1 and n3 all accept writes to sim/0")
}

// TestStormPayloadsCarryTheirID: a storm's padded payload reads back as
// its id; a plain one is the id itself.
func TestStormPayloadsCarryTheirID(t *testing.T) {
	w := newWiredWorld(t)
	plain := newClient(w.World, "p1", roleProducer)
	storm := newClient(w.World, "storm1", roleProducer)
	storm.storm = newStormState(w.World, w.moveRng)
	require.Equal(t, "m0000001", plain.payloadOf("m0000001"))
	padded := storm.payloadOf("m0000002")
	require.Len(t, padded, stormPayloadBytes)
	require.Equal(t, "m0000002", idOfPayload(padded))
	require.Equal(t, "m0000001", idOfPayload("m0000001"))
	id, err := checkedIDOfPayload(padded)
	require.NoError(t, err)
	require.Equal(t, "m0000002", id)
	changed := []byte(padded)
	changed[500] ^= 1
	_, err = checkedIDOfPayload(string(changed))
	require.Error(t, err, "a changed byte of the padding shows")
	_, err = checkedIDOfPayload("m0000003" + padded[len("m0000002"):])
	require.Error(t, err, "as does another record's padding under an id")
}

// TestMoveFaultMatrix: every fault meets every phase in the marks, and
// the timings keep their order (a source is declared dead before its
// partitions may be promoted elsewhere; a freeze ends before a stalled
// move is given up).
func TestMoveFaultMatrix(t *testing.T) {
	marks := MoveFaultMarks()
	require.Len(t, marks, len(moveFaultKinds)*len(movePhases))
	require.Contains(t, marks, chaos.Mark("move-fault:kill-source@catchup"))
	require.Contains(t, marks, chaos.Mark("move-fault:isolate-leader@flip"))
	require.Greater(t, int64(moveForcePromoteAfterMs), int64(clusterMemberDeadAfterMs))
	require.Less(t, int64(moveFreezeTTLMs), int64(moveStallTimeoutMs))
	require.Greater(t, int64(movePartitionMsMin+movePartitionMsSpread), int64(moveForcePromoteAfterMs))
	require.Greater(t, int64(moveKillDownMsMin+moveKillDownMsSpread), int64(moveForcePromoteAfterMs))
	opts := DefaultOptions(1)
	opts.Nodes, opts.Moves = 3, true
	w := NewWorld(opts)
	require.NoError(t, w.nodes[0].config().Validate(), "a node of a moves world")
	joiner := newSimNode(w, 3)
	joiner.joining, joiner.joined = true, true
	w.nodes = append(w.nodes, joiner)
	cfg := joiner.config()
	require.NoError(t, cfg.Validate(), "a joining node")
	require.True(t, cfg.Meta.Join)
	require.Len(t, cfg.Meta.Peers, 4, "the bootstrap nodes and itself")
}
