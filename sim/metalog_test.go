package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
)

// TestAppendByANonOwnerFailsTheRun: an append must come from the
// partition's owner in the committed metastore.
func TestAppendByANonOwnerFailsTheRun(t *testing.T) {
	w := newWiredWorld(t)
	w.metaLog.topics[w.topic] = []meta.Assignment{{Owner: "n1"}, {Owner: "n2"}}
	w.owners.appended(w.nodes[1], w.topic, 1)
	require.Nil(t, w.failure)
	w.owners.appended(w.nodes[1], w.topic, 0)
	require.NotNil(t, w.failure)
	require.Equal(t, "single-owner", w.failure.Checker)
	require.Contains(t, w.failure.Detail, `n2 appended to sim/0, but the committed metastore says "n1" owns it`)
}

// TestAnAppendToADeletedCreationIsItsOwnersAloneUntilItAppliesTheDelete:
// a delete freezes nothing, so a node cut off from the metastore may
// append to a partition it owned in the creation a committed delete
// removed (seed 6634173 of the three-node world with users and all
// faults); any other node's append there still fails the run, and so
// does the owner's once it applied the delete, before it applied the
// entry that made it the owner, or past its write fence.
func TestAnAppendToADeletedCreationIsItsOwnersAloneUntilItAppliesTheDelete(t *testing.T) {
	w := startedWorld(t, 2)
	require.Less(t, w.nodes[0].node.MetaAppliedIndex(), uint64(7))
	applied := w.nodes[0].node.MetaAppliedIndex()
	w.metaLog.deletions["gone"] = []topicDeletion{{index: 7, owners: []string{"n1", "n2"}, ownedSince: []uint64{applied, 0}}}
	w.owners.appended(w.nodes[0], "gone", 0)
	w.owners.appended(w.nodes[1], "gone", 1)
	require.Nil(t, w.failure)
	w.owners.appended(w.nodes[0], "gone", 1)
	require.NotNil(t, w.failure)
	require.Contains(t, w.failure.Detail, `n1 appended to gone/1, but the committed metastore says "" owns it`)

	learned := startedWorld(t, 1)
	learned.metaLog.deletions["gone"] = []topicDeletion{{index: learned.nodes[0].node.MetaAppliedIndex(), owners: []string{"n1", "n2"}, ownedSince: []uint64{0, 0}}}
	learned.owners.appended(learned.nodes[0], "gone", 0)
	require.NotNil(t, learned.failure, "a node that applied the delete must not append to the creation it removed")

	early := startedWorld(t, 1)
	applied = early.nodes[0].node.MetaAppliedIndex()
	early.metaLog.deletions["gone"] = []topicDeletion{{index: applied + 5, owners: []string{"n1", "n2"}, ownedSince: []uint64{applied + 1, 0}}}
	early.owners.appended(early.nodes[0], "gone", 0)
	require.NotNil(t, early.failure, "a node that had not applied its ownership must not append as the owner")

	late := startedWorld(t, 1)
	applied = late.nodes[0].node.MetaAppliedIndex()
	late.metaLog.deletions["gone"] = []topicDeletion{{index: applied + 1, owners: []string{"n1"}, ownedSince: []uint64{0}}}
	late.nowMs = clusterMemberDeadAfterMs/2 + late.clockSkew.spreadMs()
	late.owners.appended(late.nodes[0], "gone", 0)
	require.NotNil(t, late.failure, "the owner must stop at its write fence")
	require.Contains(t, late.failure.Detail, "past its write fence")
}

// startedWorld is a wired world of three nodes whose first count nodes
// started (their metastores in a directory of the test's own), closed
// when the test ends.
func startedWorld(t *testing.T, count int) *wiredWorld {
	w := newWiredWorld(t)
	w.metaDir = t.TempDir()
	t.Cleanup(w.closeNodes)
	for _, n := range w.nodes[:count] {
		n.start()
		require.True(t, n.up())
	}
	return w
}

// TestTwoAppendersWithoutAFlipFailTheRun: a partition's appender changes
// only across a committed flip of its ownership, whoever owns it (this is
// what guards a single node, which has no committed-log view).
func TestTwoAppendersWithoutAFlipFailTheRun(t *testing.T) {
	w := NewWorld(DefaultOptions(1))
	stranger := newSimNode(w, 1) // a second appender, though the world has one node
	w.owners.appended(w.nodes[0], w.topic, 2)
	w.owners.appended(w.nodes[0], w.topic, 2)
	require.Nil(t, w.failure)
	w.owners.appended(stranger, w.topic, 2)
	require.NotNil(t, w.failure)
	require.Equal(t, "single-owner", w.failure.Checker)
}

// leader sends appends of the metastore's log, as the leader of a term.
type leader struct {
	t    *testing.T
	w    *wiredWorld
	term uint64
	last entryID
}

// proposedCreate is a CreateTopic as a node proposes it, its lease caps
// resolved: meta refuses a create without them, and so does the log's
// view, which validates every committed entry.
func proposedCreate(name string, createdAtMs int64, owners ...string) meta.CreateTopic {
	return meta.CreateTopic{Name: name, Owners: owners, CreatedAtMs: createdAtMs,
		MaxInFlightPerPartition: 1024, MaxAckedAheadPerPartition: 1024}
}

// append sends one command entry (nil: an empty entry) after the last one,
// with the given commit index.
func (l *leader) append(command meta.Command, commit uint64) entryID {
	var data []byte
	if command != nil {
		encoded, err := meta.EncodeCommand(meta.ProposalID{Node: "n1", Term: l.term, Sequence: l.last.index}, command)
		require.NoError(l.t, err)
		data = encoded
	}
	index, logTerm := l.last.index, l.last.term
	next := entryID{index: index + 1, term: l.term}
	msg := raftMessage(raftpb.MsgApp, l.term, commit, [2]uint64{next.term, next.index})
	msg.Index, msg.LogTerm, msg.Entries[0].Data = &index, &logTerm, data
	l.w.metaLog.observe(msg)
	l.last = next
	return next
}

// TestMetaLogFollowsCommittedPlacement: the placement rebuilt from the
// wire follows committed entries only, in order, with the move guards.
func TestMetaLogFollowsCommittedPlacement(t *testing.T) {
	w := newWiredWorld(t)
	l := &leader{t: t, w: w, term: 2, last: entryID{index: 3, term: 1}}
	l.append(nil, 3)
	for _, id := range []string{"n1", "n2", "n3"} {
		l.append(meta.MemberHeartbeat{ID: id, HTTPAddr: id + ":1", ClusterAddr: id + ":2", NowMs: 1}, 3)
	}
	created := l.append(proposedCreate("sim", 1, "n1", "n2", "n3"), 3)
	require.Nil(t, w.metaLog.owners("sim"), "appended, not committed")
	target := l.append(meta.SetTarget{Topic: "sim", Partition: 0, ExpectedOwner: "n1", Target: "n3", NowMs: 2}, created.index)
	require.Equal(t, []string{"n1", "n2", "n3"}, w.metaLog.owners("sim"))
	l.append(meta.CompleteMove{Topic: "sim", Partition: 0, ExpectedOwner: "n2", ExpectedTarget: "n3"}, target.index)
	require.Equal(t, 1, w.metaLog.movesInFlight())
	l.append(meta.CompleteMove{Topic: "sim", Partition: 0, ExpectedOwner: "n1", ExpectedTarget: "n3", ExpectedStartedAtMs: 1}, 0)
	require.Equal(t, 1, w.metaLog.movesInFlight(), "the flip of another move (started at 1, not 2) fails the guard, as in meta")
	require.True(t, w.metaLog.anyMoveInFlight())
	flip := l.append(meta.CompleteMove{Topic: "sim", Partition: 0, ExpectedOwner: "n1", ExpectedTarget: "n3", ExpectedStartedAtMs: 2}, 0)
	w.metaLog.observe(raftMessage(raftpb.MsgHeartbeat, 2, flip.index))
	require.Equal(t, []string{"n3", "n2", "n3"}, w.metaLog.owners("sim"), "the guard refused the first flip, not the second")
	require.Equal(t, 1, w.metaLog.generations["sim/0"])
	require.Zero(t, w.metaLog.movesInFlight())
	require.False(t, w.metaLog.anyMoveInFlight())
	require.Nil(t, w.failure)
}

// TestCommittedEntryReplacedFailsTheRun: a later leader committing a log
// that holds another entry where one was already applied breaks state
// machine safety.
func TestCommittedEntryReplacedFailsTheRun(t *testing.T) {
	w := newWiredWorld(t)
	first := &leader{t: t, w: w, term: 2, last: entryID{index: 3, term: 1}}
	first.append(nil, 3)
	applied := first.append(nil, 3)
	first.append(nil, applied.index)
	require.Equal(t, applied, w.metaLog.applied)
	rogue := &leader{t: t, w: w, term: 3, last: entryID{index: 4, term: 2}}
	rogue.append(nil, 0) // index 5 of term 3 where term 2's entry 5 was applied
	rogue.append(nil, 6)
	require.NotNil(t, w.failure)
	require.Equal(t, "raft-state-machine-safety", w.failure.Checker)
}

// TestMetaLogKeepsTopicIdentities: the shadow gives each topic meta's
// identity (the creation time, and the count of numbered creates), and a
// delete or alter guarded by another identity changes nothing, as in meta.
func TestMetaLogKeepsTopicIdentities(t *testing.T) {
	w := NewWorld(DefaultOptions(1))
	l := w.metaLog
	l.members["n1"] = &meta.Member{ID: "n1", Alive: true}
	l.applyCommand(meta.CreateTopic{Name: "t", Owners: []string{"n1"}, CreatedAtMs: 5, Numbered: true})
	first := meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 5}
	require.Equal(t, first, l.identities["t"])
	l.applyCommand(meta.DeleteTopic{Name: "t"})
	l.applyCommand(meta.CreateTopic{Name: "t", Owners: []string{"n1"}, CreatedAtMs: 5, Numbered: true})
	require.Equal(t, meta.TopicIdentity{Incarnation: 2, CreatedAtMs: 5}, l.identities["t"], "created again within the same millisecond")

	l.applyCommand(meta.DeleteTopic{Name: "t", ExpectedCreation: meta.Expecting(first)})
	require.Contains(t, l.topics, "t", "a delete checked against the first topic leaves the second")
	two := 2
	l.applyCommand(meta.AlterTopic{Name: "t", Partitions: &two, NewOwners: []string{"n1"}, ExpectedCreation: meta.Expecting(first)})
	require.Len(t, l.topics["t"], 1, "so does an alter")
	l.applyCommand(meta.AlterTopic{Name: "t", Partitions: &two, NewOwners: []string{"n1"}, ExpectedCreation: meta.ExpectedCreation{ExpectedIncarnation: 2, ExpectedCreatedAtMs: 5}})
	require.Len(t, l.topics["t"], 2, "an alter checked against it grows it")
	l.applyCommand(meta.DeleteTopic{Name: "t", ExpectedCreation: meta.ExpectedCreation{ExpectedIncarnation: 2, ExpectedCreatedAtMs: 5}})
	require.NotContains(t, l.topics, "t")
	require.NotContains(t, l.identities, "t")
}

// TestMetaLogRefusesWhatMetaRefuses: the shadow keeps a topic whose
// delete or growth was checked against another owner (its creator, or ""
// once that user is deleted), and places no topic whose creator was
// deleted meanwhile, past the topic or per-node partition limit, or
// naming a missing dead-letter topic, or (a create of this release)
// whose name a topic holds in another case, as meta refuses each.
func TestMetaLogRefusesWhatMetaRefuses(t *testing.T) {
	w := NewWorld(DefaultOptions(1))
	l := w.metaLog
	l.members["n1"] = &meta.Member{ID: "n1", Alive: true}
	l.applyUser(meta.PutUser{Username: "ann", NowMs: 7})
	l.applyCommand(meta.CreateTopic{Name: "t", Owners: []string{"n1"}, CreatedAtMs: 5, CreatedBy: "ann", CreatorCreatedAtMs: 7})
	require.Contains(t, l.topics, "t")
	two := 2
	l.applyCommand(meta.AlterTopic{Name: "t", Partitions: &two, NewOwners: []string{"n1"}, ExpectedOwner: "bob"})
	require.Len(t, l.topics["t"], 1, "a growth checked against another owner")
	l.applyCommand(meta.DeleteTopic{Name: "t", ExpectedOwner: "bob"})
	require.Contains(t, l.topics, "t", "a delete checked against another owner")
	l.applyUser(meta.DeleteUser{Username: "ann"})
	l.applyCommand(meta.DeleteTopic{Name: "t", ExpectedOwner: "ann"})
	require.Contains(t, l.topics, "t", "its owner was deleted: the topic is no one's")

	l.applyCommand(meta.CreateTopic{Name: "u", Owners: []string{"n1"}, CreatedBy: "ann", CreatorCreatedAtMs: 7})
	require.NotContains(t, l.topics, "u", "its creator was deleted before the create applied")
	l.applyCommand(meta.CreateTopic{Name: "u", Owners: []string{"n1"}, Limits: meta.PlacementLimits{TopicsMax: 1}})
	require.NotContains(t, l.topics, "u", "past the topic limit")
	l.applyCommand(meta.CreateTopic{Name: "u", Owners: []string{"n1"}, Limits: meta.PlacementLimits{PartitionsPerNodeMax: 1}})
	require.NotContains(t, l.topics, "u", "past the per-node partition limit")
	l.applyCommand(meta.CreateTopic{Name: "u", Owners: []string{"n1"}, DeadLetterTopic: "missing"})
	require.NotContains(t, l.topics, "u", "naming a missing dead-letter topic")
	l.applyCommand(meta.CreateTopic{Name: "u", Owners: []string{"n1"}, DeadLetterTopic: "t"})
	require.Contains(t, l.topics, "u")

	l.members["n2"] = &meta.Member{ID: "n2", Alive: true}
	l.applyCommand(meta.SetTarget{Topic: "u", Partition: 0, ExpectedOwner: "n1", Target: "n2", NowMs: 50})
	started := l.topics["u"][0].MoveStartedAtMs
	require.Equal(t, "n2", l.topics["u"][0].Target)
	ended := []meta.Command{
		meta.CompleteMove{Topic: "u", Partition: 0, ExpectedOwner: "n1", ExpectedTarget: "n2", ExpectedStartedAtMs: started, ExpectedCreation: meta.ExpectedCreation{ExpectedIncarnation: 99}},
		meta.ForcePromote{Topic: "u", Partition: 0, ExpectedOwner: "n1", ExpectedTarget: "n2", ExpectedStartedAtMs: started, ExpectedCreation: meta.ExpectedCreation{ExpectedIncarnation: 99}},
		meta.AbortMove{Topic: "u", Partition: 0, ExpectedTarget: "n2", ExpectedStartedAtMs: started, ExpectedCreation: meta.ExpectedCreation{ExpectedIncarnation: 99}},
	}
	for _, command := range ended {
		l.applyCommand(command)
		require.Equal(t, meta.Assignment{Owner: "n1", Target: "n2", MoveStartedAtMs: started, LastMoveStartedAtMs: started}, l.topics["u"][0],
			"%T of another creation of the topic", command)
	}
	l.applyCommand(meta.CompleteMove{Topic: "u", Partition: 0, ExpectedOwner: "n1", ExpectedTarget: "n2", ExpectedStartedAtMs: started,
		ExpectedCreation: meta.Expecting(l.identities["u"])})
	require.Equal(t, "n2", l.topics["u"][0].Owner, "the flip of this creation's move")

	l.applyCommand(meta.CreateTopic{Name: "U", Owners: []string{"n1"}, NamesFolded: true})
	require.NotContains(t, l.topics, "U", "a name a topic holds in another case")
	l.applyCommand(meta.CreateTopic{Name: "U", Owners: []string{"n1"}})
	require.Contains(t, l.topics, "U", "an entry of an earlier release applies as it did")
}
