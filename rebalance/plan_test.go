package rebalance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
)

// receivers returns alive, non-draining members with these ids.
func receivers(ids ...string) []Member {
	members := make([]Member, 0, len(ids))
	for _, id := range ids {
		members = append(members, Member{ID: id, Alive: true})
	}
	return members
}

// roundRobin returns count partitions of topic, partition i owned by
// owners[i mod len(owners)].
func roundRobin(topic string, count int, owners ...string) []Partition {
	partitions := make([]Partition, 0, count)
	for index := range count {
		partitions = append(partitions, Partition{Topic: topic, Index: index, Owner: owners[index%len(owners)]})
	}
	return partitions
}

// withMember replaces the member with the same id.
func withMember(members []Member, replacement Member) []Member {
	for i := range members {
		if members[i].ID == replacement.ID {
			members[i] = replacement
		}
	}
	return members
}

// planCases are hand-computed plans: each says why its expectation is
// right.
var planCases = []struct {
	name string
	in   Input
	want Result
}{
	{
		// T=6, R=3: shares 2, 2, 2. n1 gives t/5, t/4, t/3, t/2 (highest
		// index first); the largest deficit takes each, ties by id:
		// n2, n3, n2, n3.
		name: "six partitions on one node spread over three",
		in:   Input{Partitions: roundRobin("t", 6, "n1"), Members: receivers("n1", "n2", "n3"), MaxInFlightMoves: 8},
		want: Result{Changes: []Change{{"t", 2, "n1", "n3"}, {"t", 3, "n1", "n2"}, {"t", 4, "n1", "n3"}, {"t", 5, "n1", "n2"}}},
	},
	{
		// T=12, R=4: shares 3. Each old node gives its highest index.
		name: "a fourth node joins a balanced 12-partition cluster",
		in:   Input{Partitions: roundRobin("t", 12, "n1", "n2", "n3"), Members: receivers("n1", "n2", "n3", "n4"), MaxInFlightMoves: 8},
		want: Result{Changes: []Change{{"t", 9, "n1", "n4"}, {"t", 10, "n2", "n4"}, {"t", 11, "n3", "n4"}}},
	},
	{
		// n2 holds t/1 and t/4; T=6, R=2: shares 3, 3. t/4 leaves first,
		// to n1 (deficits tie), then t/1 to n3.
		name: "a draining node's partitions go to the other two",
		in: Input{Partitions: roundRobin("t", 6, "n1", "n2", "n3"), MaxInFlightMoves: 8,
			Members: withMember(receivers("n1", "n2", "n3"), Member{ID: "n2", Alive: true, Draining: true})},
		want: Result{Changes: []Change{{"t", 1, "n2", "n3"}, {"t", 4, "n2", "n1"}}},
	},
	{
		// n1 is dead: its partitions are pinned and T=0.
		name: "a dead owner's partitions stay",
		in: Input{Partitions: roundRobin("t", 3, "n1"), MaxInFlightMoves: 8,
			Members: withMember(receivers("n1", "n2", "n3"), Member{ID: "n1"})},
		want: Result{},
	},
	{
		// T=4 (n1's four are pinned), R=2: shares 2, 2. n2 gives two.
		name: "pinned partitions do not count in T",
		in: Input{Partitions: append(roundRobin("a", 4, "n1"), roundRobin("b", 4, "n2")...), MaxInFlightMoves: 8,
			Members: withMember(receivers("n1", "n2", "n3"), Member{ID: "n1"})},
		want: Result{Changes: []Change{{"b", 2, "n2", "n3"}, {"b", 3, "n2", "n3"}}},
	},
	{
		// T=7, R=3: base 2, extra 1. n2 and n3 hold 3; the ceiling goes
		// to n2 (tie by id), so only n3 gives one, to n1.
		name: "the ceiling share stays on the fullest node",
		in: Input{Partitions: append(roundRobin("a", 1, "n1"), roundRobin("b", 6, "n2", "n3")...),
			Members: receivers("n1", "n2", "n3"), MaxInFlightMoves: 8},
		want: Result{Changes: []Change{{"b", 5, "n3", "n1"}}},
	},
	{
		// n1 holds a/0..a/2 and b/0, n2 holds c/0, c/1: T=6, shares 3.
		// n1 gives one of topic a, its largest topic, not b/0.
		name: "the leaving partition comes from the node's largest topic",
		in: Input{Partitions: append(append(roundRobin("a", 3, "n1"), roundRobin("b", 1, "n1")...), roundRobin("c", 2, "n2")...),
			Members: receivers("n1", "n2"), MaxInFlightMoves: 8},
		want: Result{Changes: []Change{{"a", 2, "n1", "n2"}}},
	},
	{
		// T=10, R=4: base 2, extra 2; the ceilings go to n1 (6) and n2
		// (4), so n1 has 3 to give and n2 1. With one slot, n1 gives.
		name: "the source with the most to give goes first",
		in: Input{Partitions: append(roundRobin("a", 6, "n1"), roundRobin("b", 4, "n2")...),
			Members: receivers("n1", "n2", "n3", "n4"), MaxInFlightMoves: 1},
		want: Result{Changes: []Change{{"a", 5, "n1", "n3"}}},
	},
	{
		// n1 drains a/0; T=5 over n2, n3: n2 keeps the ceiling (3) and
		// has one to give. With one slot, the draining node goes first.
		name: "a draining node gives before a receiver with a surplus",
		in: Input{Partitions: append(roundRobin("a", 1, "n1"), roundRobin("b", 4, "n2")...), MaxInFlightMoves: 1,
			Members: withMember(receivers("n1", "n2", "n3"), Member{ID: "n1", Alive: true, Draining: true})},
		want: Result{Changes: []Change{{"a", 0, "n1", "n3"}}},
	},
	{
		// n2 drains t/1, t/4; n3 rests: R=1 (n1), T=4 (n3's two are
		// pinned), share 4. Both go to n1, none to the resting n3.
		name: "a draining node's partitions skip a resting receiver",
		in: Input{Partitions: roundRobin("t", 6, "n1", "n2", "n3"), MaxInFlightMoves: 8,
			Members: withMember(withMember(receivers("n1", "n2", "n3"), Member{ID: "n2", Alive: true, Draining: true}),
				Member{ID: "n3", Alive: true, Resting: true})},
		want: Result{Changes: []Change{{"t", 1, "n2", "n1"}, {"t", 4, "n2", "n1"}}},
	},
	{
		// n3 rests: its own t/2 and the t/0 coming to it are pinned and
		// kept, T=2 over n1, n2 (one each): nothing moves, nothing aborts.
		name: "a resting receiver keeps its partitions and the moves to it",
		in: Input{Partitions: []Partition{{"t", 0, "n1", "n3"}, {"t", 1, "n1", ""}, {"t", 2, "n3", ""}, {"t", 3, "n2", ""}},
			Members: withMember(receivers("n1", "n2", "n3"), Member{ID: "n3", Alive: true, Resting: true}), MaxInFlightMoves: 8},
		want: Result{},
	},
	{
		// Four moves are needed but only two slots are free.
		name: "the bound cuts the plan short",
		in:   Input{Partitions: roundRobin("t", 6, "n1"), Members: receivers("n1", "n2", "n3"), MaxInFlightMoves: 2},
		want: Result{Changes: []Change{{"t", 4, "n1", "n3"}, {"t", 5, "n1", "n2"}}},
	},
	{
		// t/0 moves to n2 and counts there: T=4, shares 2, 2; n1 holds
		// 2 stable, n2 holds 2 (one incoming). Nothing to do.
		name: "a move in flight counts at its target",
		in: Input{Partitions: []Partition{{"t", 0, "n1", "n2"}, {"t", 1, "n1", ""}, {"t", 2, "n1", ""}, {"t", 3, "n2", ""}},
			Members: receivers("n1", "n2"), MaxInFlightMoves: 8},
		want: Result{},
	},
	{
		// Two moves in flight fill the bound of 2.
		name: "no new move when the bound is reached",
		in: Input{Partitions: append([]Partition{{"a", 0, "n1", "n2"}, {"a", 1, "n1", "n2"}}, roundRobin("b", 6, "n1")...),
			Members: receivers("n1", "n2", "n3"), MaxInFlightMoves: 2},
		want: Result{},
	},
}

func TestPlanTable(t *testing.T) {
	for _, test := range planCases {
		t.Run(test.name, func(t *testing.T) {
			got, err := Plan(test.in)
			require.NoError(t, err)
			require.Equal(t, test.want, got)
		})
	}
}

// The abort rule: a move whose target is down is aborted; one whose target
// is draining is aborted while the owner is alive and kept otherwise, and
// the aborted partitions count at their owners.
func TestPlanAborts(t *testing.T) {
	members := []Member{{ID: "n1", Alive: true}, {ID: "n2", Alive: true}, {ID: "dead"},
		{ID: "drain", Alive: true, Draining: true}, {ID: "deadowner"}}
	in := Input{Members: members, MaxInFlightMoves: 8, Partitions: []Partition{
		{"a", 0, "n1", "dead"},
		{"a", 1, "n1", "drain"},
		{"a", 2, "deadowner", "drain"},
		{"a", 3, "n1", "ghost"},
		{"a", 4, "n1", "n2"},
	}}
	got, err := Plan(in)
	require.NoError(t, err)
	require.Equal(t, []Abort{
		{Topic: "a", Index: 0, Owner: "n1", Target: "dead", Reason: AbortTargetDown},
		{Topic: "a", Index: 1, Owner: "n1", Target: "drain", Reason: AbortTargetDraining},
		{Topic: "a", Index: 3, Owner: "n1", Target: "ghost", Reason: AbortTargetDown},
	}, got.Aborts)
	// T=5: n1 holds 3 (aborted), n2 holds 1, drain holds a/2. Shares 3, 2.
	// n1 has nothing movable, a/2 is in flight: nothing to start, even
	// though the bound (5 in flight of 8) leaves room.
	require.Empty(t, got.Changes)
}

// Without a receiver nothing moves, not even a draining node's partitions.
func TestPlanWithoutReceivers(t *testing.T) {
	in := Input{Partitions: roundRobin("t", 4, "n1", "n2"), MaxInFlightMoves: 8,
		Members: []Member{{ID: "n1", Alive: true, Draining: true}, {ID: "n2"}}}
	got, err := Plan(in)
	require.NoError(t, err)
	require.Equal(t, Result{}, got)
}

func TestValidate(t *testing.T) {
	valid := func() Input {
		return Input{Partitions: roundRobin("t", 2, "n1"), Members: receivers("n1", "n2"), MaxInFlightMoves: 8}
	}
	tests := []struct {
		name   string
		change func(in *Input)
		want   error
	}{
		{"valid", func(in *Input) {}, nil},
		{"bound zero", func(in *Input) { in.MaxInFlightMoves = 0 }, ErrMaxInFlightMovesInvalid},
		{"bound above the limit", func(in *Input) { in.MaxInFlightMoves = MaxInFlightMovesLimit + 1 }, ErrMaxInFlightMovesInvalid},
		{"empty topic", func(in *Input) { in.Partitions[0].Topic = "" }, ErrPartitionInvalid},
		{"negative index", func(in *Input) { in.Partitions[0].Index = -1 }, ErrPartitionInvalid},
		{"empty owner", func(in *Input) { in.Partitions[1].Owner = "" }, ErrPartitionInvalid},
		{"target is owner", func(in *Input) { in.Partitions[1].Target = "n1" }, ErrPartitionInvalid},
		{"duplicate partition", func(in *Input) { in.Partitions[1].Index = 0 }, ErrPartitionDuplicate},
		{"empty member id", func(in *Input) { in.Members[1].ID = "" }, ErrMemberInvalid},
		{"duplicate member", func(in *Input) { in.Members[1].ID = "n1" }, ErrMemberDuplicate},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			in := valid()
			test.change(&in)
			require.ErrorIs(t, in.Validate(), test.want)
			result, err := Plan(in)
			require.ErrorIs(t, err, test.want)
			if test.want != nil {
				require.Equal(t, Result{}, result, "Plan plans nothing for an invalid input")
			}
		})
	}
}

// fakeState is a StateReader with fixed contents.
type fakeState struct {
	topics  []meta.TopicRecord
	members []meta.Member
	retired map[string]bool
}

func (f fakeState) Topics() []meta.TopicRecord { return f.topics }
func (f fakeState) Members() []meta.Member     { return f.members }
func (f fakeState) Retired(id string) bool     { return f.retired[id] }

func TestInputFromState(t *testing.T) {
	state := fakeState{
		topics: []meta.TopicRecord{
			{Name: "a", Partitions: 2, Assignments: []meta.Assignment{{Owner: "n1"}, {Owner: "n1", Target: "n2", MoveStartedAtMs: 5}}},
			{Name: "b", Partitions: 1, Assignments: []meta.Assignment{{Owner: "n2"}}},
		},
		members: []meta.Member{{ID: "n1", Alive: true, HTTPAddr: "h1"}, {ID: "n2", Alive: false, Draining: true},
			{ID: "n3", Alive: true}},
		retired: map[string]bool{"n3": true}, // listed again by a late heartbeat: it sheds
	}
	got := InputFromState(state, 3)
	require.Equal(t, Input{
		Partitions:       []Partition{{"a", 0, "n1", ""}, {"a", 1, "n1", "n2"}, {"b", 0, "n2", ""}},
		Members:          []Member{{ID: "n1", Alive: true}, {ID: "n2", Draining: true}, {ID: "n3", Alive: true, Draining: true}},
		MaxInFlightMoves: 3,
	}, got)
}

// The default bound is the one docs/architecture.md#the-planner names and
// passes Validate.
func TestMaxInFlightMovesDefault(t *testing.T) {
	require.Equal(t, 8, MaxInFlightMovesDefault)
	in := Input{MaxInFlightMoves: MaxInFlightMovesDefault}
	require.NoError(t, in.Validate())
	require.LessOrEqual(t, MaxInFlightMovesDefault, MaxInFlightMovesLimit)
}

// A plan lists its changes in (topic, index) order whatever order they
// were chosen in (here a/2, b/2, c/2, a/1, b/1, c/1).
func TestPlanSortsChanges(t *testing.T) {
	var partitions []Partition
	for _, topic := range []string{"c", "a", "b"} {
		partitions = append(partitions, roundRobin(topic, 3, "n1")...)
	}
	got, err := Plan(Input{Partitions: partitions, Members: receivers("n1", "n2", "n3"), MaxInFlightMoves: 8})
	require.NoError(t, err)
	require.Len(t, got.Changes, 6)
	keys := make([]string, 0, len(got.Changes))
	for _, change := range got.Changes {
		keys = append(keys, fmt.Sprintf("%s/%d", change.Topic, change.Index))
	}
	require.IsNonDecreasing(t, keys)
}

// Property: a move prefers a partition that stays apart from its
// destination: n1 drains to n2, which holds the parent's partition 1, so
// the child's partition 0 leaves first though index 1 would lead; with no
// such partition left, the move goes ahead anyway.
func TestPlanKeepsFanoutPartitionsApart(t *testing.T) {
	in := Input{
		Partitions: []Partition{{Topic: "c", Index: 0, Owner: "n1"}, {Topic: "c", Index: 1, Owner: "n1"},
			{Topic: "p", Index: 0, Owner: "n3"}, {Topic: "p", Index: 1, Owner: "n2"}},
		Members:          withMember(receivers("n1", "n2", "n3"), Member{ID: "n1", Alive: true, Draining: true}),
		MaxInFlightMoves: 1,
		Apart:            map[PartitionRef][]string{{"c", 0}: {"n3"}, {"c", 1}: {"n2"}, {"p", 0}: {"n1"}, {"p", 1}: {"n1"}},
	}
	result, err := Plan(in)
	require.NoError(t, err)
	require.Equal(t, []Change{{Topic: "c", Index: 0, From: "n1", To: "n2"}}, result.Changes, "c/1 would sit with p/1 on n2")
	in.Apart[PartitionRef{"c", 0}] = []string{"n2"}
	result, err = Plan(in)
	require.NoError(t, err)
	require.Equal(t, []Change{{Topic: "c", Index: 1, From: "n1", To: "n2"}}, result.Changes, "no partition can stay apart: the usual order")
}

// Property: a plan does not take a fan-out pair to one node in two of its
// moves: a node that joins takes the parent's partition 2 from n1, then
// from n2 the child's partition 1, not its partition 2, which would lead
// (upgrade audit: a joining node took a parent and its child whole).
func TestAPlanKeepsAPairApartAcrossItsMoves(t *testing.T) {
	in := Input{Members: receivers("n1", "n2", "n3"), MaxInFlightMoves: 8,
		Apart: map[PartitionRef][]string{}, Counterparts: map[PartitionRef][]PartitionRef{}}
	for index := range 3 {
		child, parent := PartitionRef{"c", index}, PartitionRef{"p", index}
		in.Partitions = append(in.Partitions, Partition{Topic: "c", Index: index, Owner: "n2"})
		in.Apart[child], in.Apart[parent] = []string{"n1"}, []string{"n2"}
		in.Counterparts[child], in.Counterparts[parent] = []PartitionRef{parent}, []PartitionRef{child}
	}
	for index := range 3 {
		in.Partitions = append(in.Partitions, Partition{Topic: "p", Index: index, Owner: "n1"})
	}
	apartBefore := fmt.Sprint(in.Apart)
	result, err := Plan(in)
	require.NoError(t, err)
	require.ElementsMatch(t, []Change{{Topic: "p", Index: 2, From: "n1", To: "n3"}, {Topic: "c", Index: 1, From: "n2", To: "n3"}},
		result.Changes, "c/2 would have joined p/2 on n3")
	require.Equal(t, apartBefore, fmt.Sprint(in.Apart), "the caller's input is left as it was")
}

// Property: the input lists the nodes of the other side of every fan-out
// pair of partitions.
func TestInputFromStateKeepsFanoutApart(t *testing.T) {
	state := fakeState{topics: []meta.TopicRecord{
		{Name: "c", Partitions: 2, Parent: "p", Assignments: []meta.Assignment{{Owner: "n2"}, {Owner: "n3", Target: "n1"}}},
		{Name: "p", Partitions: 3, Children: []meta.ChildLink{{Name: "c", Epoch: 1}},
			Assignments: []meta.Assignment{{Owner: "n1"}, {Owner: "n2"}, {Owner: "n3"}}},
	}}
	in := InputFromState(state, 1)
	require.Equal(t, map[PartitionRef][]string{
		{"c", 0}: {"n1"}, {"c", 1}: {"n2"}, {"p", 0}: {"n2"}, {"p", 1}: {"n1", "n3"},
	}, in.Apart)
	require.Equal(t, map[PartitionRef][]PartitionRef{
		{"c", 0}: {{"p", 0}}, {"c", 1}: {{"p", 1}}, {"p", 0}: {{"c", 0}}, {"p", 1}: {{"c", 1}},
	}, in.Counterparts)
}
