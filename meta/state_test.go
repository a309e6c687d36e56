package meta

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stateWith applies setup commands, each of which must succeed.
func stateWith(t *testing.T, setup ...Command) *State {
	t.Helper()
	s := newState()
	for _, cmd := range setup {
		require.NoError(t, cmd.apply(s), "setup %T", cmd)
	}
	clear(s.dirty)
	return s
}

func heartbeat(id string, nowMs int64) MemberHeartbeat {
	return MemberHeartbeat{ID: id, HTTPAddr: id + ":7942", ClusterAddr: id + ":7943", NowMs: nowMs}
}

// baseSetup: members m1..m3 (heartbeat at 100 ms), topic "t" with
// partitions on m1, m2, and partition 1 moving from m2 to m3.
func baseSetup() []Command {
	return []Command{heartbeat("m1", 100), heartbeat("m2", 100), heartbeat("m3", 100),
		createTopic("t", "m1", "m2"),
		SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m3", NowMs: 150}}
}

// requireRejected applies cmd, expects the rejection and checks that
// nothing changed (state and records to write).
func requireRejected(t *testing.T, s *State, cmd Command, want error) {
	t.Helper()
	before := s.encodeImage()
	dirtyBefore := len(s.dirty)
	require.ErrorIs(t, cmd.apply(s), want)
	require.Equal(t, string(before), string(s.encodeImage()), "a rejected %T changed the state", cmd)
	require.Len(t, s.dirty, dirtyBefore, "a rejected %T marked records to write", cmd)
}

func assignmentOf(t *testing.T, s *State, topic string, partition int) Assignment {
	t.Helper()
	a, found := s.Assignment(topic, partition)
	require.True(t, found, "%s/%d", topic, partition)
	return a
}

func TestCreateTopic(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	require.NoError(t, createTopic("u", "m3", "m1", "m2").apply(s))
	record, found := s.Topic("u")
	require.True(t, found)
	require.Equal(t, TopicRecord{Name: "u", Partitions: 3, RetentionMs: 3_600_000, VisibilityTimeoutMs: 30_000,
		MaxInFlightPerPartition: 1024, MaxAckedAheadPerPartition: 1024, CreatedAtMs: 1_000, Incarnation: 2,
		Assignments: []Assignment{{Owner: "m3"}, {Owner: "m1"}, {Owner: "m2"}}}, record)
	require.Equal(t, []string{"t", "u"}, s.TopicNames())
	requireRejected(t, s, createTopic("u", "m1"), ErrTopicExists)
	requireRejected(t, s, createTopic("v", "m1", "ghost"), ErrMemberNotFound)
	requireRejected(t, s, createTopic("v"), ErrInvalidCommand)
	requireRejected(t, s, createTopic("", "m1"), ErrInvalidCommand)
	negative := createTopic("v", "m1")
	negative.RetentionMs = -1
	requireRejected(t, s, negative, ErrInvalidCommand)
}

// TestNewPartitionsGoOnlyToReceivingMembers: a create or a growth that
// places a partition on a member that is dead or draining is refused and
// changes nothing. Its proposer placed it from a replica from before the
// member died or drained (seed 52 of the three-node moves world: a node
// restarted with a stale replica created a topic with a partition on a
// member that had drained and retired, which nothing could ever move).
func TestNewPartitionsGoOnlyToReceivingMembers(t *testing.T) {
	s := stateWith(t, append(baseSetup(), heartbeat("m4", 100), MarkMemberDead{ID: "m4", ObservedHeartbeatMs: 100}, SetDraining{ID: "m3", Draining: true})...)
	for _, owner := range []string{"m3", "m4"} {
		requireRejected(t, s, createTopic("v", "m1", owner), ErrMemberNotReceiving)
		grow := 3
		requireRejected(t, s, AlterTopic{Name: "t", Partitions: &grow, NewOwners: []string{owner}}, ErrMemberNotReceiving)
	}
	require.NoError(t, createTopic("v", "m1", "m2").apply(s))
}

func TestDeleteTopic(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	require.NoError(t, DeleteTopic{Name: "t"}.apply(s))
	_, found := s.Topic("t")
	require.False(t, found)
	require.Empty(t, s.Moves(), "the topic's moves went with it")
	requireRejected(t, s, DeleteTopic{Name: "t"}, ErrTopicNotFound)
}

func TestAlterTopic(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	retention, partitions, inFlight := int64(7_200_000), 4, 5
	require.NoError(t, AlterTopic{Name: "t", RetentionMs: &retention, MaxInFlightPerPartition: &inFlight,
		Partitions: &partitions, NewOwners: []string{"m3", "m1"}}.apply(s))
	record, _ := s.Topic("t")
	require.Equal(t, retention, record.RetentionMs)
	require.Equal(t, inFlight, record.MaxInFlightPerPartition)
	require.Equal(t, int64(30_000), record.VisibilityTimeoutMs, "unset fields keep their value")
	require.Equal(t, 4, record.Partitions)
	require.Equal(t, []Assignment{{Owner: "m1"}, {Owner: "m2", Target: "m3", MoveStartedAtMs: 150, LastMoveStartedAtMs: 150}, {Owner: "m3"}, {Owner: "m1"}},
		record.Assignments)
	shrink, same := 2, 4
	requireRejected(t, s, AlterTopic{Name: "t", Partitions: &shrink}, ErrGuardFailed)
	requireRejected(t, s, AlterTopic{Name: "t", Partitions: &partitions, NewOwners: []string{"m1"}}, ErrGuardFailed)
	racedGrowth := 5
	// A growth from 3 to 5, applied after another grew the topic to 4: a
	// topic changed meanwhile.
	requireRejected(t, s, AlterTopic{Name: "t", Partitions: &racedGrowth, NewOwners: []string{"m1", "m2"}}, ErrGuardFailed)
	grow := 5
	requireRejected(t, s, AlterTopic{Name: "t", Partitions: &grow, NewOwners: []string{"ghost"}}, ErrMemberNotFound)
	requireRejected(t, s, AlterTopic{Name: "t"}, ErrInvalidCommand)
	requireRejected(t, s, AlterTopic{Name: "nope", Partitions: &same}, ErrTopicNotFound)
	negative := int64(-5)
	requireRejected(t, s, AlterTopic{Name: "t", VisibilityTimeoutMs: &negative}, ErrInvalidCommand)
}

// TestLeaseCapsAreBounded: a partition's lease table takes caps of 1 to
// LeaseCapMax only, and stops on an assert otherwise. The node resolves
// its default for a 0 and bounds both before proposing; a create or alter
// from a proposer that did not is refused (before proposing and when it
// applies) and changes nothing.
func TestLeaseCapsAreBounded(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	for _, bad := range []int{0, -1, LeaseCapMax + 1} {
		inFlight, ackedAhead := createTopic("u", "m1"), createTopic("u", "m1")
		inFlight.MaxInFlightPerPartition, ackedAhead.MaxAckedAheadPerPartition = bad, bad
		for _, create := range []CreateTopic{inFlight, ackedAhead} {
			require.ErrorIs(t, create.Validate(), ErrInvalidCommand, "a create with caps %d and %d", create.MaxInFlightPerPartition, create.MaxAckedAheadPerPartition)
			requireRejected(t, s, create, ErrInvalidCommand)
		}
		requireRejected(t, s, AlterTopic{Name: "t", MaxInFlightPerPartition: new(bad)}, ErrInvalidCommand)
		requireRejected(t, s, AlterTopic{Name: "t", MaxAckedAheadPerPartition: new(bad)}, ErrInvalidCommand)
	}
	edges := createTopic("u", "m1")
	edges.MaxInFlightPerPartition, edges.MaxAckedAheadPerPartition = 1, LeaseCapMax
	require.NoError(t, edges.apply(s))
	require.NoError(t, AlterTopic{Name: "t", MaxInFlightPerPartition: new(LeaseCapMax), MaxAckedAheadPerPartition: new(1)}.apply(s))
	record := topicRecordOf(t, s, "t")
	require.Equal(t, [2]int{LeaseCapMax, 1}, [2]int{record.MaxInFlightPerPartition, record.MaxAckedAheadPerPartition})
}

func TestMemberHeartbeat(t *testing.T) {
	s := stateWith(t)
	require.NoError(t, heartbeat("m1", 100).apply(s))
	require.NoError(t, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 100}.apply(s))
	for _, late := range []int64{90, 100} { // proposed late, or twice
		require.NoError(t, MemberHeartbeat{ID: "m1", HTTPAddr: "old:1", ClusterAddr: "old:2", NowMs: late}.apply(s))
		member, _ := s.Member("m1")
		require.Equal(t, Member{ID: "m1", HTTPAddr: "m1:7942", ClusterAddr: "m1:7943", LastHeartbeatMs: 100}, member,
			"a beat no later than the last brings no news: the member stays dead")
	}
	require.NoError(t, MemberHeartbeat{ID: "m1", HTTPAddr: "new:1", ClusterAddr: "new:2", NowMs: 110}.apply(s))
	member, found := s.Member("m1")
	require.True(t, found)
	require.Equal(t, Member{ID: "m1", HTTPAddr: "new:1", ClusterAddr: "new:2", Alive: true, LastHeartbeatMs: 110}, member,
		"a later heartbeat revives and updates addresses")
	requireRejected(t, s, MemberHeartbeat{ID: "m1", NowMs: 5}, ErrInvalidCommand)
}

// A beat that applies sets the member's DiskLow to what it says, and one
// that brings no news (no later than the last) leaves it.
func TestAMemberHeartbeatCarriesItsDiskState(t *testing.T) {
	s := stateWith(t)
	beat := func(nowMs int64, diskLow bool) MemberHeartbeat {
		return MemberHeartbeat{ID: "m1", HTTPAddr: "m1:1", ClusterAddr: "m1:2", NowMs: nowMs, DiskLow: diskLow}
	}
	diskLow := func() bool {
		member, _ := s.Member("m1")
		return member.DiskLow
	}
	require.NoError(t, beat(100, true).apply(s))
	require.True(t, diskLow())
	require.NoError(t, beat(100, false).apply(s))
	require.True(t, diskLow(), "a beat no later than the last changes nothing")
	require.NoError(t, beat(200, false).apply(s))
	require.False(t, diskLow(), "the next beat says the disk has room")
	require.NoError(t, beat(300, true).apply(s))
	restored, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	member, _ := restored.Member("m1")
	require.True(t, member.DiskLow, "a snapshot carries it")
}

// A member's next start (a later incarnation) stamps its heartbeats on its
// own clock, which may be behind the earlier start's: its first beat
// replaces LastHeartbeatMs, which then never goes back within that start;
// a late beat of an earlier start changes nothing, not even Alive.
func TestAMemberHeartbeatOfANewStartReplacesTheStamp(t *testing.T) {
	s := stateWith(t)
	beat := func(incarnation uint64, nowMs int64) MemberHeartbeat {
		return MemberHeartbeat{ID: "m1", HTTPAddr: "m1:1", ClusterAddr: "m1:2", NowMs: nowMs, Incarnation: incarnation}
	}
	stamp := func() (int64, uint64, bool) {
		member, _ := s.Member("m1")
		return member.LastHeartbeatMs, member.Incarnation, member.Alive
	}
	require.NoError(t, beat(1, 60_000).apply(s))
	require.NoError(t, beat(2, 1_000).apply(s))
	last, incarnation, _ := stamp()
	require.Equal(t, int64(1_000), last, "a new start's clock is behind the old one's: its stamp replaces")
	require.Equal(t, uint64(2), incarnation)
	require.NoError(t, beat(2, 900).apply(s))
	last, _, _ = stamp()
	require.Equal(t, int64(1_000), last, "within one start the stamp never goes back")
	require.NoError(t, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 1_000}.apply(s))
	require.NoError(t, beat(1, 70_000).apply(s))
	last, incarnation, alive := stamp()
	require.Equal(t, []any{int64(1_000), uint64(2), false}, []any{last, incarnation, alive}, "a late beat of the earlier start changes nothing")
}

func TestMemberHeartbeatsAppliesEveryBeatOrNone(t *testing.T) {
	s := stateWith(t)
	require.NoError(t, heartbeat("m1", 100).apply(s))
	require.NoError(t, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 100}.apply(s))
	require.NoError(t, MemberHeartbeats{Beats: []MemberHeartbeat{heartbeat("m1", 120), heartbeat("m2", 300)}}.apply(s))
	m1, _ := s.Member("m1")
	m2, found := s.Member("m2")
	require.True(t, found, "a round's beat creates a member on its first heartbeat")
	require.Equal(t, Member{ID: "m1", HTTPAddr: "m1:7942", ClusterAddr: "m1:7943", Alive: true, LastHeartbeatMs: 120}, m1,
		"each beat revives its member")
	require.Equal(t, int64(300), m2.LastHeartbeatMs, "each beat carries its own member's clock")
	requireRejected(t, s, MemberHeartbeats{Beats: []MemberHeartbeat{heartbeat("m3", 400), heartbeat("m2", 400)}}, ErrInvalidCommand)
	_, found = s.Member("m3")
	require.False(t, found, "a round refused for its order applies none of its beats")
}

func TestMarkMemberDead(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	require.NoError(t, heartbeat("m1", 200).apply(s))
	requireRejected(t, s, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 100}, ErrGuardFailed)
	requireRejected(t, s, MarkMemberDead{ID: "ghost", ObservedHeartbeatMs: 100}, ErrMemberNotFound)
	require.NoError(t, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 200}.apply(s))
	member, _ := s.Member("m1")
	require.False(t, member.Alive)
}

func TestSetDrainingAndRemoveMember(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	require.NoError(t, SetDraining{ID: "m2", Draining: true}.apply(s))
	member, _ := s.Member("m2")
	require.True(t, member.Draining)
	require.NoError(t, SetDraining{ID: "m2", Draining: false}.apply(s))
	member, _ = s.Member("m2")
	require.False(t, member.Draining)
	requireRejected(t, s, SetDraining{ID: "ghost", Draining: true}, ErrMemberNotFound)
	requireRejected(t, s, RemoveMember{ID: "m3"}, ErrMemberInUse)
	requireRejected(t, s, RemoveMember{ID: "m1"}, ErrMemberInUse)
	require.NoError(t, heartbeat("m4", 1).apply(s))
	require.NoError(t, RemoveMember{ID: "m4"}.apply(s))
	_, found := s.Member("m4")
	require.False(t, found)
	requireRejected(t, s, RemoveMember{ID: "m4"}, ErrMemberNotFound)
}

func TestSetTarget(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	require.NoError(t, SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "m1", Target: "m2", NowMs: 300}.apply(s))
	require.Equal(t, Assignment{Owner: "m1", Target: "m2", MoveStartedAtMs: 300, LastMoveStartedAtMs: 300}, assignmentOf(t, s, "t", 0))
	requireRejected(t, s, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m1", NowMs: 1}, ErrGuardFailed)
	require.NoError(t, createTopic("u", "m1").apply(s))
	requireRejected(t, s, SetTarget{Topic: "u", Partition: 0, ExpectedOwner: "m2", Target: "m3"}, ErrGuardFailed)
	requireRejected(t, s, SetTarget{Topic: "u", Partition: 0, ExpectedOwner: "m1", Target: "ghost"}, ErrMemberNotFound)
	requireRejected(t, s, SetTarget{Topic: "u", Partition: 1, ExpectedOwner: "m1", Target: "m2"}, ErrPartitionNotFound)
	requireRejected(t, s, SetTarget{Topic: "nope", Partition: 0, ExpectedOwner: "m1", Target: "m2"}, ErrTopicNotFound)
	requireRejected(t, s, SetTarget{Topic: "u", Partition: 0, ExpectedOwner: "m1", Target: "m1"}, ErrInvalidCommand)
	require.Equal(t, []Move{{Topic: "t", Partition: 0, Owner: "m1", Target: "m2", StartedAtMs: 300},
		{Topic: "t", Partition: 1, Owner: "m2", Target: "m3", StartedAtMs: 150}}, s.Moves())
}

// flipCommands returns CompleteMove and ForcePromote with the same guard.
func flipCommands(topic string, partition int, owner, target string) []Command {
	return []Command{CompleteMove{Topic: topic, Partition: partition, ExpectedOwner: owner, ExpectedTarget: target},
		ForcePromote{Topic: topic, Partition: partition, ExpectedOwner: owner, ExpectedTarget: target}}
}

func TestCompleteMoveAndForcePromote(t *testing.T) {
	for i := range 2 {
		s := stateWith(t, baseSetup()...)
		requireRejected(t, s, flipCommands("t", 1, "m1", "m3")[i], ErrGuardFailed) // stale owner
		requireRejected(t, s, flipCommands("t", 1, "m2", "m1")[i], ErrGuardFailed) // stale target
		requireRejected(t, s, flipCommands("t", 0, "m1", "m2")[i], ErrGuardFailed) // stable partition
		requireRejected(t, s, flipCommands("t", 9, "m2", "m3")[i], ErrPartitionNotFound)
		requireRejected(t, s, flipCommands("x", 1, "m2", "m3")[i], ErrTopicNotFound)
		require.NoError(t, flipCommands("t", 1, "m2", "m3")[i].apply(s))
		require.Equal(t, Assignment{Owner: "m3", LastMoveStartedAtMs: 150}, assignmentOf(t, s, "t", 1))
		requireRejected(t, s, flipCommands("t", 1, "m2", "m3")[i], ErrGuardFailed) // replayed flip
	}
}

func TestAbortMove(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	requireRejected(t, s, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m1"}, ErrGuardFailed)
	requireRejected(t, s, AbortMove{Topic: "t", Partition: 0, ExpectedTarget: "m3"}, ErrGuardFailed)
	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3"}.apply(s))
	require.Equal(t, Assignment{Owner: "m2", LastMoveStartedAtMs: 150}, assignmentOf(t, s, "t", 1))
	requireRejected(t, s, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3"}, ErrGuardFailed)
}

func TestUsers(t *testing.T) {
	s := stateWith(t)
	grants := []Grant{{Action: "produce", Patterns: []string{"orders*"}}}
	require.NoError(t, PutUser{Username: "admin", PasswordHash: []byte("h0"), Root: true, CreateOnly: true, NowMs: 1}.apply(s))
	require.NoError(t, PutUser{Username: "ann", PasswordHash: []byte("h1"), Grants: grants, CreateOnly: true, NowMs: 2}.apply(s))
	version := s.UsersVersion()
	requireRejected(t, s, PutUser{Username: "ann", PasswordHash: []byte("h2"), CreateOnly: true, NowMs: 3}, ErrUserExists)
	requireRejected(t, s, PutUser{Username: "bob", PasswordHash: []byte("h"), Root: true, NowMs: 3}, ErrUserExists)
	requireRejected(t, s, PutUser{Username: "admin", PasswordHash: []byte("h"), Root: true, Grants: grants, NowMs: 3}, ErrUserIsRoot)
	requireRejected(t, s, PutUser{Username: "admin", PasswordHash: []byte("h"), NowMs: 3}, ErrUserIsRoot)
	requireRejected(t, s, DeleteUser{Username: "admin"}, ErrUserIsRoot)
	requireRejected(t, s, SetGrants{Username: "admin", Grants: grants, NowMs: 3}, ErrUserIsRoot)
	requireRejected(t, s, SetGrants{Username: "ghost", NowMs: 3}, ErrUserNotFound)
	requireRejected(t, s, DeleteUser{Username: "ghost"}, ErrUserNotFound)
	requireRejected(t, s, PutUser{Username: "eve", NowMs: 3}, ErrInvalidCommand)
	require.Equal(t, version, s.UsersVersion(), "rejections do not bump the users version")
	require.NoError(t, PutUser{Username: "admin", PasswordHash: []byte("new"), Root: true, NowMs: 4}.apply(s))
	require.NoError(t, PutUser{Username: "ann", PasswordHash: []byte("h2"), Grants: grants, NowMs: 5}.apply(s))
	require.NoError(t, SetGrants{Username: "ann", NowMs: 6}.apply(s))
	ann, _ := s.User("ann")
	require.Equal(t, User{Username: "ann", PasswordHash: []byte("h2"), CreatedAtMs: 2, UpdatedAtMs: 6}, ann)
	require.Equal(t, version+3, s.UsersVersion())
	require.NoError(t, DeleteUser{Username: "ann"}.apply(s))
	require.Len(t, s.Users(), 1)
	require.Equal(t, 1, s.UserCount())
}

// Property: accessors hand out copies; changing them does not change the
// state.
func TestAccessorsReturnCopies(t *testing.T) {
	s := stateWith(t, append(baseSetup(), PutUser{Username: "ann", PasswordHash: []byte("h"),
		Grants: []Grant{{Action: "consume", Patterns: []string{"a"}}}, NowMs: 1})...)
	before := s.encodeImage()
	record, _ := s.Topic("t")
	record.Assignments[0].Owner = "changed"
	s.Topics()[0].Assignments[1].Target = "changed"
	user, _ := s.User("ann")
	user.PasswordHash[0] = 'x'
	user.Grants[0].Patterns[0] = "changed"
	s.Users()[0].Grants[0].Action = "changed"
	s.ConfState()
	require.Equal(t, string(before), string(s.encodeImage()))
}

func TestConfChangeChecks(t *testing.T) {
	s := newState()
	for _, peer := range clusterPeers(3) {
		change := ConfChange{Kind: AddVoter, Peer: peer}
		require.NoError(t, s.checkConfChange(change))
		s.applyConfChange(change, ConfState{Voters: append(s.ConfState().Voters, peer.RaftID)})
	}
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: AddVoter, Peer: Peer{ID: "x", RaftID: 2, ClusterAddr: "x:1"}}), ErrPeerExists)
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: AddVoter, Peer: Peer{ID: "n2", RaftID: 9, ClusterAddr: "x:1"}}), ErrPeerExists)
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: AddVoter, Peer: Peer{ID: "x", RaftID: 0, ClusterAddr: "x:1"}}), ErrInvalidCommand)
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: Peer{ID: "n2", RaftID: 2}}), ErrTooFewVoters)
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: Peer{ID: "n9", RaftID: 9}}), ErrPeerNotFound)
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: 7}), ErrUnknownConfChange)
	fourth := Peer{ID: "n4", RaftID: 4, ClusterAddr: "n4:1"}
	s.applyConfChange(ConfChange{Kind: AddVoter, Peer: fourth}, ConfState{Voters: []uint64{4, 1, 2, 3}})
	require.NoError(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: clusterPeers(3)[1]}))
	s.applyConfChange(ConfChange{Kind: RemoveVoter, Peer: clusterPeers(3)[1]}, ConfState{Voters: []uint64{1, 3, 4}})
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: AddVoter, Peer: Peer{ID: "n5", RaftID: 2, ClusterAddr: "n5:1"}}), ErrRaftIDReused)
	require.True(t, s.RaftIDUsed(2))
	require.Equal(t, []uint64{1, 3, 4}, s.ConfState().Voters)
	require.Equal(t, []Peer{clusterPeers(3)[0], clusterPeers(3)[2], fourth}, s.Peers())
}

// fourVotersDraining returns a state of four voters m1..m4 (raft ids as
// the nodes derive them), all members, m4 draining.
func fourVotersDraining(t *testing.T) (*State, Peer) {
	s := stateWith(t, heartbeat("m1", 100), heartbeat("m2", 100), heartbeat("m3", 100), heartbeat("m4", 100),
		SetDraining{ID: "m4", Draining: true})
	var drained Peer
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		peer := Peer{ID: id, RaftID: RaftIDOf(id), ClusterAddr: id + ":7943"}
		s.applyConfChange(ConfChange{Kind: AddVoter, Peer: peer}, ConfState{Voters: append(s.ConfState().Voters, peer.RaftID)})
		drained = peer
	}
	return s, drained
}

// TestACompletedDecommissionCannotBeCancelled: once a drained member left
// the voters its raft id may never vote again, so it could not follow the
// metastore as a member that receives partitions: a cancel of its
// decommission is refused and changes nothing. Before the removal the
// cancel applies.
func TestACompletedDecommissionCannotBeCancelled(t *testing.T) {
	s, drained := fourVotersDraining(t)
	require.NoError(t, SetDraining{ID: "m4", Draining: false}.apply(s), "a voter's drain can be cancelled")
	require.NoError(t, SetDraining{ID: "m4", Draining: true}.apply(s))
	removal := ConfChange{Kind: RemoveVoter, Peer: drained, ExpectDraining: true}
	require.NoError(t, s.checkConfChange(removal))
	s.applyConfChange(removal, ConfState{Voters: []uint64{RaftIDOf("m1"), RaftIDOf("m2"), RaftIDOf("m3")}})
	requireRejected(t, s, SetDraining{ID: "m4", Draining: false}, ErrMemberLeftVoters)
	member, _ := s.Member("m4")
	require.True(t, member.Draining)
	require.NoError(t, SetDraining{ID: "m4", Draining: true}.apply(s), "a decommission again changes nothing")
}

// TestACompletedDecommissionOfANodeWithAnUnderivedRaftIDCannotBeCancelled:
// a cluster grown from one node keeps raft id 1 for that node, not the id
// RaftIDOf derives from its name. Its completed decommission is known by
// its node id, also after a snapshot; the cancel was accepted, which made
// a node out of the voters a member that receives partitions again.
func TestACompletedDecommissionOfANodeWithAnUnderivedRaftIDCannotBeCancelled(t *testing.T) {
	s := stateWith(t, heartbeat("first", 100), heartbeat("m2", 100), heartbeat("m3", 100), heartbeat("m4", 100),
		SetDraining{ID: "first", Draining: true})
	first := Peer{ID: "first", RaftID: 1, ClusterAddr: "first:7943"}
	require.NotEqual(t, RaftIDOf(first.ID), first.RaftID)
	s.applyConfChange(ConfChange{Kind: AddVoter, Peer: first}, ConfState{Voters: []uint64{1}})
	for _, id := range []string{"m2", "m3", "m4"} {
		peer := Peer{ID: id, RaftID: RaftIDOf(id), ClusterAddr: id + ":7943"}
		s.applyConfChange(ConfChange{Kind: AddVoter, Peer: peer}, ConfState{Voters: append(s.ConfState().Voters, peer.RaftID)})
	}
	removal := ConfChange{Kind: RemoveVoter, Peer: first, ExpectDraining: true, RecordNodeID: true}
	require.NoError(t, s.checkConfChange(removal))
	s.applyConfChange(removal, ConfState{Voters: []uint64{RaftIDOf("m2"), RaftIDOf("m3"), RaftIDOf("m4")}})
	requireRejected(t, s, SetDraining{ID: "first", Draining: false}, ErrMemberLeftVoters)

	restored, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	requireRejected(t, restored, SetDraining{ID: "first", Draining: false}, ErrMemberLeftVoters)
	member, _ := restored.Member("first")
	require.True(t, member.Draining)

	// A new node joins under the id (with the raft id it derives): a
	// voter, whose decommission may be cancelled again, when the addition
	// asks for it. An addition without RecordNodeID (proposed by a release
	// before it cleared node ids) keeps the id, as that release applied it.
	again := Peer{ID: "first", RaftID: RaftIDOf("first"), ClusterAddr: "first:7943"}
	old := decodedCopy(t, restored)
	old.applyConfChange(ConfChange{Kind: AddVoter, Peer: again}, ConfState{Voters: append(old.ConfState().Voters, again.RaftID)})
	require.Equal(t, []string{"first"}, old.clusterRecord().RemovedNodeIDs)
	requireRejected(t, old, SetDraining{ID: "first", Draining: false}, ErrMemberLeftVoters)
	add := ConfChange{Kind: AddVoter, Peer: again, RecordNodeID: true}
	require.NoError(t, restored.checkConfChange(add))
	restored.applyConfChange(add, ConfState{Voters: append(restored.ConfState().Voters, again.RaftID)})
	require.NoError(t, SetDraining{ID: "first", Draining: false}.apply(restored))
}

// decodedCopy is a copy of s through its image.
func decodedCopy(t *testing.T, s *State) *State {
	t.Helper()
	copied, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	return copied
}

// TestARemovalProposedBeforeNodeIDsWereRecordedAppliesAsItDid: a removal
// entry without RecordNodeID (proposed by an earlier release, perhaps
// applied by some replicas under it) records only the raft id, on every
// replica whichever release applies it: a replica that lagged and applies
// it after the upgrade must end in the state of one that applied it
// before, or a later cancel would apply on one and not on the other.
func TestARemovalProposedBeforeNodeIDsWereRecordedAppliesAsItDid(t *testing.T) {
	s := stateWith(t, heartbeat("first", 100), heartbeat("m2", 100), heartbeat("m3", 100), heartbeat("m4", 100),
		SetDraining{ID: "first", Draining: true})
	first := Peer{ID: "first", RaftID: 1, ClusterAddr: "first:7943"}
	s.applyConfChange(ConfChange{Kind: AddVoter, Peer: first}, ConfState{Voters: []uint64{1}})
	for _, id := range []string{"m2", "m3", "m4"} {
		peer := Peer{ID: id, RaftID: RaftIDOf(id), ClusterAddr: id + ":7943"}
		s.applyConfChange(ConfChange{Kind: AddVoter, Peer: peer}, ConfState{Voters: append(s.ConfState().Voters, peer.RaftID)})
	}
	s.applyConfChange(ConfChange{Kind: RemoveVoter, Peer: first, ExpectDraining: true}, ConfState{Voters: []uint64{RaftIDOf("m2"), RaftIDOf("m3"), RaftIDOf("m4")}})
	require.Empty(t, s.clusterRecord().RemovedNodeIDs, "the entry did not ask for the node id")
	require.NoError(t, SetDraining{ID: "first", Draining: false}.apply(s), "as the release that proposed the removal applied it")
}

// TestADecommissionRemovalIsGuardedByTheDrain: a drained member's removal
// from the voters is proposed with ExpectDraining; when the cancel of its
// decommission applies first, the removal is refused and the member stays
// a voter. An unguarded removal does not look at the drain.
func TestADecommissionRemovalIsGuardedByTheDrain(t *testing.T) {
	s, drained := fourVotersDraining(t)
	require.NoError(t, SetDraining{ID: "m4", Draining: false}.apply(s))
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: drained, ExpectDraining: true}), ErrGuardFailed)
	require.ErrorIs(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: Peer{ID: "m9", RaftID: 9}, ExpectDraining: true}), ErrGuardFailed,
		"a guarded removal of no member")
	require.NoError(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: drained}))
}

// Property: snapshot data round-trips; corrupt data is refused.
func TestStateImageRoundTrip(t *testing.T) {
	s := stateWith(t, append(baseSetup(), PutUser{Username: "admin", PasswordHash: []byte("h"), Root: true, NowMs: 1})...)
	for _, peer := range clusterPeers(3) {
		s.applyConfChange(ConfChange{Kind: AddVoter, Peer: peer}, ConfState{Voters: append(s.ConfState().Voters, peer.RaftID)})
	}
	decoded, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	require.Equal(t, string(s.encodeImage()), string(decoded.encodeImage()))
	require.Equal(t, s.UsersVersion(), decoded.UsersVersion())
	for _, data := range [][]byte{nil, {9}, {imageFormatVersion}, append([]byte{imageFormatVersion}, "{}x"...),
		append([]byte{imageFormatVersion}, `{"topics":[{"name":"a","partitions":2,"assignments":[{"owner":"m"}]}]}`...),
		append([]byte{imageFormatVersion}, `{"cluster":{"conf_state":{"voters":[1]},"peers":[]}}`...)} {
		_, err := decodeImage(data)
		require.ErrorIs(t, err, ErrMalformedSnapshot, "data %q", data)
	}
}

// Property: a flip that names the start of its move fails once that move
// was aborted and a new one with the same owner and target began (ABA);
// the new move's own flip passes.
func TestFlipOfAReplacedMoveFails(t *testing.T) {
	s := stateWith(t, baseSetup()...) // t/1 moves m2 -> m3, started at 150
	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3"}.apply(s))
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m3", NowMs: 900}.apply(s))
	requireRejected(t, s, CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 150}, ErrGuardFailed)
	requireRejected(t, s, ForcePromote{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 150}, ErrGuardFailed)
	require.NoError(t, CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 900}.apply(s))
	require.Equal(t, Assignment{Owner: "m3", LastMoveStartedAtMs: 900}, assignmentOf(t, s, "t", 1))
}

// Property: the end of a move (flip, forced flip, abort) that names the
// creation of its topic applies only to that creation. The topic is
// deleted and created again, and the new creation's partition moves to
// the same target under the same start as the deleted one's move: a late
// flip or abort of the old move names the old creation and fails, one of
// the new move passes, and one naming no creation (entries written
// before the fields existed) is checked on the move alone.
func TestTheEndOfAMoveOfADeletedCreationFails(t *testing.T) {
	s := stateWith(t, baseSetup()...) // t/1 moves m2 -> m3, started at 150
	record := topicRecordOf(t, s, "t")
	old := record.Identity()
	require.NoError(t, DeleteTopic{Name: "t"}.apply(s))
	require.NoError(t, createTopic("t", "m1", "m2").apply(s))
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m3", NowMs: 150}.apply(s))
	record = topicRecordOf(t, s, "t")
	current := record.Identity()
	require.NotEqual(t, old, current)
	require.Equal(t, int64(150), assignmentOf(t, s, "t", 1).MoveStartedAtMs, "the same start as the deleted creation's move")

	stale := CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 150,
		ExpectedCreation: Expecting(old)}
	requireRejected(t, s, stale, ErrGuardFailed)
	requireRejected(t, s, ForcePromote(stale), ErrGuardFailed)
	requireRejected(t, s, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3", ExpectedStartedAtMs: 150,
		ExpectedCreation: Expecting(old)}, ErrGuardFailed)

	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3", ExpectedStartedAtMs: 150,
		ExpectedCreation: Expecting(current)}.apply(s))
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m3", NowMs: 900}.apply(s))
	require.NoError(t, CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 900,
		ExpectedCreation: Expecting(current)}.apply(s))
	require.Equal(t, "m3", assignmentOf(t, s, "t", 1).Owner)
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m3", Target: "m2", NowMs: 1_000}.apply(s))
	require.NoError(t, CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m3", ExpectedTarget: "m2", ExpectedStartedAtMs: 1_000}.apply(s),
		"no creation named: the move alone")
}

// Property: an abort names the move it ends by its start, so a late or
// repeated abort of a move (a proposal retried by a node that did not
// learn its outcome) fails once the partition moves again to the same
// target, and leaves that later move running; an abort without a start
// (entries written before the field existed) is checked on the target
// alone.
func TestALateAbortOfAReplacedMoveFails(t *testing.T) {
	s := stateWith(t, baseSetup()...) // t/1 moves m2 -> m3, started at 150
	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3", ExpectedStartedAtMs: 150}.apply(s))
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m3", NowMs: 900}.apply(s))
	requireRejected(t, s, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3", ExpectedStartedAtMs: 150}, ErrGuardFailed)
	require.Equal(t, Assignment{Owner: "m2", Target: "m3", MoveStartedAtMs: 900, LastMoveStartedAtMs: 900}, assignmentOf(t, s, "t", 1))
	requireRejected(t, s, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3", ExpectedStartedAtMs: -1}, ErrInvalidCommand)
	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3"}.apply(s))
	require.Equal(t, Assignment{Owner: "m2", LastMoveStartedAtMs: 900}, assignmentOf(t, s, "t", 1))
}

// Property: a SetTarget applied again after its move was aborted (a
// duplicated or late proposal carrying the old clock) starts a move with a
// start of its own, so a withheld flip of the aborted move still fails
// (sim seed 991239: the revived move matched the withheld flip, which made
// the destination owner with a copy that missed what the source took after
// the abort).
func TestASetTargetAppliedAgainStartsAMoveOfItsOwn(t *testing.T) {
	s := stateWith(t, baseSetup()...) // t/1 moves m2 -> m3, started at 150
	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3"}.apply(s))
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m2", Target: "m3", NowMs: 150}.apply(s))
	require.Equal(t, Assignment{Owner: "m2", Target: "m3", MoveStartedAtMs: 151, LastMoveStartedAtMs: 151}, assignmentOf(t, s, "t", 1))
	requireRejected(t, s, CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 150}, ErrGuardFailed)
	require.NoError(t, CompleteMove{Topic: "t", Partition: 1, ExpectedOwner: "m2", ExpectedTarget: "m3", ExpectedStartedAtMs: 151}.apply(s))
}

// Property: a dead-letter setting names an existing other topic, at
// create and at alter, checked when the entry applies; deleting the
// dead-letter topic turns the setting off in the same entry; an image
// whose setting names a missing topic is malformed.
func TestDeadLetterSettingFollowsItsTopic(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	withDeadLetters := createTopic("src", "m1")
	withDeadLetters.MaxDeliveries, withDeadLetters.DeadLetterTopic = 3, "dead"
	requireRejected(t, s, withDeadLetters, ErrDeadLetterTopicNotFound)
	require.NoError(t, createTopic("dead", "m2").apply(s))
	require.NoError(t, withDeadLetters.apply(s))
	requireRejected(t, s, AlterTopic{Name: "src", DeadLetterTopic: new("nope")}, ErrDeadLetterTopicNotFound)
	requireRejected(t, s, AlterTopic{Name: "src", DeadLetterTopic: new("")}, ErrInvalidCommand)
	requireRejected(t, s, AlterTopic{Name: "src", MaxDeliveries: new(MaxDeliveriesMax + 1)}, ErrInvalidCommand)
	require.NoError(t, AlterTopic{Name: "src", MaxDeliveries: new(MaxDeliveriesMax)}.apply(s))
	record, _ := s.Topic("src")
	require.Equal(t, MaxDeliveriesMax, record.MaxDeliveries)
	require.Equal(t, "dead", record.DeadLetterTopic)

	clear(s.dirty)
	require.NoError(t, DeleteTopic{Name: "dead"}.apply(s))
	record, _ = s.Topic("src")
	require.Zero(t, record.MaxDeliveries, "deleting the dead-letter topic turns the setting off")
	require.Empty(t, record.DeadLetterTopic)
	require.True(t, s.dirty[recordKey{string(bucketTopics), "src"}], "the source's record is written in the same entry")

	dangling := append([]byte{imageFormatVersion}, `{"topics":[{"name":"a","partitions":1,"assignments":[{"owner":"m"}],`+
		`"max_deliveries":2,"dead_letter_topic":"b"}]}`...)
	_, err := decodeImage(dangling)
	require.ErrorIs(t, err, ErrMalformedSnapshot)
}

// TestTopicsVersionMovesWithTheTopicsOnly pins what readers that keep
// derived views (the node's topic cache, Moves) rely on: the version
// changes with every topic change and snapshot install, not with a
// heartbeat; and Moves answers the current placement in a slice of the
// caller's.
func TestTopicsVersionMovesWithTheTopicsOnly(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	moves := s.Moves()
	require.Equal(t, []Move{{Topic: "t", Partition: 1, Owner: "m2", Target: "m3", StartedAtMs: 150}}, moves)
	moves[0].Target = "changed by the caller"
	version := s.TopicsVersion()
	require.NoError(t, heartbeat("m1", 200).apply(s))
	require.Equal(t, version, s.TopicsVersion(), "a heartbeat changes no topic")
	require.Equal(t, "m3", s.Moves()[0].Target, "the caller's slice is its own")
	scratch := s.AppendMoves(make([]Move, 0, 4))
	scratch[0].Target = "changed in the caller's scratch"
	scratch = s.AppendMoves(scratch[:0])
	require.Equal(t, "m3", scratch[0].Target, "AppendMoves copies into the caller's slice")
	require.Len(t, s.AppendMoves(scratch), 2, "after what the slice held")

	require.NoError(t, AbortMove{Topic: "t", Partition: 1, ExpectedTarget: "m3"}.apply(s))
	require.Greater(t, s.TopicsVersion(), version)
	require.Empty(t, s.Moves(), "an aborted move is gone at once")

	version = s.TopicsVersion()
	installed := stateWith(t, baseSetup()...)
	s.replaceWith(installed)
	require.Greater(t, s.TopicsVersion(), version, "installing a snapshot changes the version")
	require.Len(t, s.Moves(), 1, "and the moves follow the installed topics")
}

// PeerByNodeID finds each voter by its node id, nothing for an unknown
// id, and the lowest raft id when two voters share a node id (which the
// commands never make, so the state is set by hand).
func TestPeerByNodeID(t *testing.T) {
	s := newState()
	for _, peer := range []Peer{{ID: "n3", RaftID: 30}, {ID: "n1", RaftID: 10}, {ID: "n2", RaftID: 20}, {ID: "n2", RaftID: 25}} {
		s.peers[peer.RaftID] = peer
	}
	for id, raftID := range map[string]uint64{"n1": 10, "n2": 20, "n3": 30} {
		peer, found := s.PeerByNodeID(id)
		require.True(t, found, id)
		require.Equal(t, raftID, peer.RaftID, id)
	}
	_, found := s.PeerByNodeID("n4")
	require.False(t, found)
	allocations := testing.AllocsPerRun(100, func() { _, _ = s.PeerByNodeID("n3") })
	require.Zero(t, allocations)
}

// TestAnOwnerGuardedChangeAppliesOnlyWhileItsCallerOwnsTheTopic: the
// HTTP layer checks that a caller who is not an admin owns the topics it
// changes, then the change is proposed; a topic deleted and created again
// by another user in between must not take the change meant for the old
// one. A guarded change applies to its caller's topics, and is refused
// (ErrOwnerChanged) once they are someone else's; an unguarded one (an
// admin's) applies to either.
func TestAnOwnerGuardedChangeAppliesOnlyWhileItsCallerOwnsTheTopic(t *testing.T) {
	owned := func(name, owner string) CreateTopic {
		c := createTopic(name, "m1", "m1", "m1")
		c.CreatedBy = owner
		return c
	}
	retention := int64(60_000)
	s := stateWith(t, heartbeat("m1", 100), owned("t", "bob"), owned("parent", "bob"), owned("child", "bob"))
	changes := []Command{
		DeleteTopic{Name: "t", ExpectedOwner: "ann"},
		AlterTopic{Name: "t", RetentionMs: &retention, ExpectedOwner: "ann"},
		AttachChild{Parent: "parent", Child: "child", AttachedAtMs: 1, ExpectedOwner: "ann"},
	}
	for _, change := range changes {
		requireRejected(t, s, change, ErrOwnerChanged)
	}
	created := owned("new-child", "ann")
	created.Parent, created.ExpectedOwner = "parent", "ann"
	requireRejected(t, s, created, ErrOwnerChanged)
	_, found := s.Topic("new-child")
	require.False(t, found, "a refused create leaves nothing")
	annsChild := owned("anns-child", "ann")
	annsChild.Parent = "anns-parent"
	require.NoError(t, owned("anns-parent", "ann").apply(s))
	require.NoError(t, annsChild.apply(s))
	created.Parent = "anns-child" // ann's topic breaks a fan-out rule too (a child has no children): the owner is told first
	created.ExpectedOwner = "bob"
	requireRejected(t, s, created, ErrOwnerChanged)

	require.NoError(t, AttachChild{Parent: "parent", Child: "child", AttachedAtMs: 1, ExpectedOwner: "bob"}.apply(s))
	requireRejected(t, s, DetachChild{Parent: "parent", Child: "child", ExpectedOwner: "ann"}, ErrOwnerChanged)
	require.NoError(t, DetachChild{Parent: "parent", Child: "child", ExpectedOwner: "bob"}.apply(s))
	require.NoError(t, AlterTopic{Name: "t", RetentionMs: &retention, ExpectedOwner: "bob"}.apply(s))
	require.NoError(t, DeleteTopic{Name: "t"}.apply(s), "an admin's change is not guarded")
	requireRejected(t, s, DeleteTopic{Name: "t", ExpectedOwner: "bob"}, ErrTopicNotFound)
	requireRejected(t, s, DeleteTopic{Name: "parent", ExpectedOwner: strings.Repeat("u", usernameBytesMax+1)}, ErrInvalidCommand)
}

// A deleted user's topics lose their owner: a user created again under
// the name does not own them; another user's topics keep theirs.
func TestDeletingAUserClearsTheOwnerOfItsTopics(t *testing.T) {
	bobs, anns := createTopic("bob.ledger", "m1"), createTopic("ann.orders", "m1")
	bobs.CreatedBy, anns.CreatedBy = "bob", "ann"
	s := stateWith(t, heartbeat("m1", 100),
		PutUser{Username: "bob", PasswordHash: []byte("h1"), CreateOnly: true, NowMs: 1},
		PutUser{Username: "ann", PasswordHash: []byte("h2"), CreateOnly: true, NowMs: 1}, bobs, anns)
	version := s.TopicsVersion()
	require.NoError(t, DeleteUser{Username: "bob"}.apply(s))
	record, _ := s.Topic("bob.ledger")
	require.Empty(t, record.CreatedBy, "no one owns the deleted user's topic")
	record, _ = s.Topic("ann.orders")
	require.Equal(t, "ann", record.CreatedBy)
	require.Greater(t, s.TopicsVersion(), version, "the topic change is published")
	require.NoError(t, PutUser{Username: "bob", PasswordHash: []byte("h3"), CreateOnly: true, NowMs: 2}.apply(s))
	record, _ = s.Topic("bob.ledger")
	require.Empty(t, record.CreatedBy)
}

// TestAChangeOfADeletedUserMissesItsNamesake: a password, grants or
// delete change checked against one user (UserCreatedAtMs) is refused
// once that user was deleted and created again under its name, and
// leaves the new user as it is; unchecked (0) it applies as before.
func TestAChangeOfADeletedUserMissesItsNamesake(t *testing.T) {
	s := stateWith(t, PutUser{Username: "eve", PasswordHash: []byte("old"), CreateOnly: true, NowMs: 1})
	checked := int64(1)
	stale := []Command{
		SetPassword{Username: "eve", PasswordHash: []byte("eves-new"), NowMs: 2, UserCreatedAtMs: checked},
		SetGrants{Username: "eve", Grants: []Grant{{Action: "admin", Patterns: []string{"*"}}}, NowMs: 2, UserCreatedAtMs: checked},
		DeleteUser{Username: "eve", UserCreatedAtMs: checked},
	}
	require.NoError(t, DeleteUser{Username: "eve", UserCreatedAtMs: checked}.apply(s))
	require.NoError(t, PutUser{Username: "eve", PasswordHash: []byte("someone-else"), CreateOnly: true, NowMs: 3}.apply(s))
	for _, cmd := range stale {
		requireRejected(t, s, cmd, ErrUserChanged)
	}
	user, ok := s.User("eve")
	require.True(t, ok)
	require.Equal(t, []byte("someone-else"), user.PasswordHash)
	require.Empty(t, user.Grants)

	require.NoError(t, SetPassword{Username: "eve", PasswordHash: []byte("by-name"), NowMs: 4}.apply(s), "0: unchecked")
	require.NoError(t, SetPassword{Username: "eve", PasswordHash: []byte("checked"), NowMs: 5, UserCreatedAtMs: 3}.apply(s))
	user, _ = s.User("eve")
	require.Equal(t, []byte("checked"), user.PasswordHash)
}

// TestAMarkDeadOfAnEarlierStartMissesALaterOne: a later start of a member
// replaces its heartbeat time with its own clock, which may be behind and
// come to equal the time a delayed MarkMemberDead observed; the observed
// incarnation tells the two starts apart.
func TestAMarkDeadOfAnEarlierStartMissesALaterOne(t *testing.T) {
	beat := func(incarnation uint64, nowMs int64) MemberHeartbeat {
		return MemberHeartbeat{ID: "m1", HTTPAddr: "a", ClusterAddr: "b", NowMs: nowMs, Incarnation: incarnation}
	}
	s := stateWith(t, beat(1, 10_000))
	stale := MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 10_000, ObservedIncarnation: 1}
	require.NoError(t, beat(2, 9_000).apply(s))
	require.NoError(t, beat(2, 10_000).apply(s))
	requireRejected(t, s, stale, ErrGuardFailed)
	require.NoError(t, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 10_000, ObservedIncarnation: 2}.apply(s))
	member, _ := s.Member("m1")
	require.False(t, member.Alive)
}

// TestUsersAreBounded: a create carrying the UsersMax bound past it is
// refused and changes nothing; a replacement of an existing user still
// applies; an entry without the bound (an earlier release's) applies as
// it did, so that every replica replays it alike.
func TestUsersAreBounded(t *testing.T) {
	s := stateWith(t)
	for i := range UsersMax {
		require.NoError(t, PutUser{Username: fmt.Sprintf("u%d", i), PasswordHash: []byte("h"), CreateOnly: true, NowMs: 1, UsersMax: UsersMax}.apply(s))
	}
	requireLimit(t, s, PutUser{Username: "one-more", PasswordHash: []byte("h"), CreateOnly: true, NowMs: 2, UsersMax: UsersMax}, LimitUsers)
	require.NoError(t, PutUser{Username: "u7", PasswordHash: []byte("h2"), NowMs: 3, UsersMax: UsersMax}.apply(s), "a replacement adds no user")
	require.NoError(t, DeleteUser{Username: "u7"}.apply(s))
	require.NoError(t, PutUser{Username: "one-more", PasswordHash: []byte("h"), CreateOnly: true, NowMs: 4, UsersMax: UsersMax}.apply(s), "room again")
	require.NoError(t, PutUser{Username: "older-release", PasswordHash: []byte("h"), CreateOnly: true, NowMs: 5}.apply(s), "unbounded entry")
}

// TestACreateOfADeletedUserIsNotInheritedByItsNamesake: a topic creation
// checked against a user (CreatorCreatedAtMs) that applies after the user
// was deleted, and created again for someone else, is refused: the
// namesake does not get the topic.
func TestACreateOfADeletedUserIsNotInheritedByItsNamesake(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100), PutUser{Username: "bob", PasswordHash: []byte("h1"), CreateOnly: true, NowMs: 1})
	create := CreateTopic{Name: "bob.ledger", Owners: []string{"m1"}, RetentionMs: 1, VisibilityTimeoutMs: 1,
		MaxInFlightPerPartition: 1, MaxAckedAheadPerPartition: 1, CreatedBy: "bob", CreatorCreatedAtMs: 1}
	require.NoError(t, DeleteUser{Username: "bob"}.apply(s))
	requireRejected(t, s, create, ErrUserChanged)
	require.NoError(t, PutUser{Username: "bob", PasswordHash: []byte("other"), CreateOnly: true, NowMs: 2}.apply(s))
	requireRejected(t, s, create, ErrUserChanged)
	create.CreatorCreatedAtMs = 2
	require.NoError(t, create.apply(s), "the new bob's own create")
	record, _ := s.Topic("bob.ledger")
	require.Equal(t, "bob", record.CreatedBy)
}

// A change checked against a topic applies only to that topic: one
// deleted and created again under its name between the check and the
// apply (by anyone, admins included), even within the same millisecond
// of the proposer's clock, has another identity; it is refused the
// change (ErrGuardFailed) and left as it is.
func TestAChangeOfADeletedTopicMissesItsNamesake(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100), createTopic("t", "m1", "m1", "m1"))
	first, _ := s.Topic("t")
	require.NoError(t, DeleteTopic{Name: "t"}.apply(s))
	require.NoError(t, createTopic("t", "m1", "m1", "m1").apply(s)) // the same CreatedAtMs
	second, _ := s.Topic("t")
	require.Equal(t, first.CreatedAtMs, second.CreatedAtMs)
	require.NotEqual(t, first.Identity(), second.Identity(), "a creation has its own incarnation")

	retention := int64(60_000)
	alter := func(identity TopicIdentity) AlterTopic {
		return AlterTopic{Name: "t", RetentionMs: &retention, ExpectedCreation: Expecting(identity)}
	}
	remove := func(identity TopicIdentity) DeleteTopic {
		return DeleteTopic{Name: "t", ExpectedCreation: Expecting(identity)}
	}
	requireRejected(t, s, alter(first.Identity()), ErrGuardFailed)
	requireRejected(t, s, remove(first.Identity()), ErrGuardFailed)
	record, found := s.Topic("t")
	require.True(t, found, "the namesake stays")
	require.NotEqual(t, retention, record.RetentionMs, "and keeps its retention")

	require.NoError(t, alter(second.Identity()).apply(s))
	record, _ = s.Topic("t")
	require.Equal(t, retention, record.RetentionMs, "a change checked against the namesake applies")
	require.NoError(t, remove(second.Identity()).apply(s))
	_, found = s.Topic("t")
	require.False(t, found)
}

// TestAMoveToAMemberThatCannotTakeItIsRefused: a move's target is chosen
// on the proposer's replica; one that applies after its target died,
// began to drain or left the voters is refused (ErrMemberNotReceiving)
// and starts nothing, as a new partition placed there would be.
func TestAMoveToAMemberThatCannotTakeItIsRefused(t *testing.T) {
	s, drained := fourVotersDraining(t)
	require.NoError(t, createTopic("t", "m1").apply(s))
	require.NoError(t, MarkMemberDead{ID: "m3", ObservedHeartbeatMs: 100}.apply(s))
	for _, target := range []string{"m3", "m4"} { // dead; draining
		requireRejected(t, s, SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "m1", Target: target, NowMs: 200}, ErrMemberNotReceiving)
	}
	require.NoError(t, s.checkConfChange(ConfChange{Kind: RemoveVoter, Peer: drained, ExpectDraining: true, RecordNodeID: true}))
	s.applyConfChange(ConfChange{Kind: RemoveVoter, Peer: drained, RecordNodeID: true}, ConfState{Voters: []uint64{RaftIDOf("m1"), RaftIDOf("m2"), RaftIDOf("m3")}})
	requireRejected(t, s, SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "m1", Target: "m4", NowMs: 200}, ErrMemberNotReceiving)
	a, _ := s.Assignment("t", 0)
	require.Empty(t, a.Target, "no move started")
	require.NoError(t, SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "m1", Target: "m2", NowMs: 200}.apply(s))
}

// TestADrainedRemovalIsRefusedWhileTheMemberHoldsAPartition: the removal
// of a draining voter is refused while a partition is owned by it or
// moving to it: the leader saw it hold nothing when it proposed, and a
// move to it planned before its drain applied since (membership review).
func TestADrainedRemovalIsRefusedWhileTheMemberHoldsAPartition(t *testing.T) {
	s, drained := fourVotersDraining(t)
	require.NoError(t, createTopic("t", "m1").apply(s))
	a, _ := s.assignment("t", 0)
	a.Target = "m4" // a SetTarget planned while m4 was a receiver, applied after its drain began
	require.True(t, s.memberPlaced("m4"))
	removal := ConfChange{Kind: RemoveVoter, Peer: drained, ExpectDraining: true, RecordNodeID: true}
	require.ErrorIs(t, s.checkConfChange(removal), ErrGuardFailed)
	a.Target = ""
	require.NoError(t, s.checkConfChange(removal), "placed nowhere, it may go")
}

// TestAMoveStartsOnlyWithinThePlannersBound: a move carries the bound of
// moves in flight its plan kept; one that applies when that many
// partitions already have a target (a plan proposal held up on its way,
// applied after the next plan's) is refused and starts nothing
// (membership review).
func TestAMoveStartsOnlyWithinThePlannersBound(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100), heartbeat("m2", 100), createTopic("t", "m1", "m1", "m1"))
	require.NoError(t, SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "m1", Target: "m2", NowMs: 200, MovesMax: 2}.apply(s))
	require.NoError(t, SetTarget{Topic: "t", Partition: 1, ExpectedOwner: "m1", Target: "m2", NowMs: 200, MovesMax: 2}.apply(s))
	requireRejected(t, s, SetTarget{Topic: "t", Partition: 2, ExpectedOwner: "m1", Target: "m2", NowMs: 200, MovesMax: 2}, ErrGuardFailed)
	a, _ := s.Assignment("t", 2)
	require.Empty(t, a.Target)
	require.NoError(t, SetTarget{Topic: "t", Partition: 2, ExpectedOwner: "m1", Target: "m2", NowMs: 200}.apply(s), "an entry without the bound (an earlier release's) is not bounded")
}

// TestACreateOfAnEarlierReleaseIsNumberedAlikeEverywhere: a creation
// proposed by an earlier release carries no Numbered; whichever release
// applies it, and whether before or after an upgrade, the topic gets
// incarnation 0 and the sequence does not move, so the replicas number
// the later creations alike (diff review: a replica that applied an old
// creation after the upgrade numbered every later topic one higher).
func TestACreateOfAnEarlierReleaseIsNumberedAlikeEverywhere(t *testing.T) {
	old := createTopic("x", "m1")
	old.Numbered = false
	upgraded := stateWith(t, heartbeat("m1", 100))
	upgraded.topics["x"] = &TopicRecord{Name: "x", Partitions: 1, RetentionMs: old.RetentionMs, VisibilityTimeoutMs: old.VisibilityTimeoutMs,
		MaxInFlightPerPartition: 1024, MaxAckedAheadPerPartition: 1024, CreatedAtMs: old.CreatedAtMs, Assignments: assignmentsOf(old.Owners)} // applied by the earlier release
	lagging := stateWith(t, heartbeat("m1", 100), old) // applies the same entry with this release
	x, _ := lagging.Topic("x")
	require.Zero(t, x.Incarnation)

	for _, s := range []*State{upgraded, lagging} {
		next := createTopic("y", "m1")
		next.CreatedAtMs = 2_000
		require.NoError(t, next.apply(s))
	}
	yUpgraded, _ := upgraded.Topic("y")
	yLagging, _ := lagging.Topic("y")
	require.Equal(t, yUpgraded.Identity(), yLagging.Identity(), "one entry, one identity on every replica")
	require.Equal(t, uint64(1), yLagging.Incarnation)
}

// TestATopicNameEqualIgnoringCaseIsRefused: a partition's directory is
// named after its topic, so on a case-insensitive file system "orders"
// and "Orders" would share theirs, and each would remove the other's data
// as stale. A create of this release (NamesFolded) whose name equals an
// existing topic's ignoring case is refused, plain or as a fan-out child,
// naming the topic it clashes with. A pair of such topics an earlier
// release created keeps working, and such an entry of an earlier release
// applies as it did on every replica.
func TestATopicNameEqualIgnoringCaseIsRefused(t *testing.T) {
	s := stateWith(t, append(baseSetup(), createTopic("orders", "m1"))...)
	for _, name := range []string{"Orders", "ORDERS", "oRdErS"} {
		requireRejected(t, s, createTopic(name, "m1"), ErrTopicExistsIgnoringCase)
		child := createTopic(name, "m1")
		child.Parent = "t"
		requireRejected(t, s, child, ErrTopicExistsIgnoringCase)
	}
	require.ErrorContains(t, createTopic("Orders", "m1").apply(s), `topic "orders" exists`, "the refusal names the topic")
	for _, name := range []string{"orders.", "order", "0rders", "orders_x"} {
		require.NoError(t, createTopic(name, "m1").apply(s), "%q differs in more than case", name)
	}

	earlier := createTopic("ORDERS", "m2")
	earlier.NamesFolded = false
	require.NoError(t, earlier.apply(s), "an entry of an earlier release applies as it did")
	require.ErrorContains(t, createTopic("Orders", "m1").apply(s), `topic "ORDERS" exists`,
		"of two namesakes, the refusal names the least, whatever the map's order")
	retention := int64(7_200_000)
	for _, name := range []string{"orders", "ORDERS"} {
		require.NoError(t, AlterTopic{Name: name, RetentionMs: &retention}.apply(s), "%s keeps working", name)
		require.NoError(t, SetTarget{Topic: name, Partition: 0, ExpectedOwner: topicRecordOf(t, s, name).Assignments[0].Owner,
			Target: "m3", NowMs: 200}.apply(s), "%s keeps working", name)
	}
	require.NoError(t, DeleteTopic{Name: "orders"}.apply(s))
	requireRejected(t, s, createTopic("Orders", "m1"), ErrTopicExistsIgnoringCase)
	require.NoError(t, DeleteTopic{Name: "ORDERS"}.apply(s))
	require.NoError(t, createTopic("Orders", "m1").apply(s), "the name is free once no topic holds it in any case")
}

func topicRecordOf(t *testing.T, s *State, name string) TopicRecord {
	t.Helper()
	record, found := s.Topic(name)
	require.True(t, found, "topic %q", name)
	return record
}

// TestNoNewPartitionGoesToAMemberThatLeftTheVoters: a member whose
// decommission is complete can be listed again, alive and not draining,
// by a heartbeat proposed before its retirement and applied after its
// removal from the members (node: forgetRetiredMembers marks it draining
// again, in a later entry). A create or a growth proposed from a replica
// from before its drain and applied in that window placed a partition on
// a node that no longer follows the metastore, which nothing could ever
// move off it (its copy has no source). A placement of this release
// (OwnersVoting) is refused there, as a move to it always was; an entry
// of an earlier release applies as it did.
func TestNoNewPartitionGoesToAMemberThatLeftTheVoters(t *testing.T) {
	s, drained := fourVotersDraining(t)
	require.NoError(t, createTopic("t", "m1").apply(s))
	removal := ConfChange{Kind: RemoveVoter, Peer: drained, ExpectDraining: true, RecordNodeID: true}
	require.NoError(t, s.checkConfChange(removal))
	s.applyConfChange(removal, ConfState{Voters: []uint64{RaftIDOf("m1"), RaftIDOf("m2"), RaftIDOf("m3")}})
	require.NoError(t, MarkMemberDead{ID: "m4", ObservedHeartbeatMs: 100}.apply(s))
	require.NoError(t, RemoveMember{ID: "m4"}.apply(s))
	require.NoError(t, heartbeat("m4", 90).apply(s), "a beat proposed before the retirement, applied late")
	member, _ := s.Member("m4")
	require.True(t, member.Receiving(), "listed again, alive and not draining")
	require.True(t, s.Retired("m4"))

	requireRejected(t, s, SetTarget{Topic: "t", Partition: 0, ExpectedOwner: "m1", Target: "m4", NowMs: 200}, ErrMemberNotReceiving)
	create := createTopic("u", "m1", "m4")
	create.OwnersVoting = true
	requireRejected(t, s, create, ErrMemberNotReceiving)
	grow, before := 2, topicRecordOf(t, s, "t")
	alter := AlterTopic{Name: "t", ExpectedCreation: Expecting(before.Identity()), Partitions: &grow, NewOwners: []string{"m4"}}
	alter.OwnersVoting = true
	requireRejected(t, s, alter, ErrMemberNotReceiving)

	create.OwnersVoting, alter.OwnersVoting = false, false
	require.NoError(t, create.apply(s), "an entry of an earlier release applies as it did")
	require.NoError(t, alter.apply(s), "an entry of an earlier release applies as it did")
	require.Equal(t, "m4", topicRecordOf(t, s, "u").Assignments[1].Owner)
}

// A member is known by the data directory of its first beat that names
// one: a beat of the same node id from another directory changes nothing
// (the member stays dead once marked so), one that names none (a node of
// an earlier release) counts, and the member's own beats go on counting.
func TestAMemberKeepsItsDataDirectory(t *testing.T) {
	s := newState()
	beat := func(nowMs int64, dataID string) MemberHeartbeat {
		b := heartbeat("m1", nowMs)
		b.DataID = dataID
		return b
	}
	require.NoError(t, beat(100, "").apply(s))
	require.NoError(t, beat(200, "home").apply(s))
	member, _ := s.Member("m1")
	require.Equal(t, "home", member.DataID, "the first beat that names a directory gives it")

	require.NoError(t, MarkMemberDead{ID: "m1", ObservedHeartbeatMs: 200}.apply(s))
	require.NoError(t, beat(300, "elsewhere").apply(s))
	member, _ = s.Member("m1")
	require.Equal(t, Member{ID: "m1", HTTPAddr: member.HTTPAddr, ClusterAddr: member.ClusterAddr, LastHeartbeatMs: 200, DataID: "home"}, member,
		"a beat from another directory changes nothing")

	require.NoError(t, beat(400, "home").apply(s))
	member, _ = s.Member("m1")
	require.True(t, member.Alive)
	require.NoError(t, beat(500, "").apply(s))
	member, _ = s.Member("m1")
	require.Equal(t, int64(500), member.LastHeartbeatMs, "a beat naming no directory counts")
	require.Equal(t, "home", member.DataID)
	requireRejected(t, s, beat(600, strings.Repeat("d", nameBytesMax+1)), ErrInvalidCommand)
}

// Members returns copies of the members sorted by id, in one allocation:
// the node's dead-member detection calls it on its ticks.
func TestMembersSortedInOneAllocation(t *testing.T) {
	s := newState()
	for _, id := range []string{"n4", "n2", "n5", "n1", "n3"} {
		s.members[id] = &Member{ID: id, HTTPAddr: "addr-" + id}
	}
	members := s.Members()
	ids := make([]string, 0, len(members))
	for _, member := range members {
		ids = append(ids, member.ID)
		require.Equal(t, "addr-"+member.ID, member.HTTPAddr)
	}
	require.Equal(t, []string{"n1", "n2", "n3", "n4", "n5"}, ids)
	members[0].HTTPAddr = "changed"
	require.Equal(t, "addr-n1", s.members["n1"].HTTPAddr, "a copy, not the state's member")
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = s.Members() }))
}
