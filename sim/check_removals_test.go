package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
)

// removalWorld is a three-node world whose committed log has topic "t"
// created at index 10 with partition 0 owned by n1 and partition 1 owned
// by n2 and targeted by n3, and whose committed index is 20.
func removalWorld() *World {
	opts := DefaultOptions(1)
	opts.Nodes = 3
	w := NewWorld(opts)
	w.metaLog.topics["t"] = []meta.Assignment{{Owner: "n1"}, {Owner: "n2", Target: "n3"}}
	w.metaLog.identities["t"] = meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 1_000}
	w.removals.placementChanged(10, meta.CreateTopic{Name: "t"})
	w.metaLog.applied.index = 20
	return w
}

func TestTheRemovalCheckerFailsARemovalOfAPartitionTheNodeKnewItHeld(t *testing.T) {
	cases := []struct {
		name      string
		node      int
		path      string
		known     uint64
		wantsFail bool
	}{
		{"the owner, after it applied the create", 0, "topics/t/p00000", 12, true},
		{"the target, after it applied the target", 2, "topics/t/p00001", 12, true},
		{"the owner of one partition, removing the topic", 1, "topics/t", 12, true},
		{"the owner, before it applied the create (an older incarnation)", 0, "topics/t/p00000", 9, false},
		{"a node holding neither", 0, "topics/t/p00001", 12, false},
		{"a node holding no partition of the topic, removing it", 0, "topics/other", 12, false},
	}
	for _, c := range cases {
		w := removalWorld()
		topic, partition, ok := parsePartitionPath(c.path)
		require.True(t, ok, c.name)
		w.removals.judgeOrDefer(removal{node: w.nodes[c.node], path: c.path, topic: topic, partition: partition, appliedIndex: 15, knownIndex: c.known})
		require.Equal(t, c.wantsFail, w.failure != nil, "%s: the removal of %s by n%d must fail the run: %v", c.name, c.path, c.node+1, c.wantsFail)
		if c.wantsFail {
			require.Equal(t, "dir-removal", w.failure.Checker)
		}
	}
}

// TestTheRemovalCheckerExcusesOnlyAnotherCreationsFiles: a removal by a
// holder passes when what it takes holds no segment or is stamped with
// another creation of the topic than the committed one, never when a
// directory with records it takes is of the committed creation or
// unstamped.
func TestTheRemovalCheckerExcusesOnlyAnotherCreationsFiles(t *testing.T) {
	committed, otherCreation := meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 1_000}, meta.TopicIdentity{Incarnation: 7, CreatedAtMs: 1}
	other := dirSeen{stamp: &otherCreation, records: true}
	current := dirSeen{stamp: &committed, records: true}
	unstamped, empty := dirSeen{records: true}, dirSeen{}
	cases := []struct {
		name      string
		path      string
		dirs      map[int]dirSeen
		wantsFail bool
	}{
		{"its partition, of another creation", "topics/t/p00000", map[int]dirSeen{0: other}, false},
		{"its partition, with no segment", "topics/t/p00000", map[int]dirSeen{0: empty}, false},
		{"its partition, of the committed creation", "topics/t/p00000", map[int]dirSeen{0: current}, true},
		{"its partition, unstamped", "topics/t/p00000", map[int]dirSeen{0: unstamped}, true},
		{"its partition, absent", "topics/t/p00000", map[int]dirSeen{}, true},
		{"the topic, its partition absent, another creation's beside it", "topics/t", map[int]dirSeen{2: other}, false},
		{"the topic, its partition of another creation", "topics/t", map[int]dirSeen{0: other, 2: other}, false},
		{"the topic, its partition with no segment", "topics/t", map[int]dirSeen{0: empty}, false},
		{"the topic, its partition absent, the committed creation's beside it", "topics/t", map[int]dirSeen{2: current}, true},
		{"the topic, its partition absent, an unstamped one beside it", "topics/t", map[int]dirSeen{1: other, 2: unstamped}, true},
		{"the topic, with no partition directory", "topics/t", map[int]dirSeen{}, false},
		{"the topic, its disk not read", "topics/t", nil, true},
	}
	for _, c := range cases {
		w := removalWorld()
		topic, partition, ok := parsePartitionPath(c.path)
		require.True(t, ok, c.name)
		w.removals.judgeOrDefer(removal{node: w.nodes[0], path: c.path, topic: topic, partition: partition, appliedIndex: 15, knownIndex: 12, dirs: c.dirs})
		require.Equal(t, c.wantsFail, w.failure != nil, "%s: must fail the run: %v", c.name, c.wantsFail)
	}
}

func TestTheRemovalCheckerLetsAPartitionGoOnceTheHoldingEnds(t *testing.T) {
	w := removalWorld()
	w.metaLog.topics["t"][1] = meta.Assignment{Owner: "n3"} // the flip
	w.removals.placementChanged(21, meta.CompleteMove{Topic: "t", Partition: 1})
	w.metaLog.applied.index = 21
	w.removals.judgeOrDefer(removal{node: w.nodes[1], path: "topics/t/p00001", topic: "t", partition: 1, appliedIndex: 21, knownIndex: 21})
	require.Nil(t, w.failure, "the old owner may remove its copy once the flip committed")
	w.removals.judgeOrDefer(removal{node: w.nodes[2], path: "topics/t/p00001", topic: "t", partition: 1, appliedIndex: 21, knownIndex: 21})
	require.NotNil(t, w.failure, "the new owner, target since index 10, holds it without a break")

	w = removalWorld()
	delete(w.metaLog.topics, "t")
	w.removals.placementChanged(21, meta.DeleteTopic{Name: "t"})
	w.metaLog.topics["t"] = []meta.Assignment{{Owner: "n1"}}
	w.removals.placementChanged(22, meta.CreateTopic{Name: "t"})
	w.metaLog.applied.index = 22
	w.removals.judgeOrDefer(removal{node: w.nodes[0], path: "topics/t", topic: "t", partition: -1, appliedIndex: 21, knownIndex: 21})
	require.Nil(t, w.failure, "a node that applied the delete, not the re-create, removes the old incarnation")
}

func TestTheRemovalCheckerWaitsForTheCommitOfWhatTheNodeApplied(t *testing.T) {
	w := removalWorld()
	w.removals.judgeOrDefer(removal{node: w.nodes[0], path: "topics/t/p00000", topic: "t", partition: 0, appliedIndex: 25, knownIndex: 12})
	require.Nil(t, w.failure, "a removal by a node ahead of the committed log the simulator knows waits")
	w.removals.judgeDeferred(24)
	require.Nil(t, w.failure, "it waits until the simulator's log reaches the node's applied index")
	w.removals.judgeDeferred(25)
	require.NotNil(t, w.failure, "and is judged there: n1 owns partition 0 since index 10")
}

func TestPartitionPathsAreParsed(t *testing.T) {
	for path, want := range map[string]int{"topics/t": -1, "topics/t/p00003": 3} {
		_, partition, ok := parsePartitionPath(path)
		require.True(t, ok, path)
		require.Equal(t, want, partition, path)
	}
	for _, path := range []string{"topics", "topics/t/p00003.aside", "topics/t/p00003/00000000000000000000.log", "moves/t/p00003", "topics/t/cursor"} {
		_, _, ok := parsePartitionPath(path)
		require.False(t, ok, "%s is not a partition directory", path)
	}
}

// TestMovesWorldsJudgeRemovals: the checker is not idle. Seeds of the
// three-node moves world remove partition directories (swept stale
// copies, dropped topics) and every removal is judged.
func TestMovesWorldsJudgeRemovals(t *testing.T) {
	judged := 0
	for seed := uint64(1); seed <= 2 && judged == 0; seed++ {
		opts := DefaultOptions(seed)
		opts.Nodes, opts.Moves = 3, true
		report := Run(opts)
		require.Nil(t, report.Failure, "seed %d", seed)
		judged += report.RemovalsJudged
	}
	require.Positive(t, judged, "two seeds of the three-node moves world judged no removal")
}

func TestATargetMayDropTheCopyItInstalledItself(t *testing.T) {
	w := removalWorld()
	n3 := w.nodes[2]
	w.removals.renamed(n3, "moves/t/p00001", "topics/t/p00001")
	w.removals.judgeOrDefer(removal{node: n3, path: "topics/t/p00001", topic: "t", partition: 1, appliedIndex: 15, knownIndex: 12,
		ownInstall: w.removals.installed[n3.id]["topics/t/p00001"]})
	require.Nil(t, w.failure, "a target whose installed copy failed verification removes it and copies again")

	w.metaLog.topics["t"][1] = meta.Assignment{Owner: "n3"}
	w.removals.placementChanged(21, meta.CompleteMove{Topic: "t", Partition: 1})
	w.metaLog.applied.index = 21
	w.removals.judgeOrDefer(removal{node: n3, path: "topics/t/p00001", topic: "t", partition: 1, appliedIndex: 21, knownIndex: 21, ownInstall: true})
	require.NotNil(t, w.failure, "once the flip committed, the installed copy is the owner's log")
}

// An install stops excusing a removal once it is gone: removing the
// topic's directory forgets the installs of its partitions, and a node
// that starts again forgets every install of its last incarnation (a
// crash may have undone a rename not yet durable).
func TestInstallsAreForgottenWithTheirTopicAndAtARestart(t *testing.T) {
	w := removalWorld()
	n := w.nodes[2]
	w.removals.renamed(n, "moves/t/p00001", "topics/t/p00001")
	w.removals.renamed(n, "moves/u/p00000", "topics/u/p00000")
	require.True(t, w.removals.installed[n.id]["topics/t/p00001"])
	w.removals.forgetInstalls(n, "topics/t")
	require.False(t, w.removals.installed[n.id]["topics/t/p00001"], "the topic's removal took its partition's install along")
	require.True(t, w.removals.installed[n.id]["topics/u/p00000"], "another topic's install stays")
	w.removals.restarted(n)
	require.Empty(t, w.removals.installed[n.id], "a restart forgets every install")
}

// A move job that returns after its session ended and its topic was
// deleted and created again drops what its directory holds: the old
// topic's records only (the node opened nothing there while the job was
// out). The same removal for a job of the current topic is judged as any
// other.
func TestAReturningJobMayDropItsInstallOfADeletedTopic(t *testing.T) {
	for _, c := range []struct {
		name      string
		job       meta.TopicIdentity
		wantsFail bool
	}{
		{"a job of the topic deleted since", meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 500}, false},
		{"a job of a topic of the same millisecond, deleted since", meta.TopicIdentity{Incarnation: 2, CreatedAtMs: 1_000}, false},
		{"a job of the committed topic", meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 1_000}, true},
	} {
		w := removalWorld()
		job := c.job
		w.removals.judgeOrDefer(removal{node: w.nodes[0], path: "topics/t/p00000", topic: "t", partition: 0, appliedIndex: 15, knownIndex: 12, jobTopic: &job})
		require.Equal(t, c.wantsFail, w.failure != nil, "%s: the removal must fail the run: %v", c.name, c.wantsFail)
		require.Equal(t, !c.wantsFail, w.removals.oldJobDrops == 1, "%s: counted as a returning job's drop", c.name)
	}
}

// Seed 6306003 of the three-node moves world (fault sites and weather on)
// holds a move's finalize job back (node-move-job-late) while its topic is
// deleted and created again with the partition on the same node; the
// job's return, never run, drops the directory it held. The removal
// checker once failed such a run (seed 6306001, whose draws the control
// plane's records changed since). A removal now renames the directory
// aside first (storage.DeletePartition), so a job that never ran, which
// installed nothing, removes nothing the checker could judge: the excuse
// itself is held by the table test above.
func TestTheLateJobOfARecreatedTopicDropsItsInstall(t *testing.T) {
	opts := DefaultOptions(6306003)
	opts.Nodes, opts.Moves, opts.Sites, opts.Weather, opts.MediaInClusters = 3, true, SitesOn, WeatherOn, true
	report := Run(opts)
	require.Nil(t, report.Failure, "seed 6306003: %v", report.FailureText())
	require.Positive(t, report.RemovalsJudged, "the run judged removals")
}

// Seed 6345010 of the one-node world (every fault) built the purge
// fault: the operator deletes ctl1 while the node's removal of its
// directory fails, creates it again, and the node crashes (a sync
// failure, before the purge fault's own crash) with the old files still
// there. Its restart forgot the removal; without partition stamps the
// new ctl1 served the deleted creation's records
// (control-resurrection). The stamps make the node remove them first.
// Seed 7140044 builds the same since the operator grows its topics too
// (the draws of 6900139, which built it before, changed with them): a
// purge failure armed on ctl0, its delete, its create again, the purge
// fault's crash, and three stale creations removed at the restart.
func TestARestartAfterAFailedPurgeServesNothingOfTheDeletedCreation(t *testing.T) {
	opts := DefaultOptions(7140044)
	report := Run(opts)
	require.Nil(t, report.Failure, "seed 7140044: %v", report.FailureText())
	require.Positive(t, report.StaleCreationsRemoved, "the restarted node removed the deleted creation's directories")
}
