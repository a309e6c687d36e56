package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForwardIdsStartAboveTheBaseAndOnlyIncrease(t *testing.T) {
	f := NewForwards[string](0)
	f.Renumber(1 << 40)
	first := f.Start("b", 100, "first")
	second := f.Start("c", 100, "second")
	require.Equal(t, uint64(1<<40+1), first)
	require.Equal(t, first+1, second)
	require.Equal(t, second, f.LastID())
	require.Panics(t, func() { f.Renumber(5) }, "ids never go back")
}

func TestAReplyIsTakenOnceAndOnlyFromThePeerAsked(t *testing.T) {
	f := NewForwards[string](10)
	id := f.Start("b", 100, "done")
	_, ok := f.Answered("c", id)
	require.False(t, ok, "a reply from another peer is dropped")
	_, ok = f.Answered("b", id+1)
	require.False(t, ok, "a reply with an unknown id is dropped")
	_, ok = f.Answered("b", 3)
	require.False(t, ok, "a reply to a forward of an earlier incarnation is dropped")
	continuation, ok := f.Answered("b", id)
	require.True(t, ok)
	require.Equal(t, "done", continuation)
	_, ok = f.Answered("b", id)
	require.False(t, ok, "a second reply to the same forward is dropped")
	require.Empty(t, f.Pending())
}

func TestAForwardTimesOutAtItsDeadlineAndMarksItsPeerDown(t *testing.T) {
	f := NewForwards[string](0)
	late := f.Start("b", 200, "late")
	early := f.Start("c", 100, "early")
	other := f.Start("b", 150, "other")
	next, ok := f.NextDeadline()
	require.True(t, ok)
	require.Equal(t, int64(100), next)
	require.Empty(t, f.Due(99))
	require.Equal(t, []uint64{early}, f.Due(100))
	require.Equal(t, []uint64{late, early, other}, f.Due(200), "due forwards come in id order")

	forward := f.TimeOut(early, 100, 50)
	require.Equal(t, Forward[string]{To: "c", DeadlineMs: 100, Continuation: "early"}, forward)
	require.False(t, f.Reachable("c", 149), "a peer that let a forward time out is avoided")
	require.True(t, f.Reachable("c", 150))
	require.True(t, f.Reachable("b", 100))
	require.Panics(t, func() { f.TimeOut(early, 100, 50) }, "a forward times out once")
	require.Panics(t, func() { f.TimeOut(late, 100, 50) }, "a forward that is not due does not time out")
	_, ok = f.Answered("c", early)
	require.False(t, ok, "a reply after the timeout is dropped")
}

func TestAnUnreachablePeerFailsItsForwardsNow(t *testing.T) {
	f := NewForwards[string](0)
	f.Start("b", 100, "b1")
	kept := f.Start("c", 100, "c1")
	f.Start("b", 90, "b2")
	lost := f.Unreachable("b", 10, 50)
	require.Equal(t, []string{"b1", "b2"}, []string{lost[0].Continuation, lost[1].Continuation}, "in id order")
	require.Len(t, lost, 2)
	require.Equal(t, []uint64{kept}, f.Pending())
	require.False(t, f.Reachable("b", 59))
	f.Heard("b")
	require.True(t, f.Reachable("b", 11), "any message from the peer clears its mark")
}

func TestAnAnswerClearsThePeersDownMark(t *testing.T) {
	f := NewForwards[string](0)
	id := f.Start("b", 100, "x")
	f.Unreachable("c", 0, 1_000)
	f.Unreachable("b", 0, 1_000) // removes id
	id2 := f.Start("b", 200, "y")
	require.NotEqual(t, id, id2)
	_, ok := f.Answered("b", id2)
	require.True(t, ok)
	require.True(t, f.Reachable("b", 1), "a reply clears the mark")
	require.False(t, f.Reachable("c", 1))
	_, ok = f.NextDeadline()
	require.False(t, ok, "nothing outstanding")
}
