package route

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAJoinAnswersOnlyWhenEveryPartAnswered(t *testing.T) {
	j := NewJoin()
	j.Sent()
	j.Sent()
	j.Answered()
	require.False(t, j.Done(), "one part is still in flight")
	require.True(t, j.Reroute(true))
	j.Sent() // the re-placed part
	j.Answered()
	require.False(t, j.Done(), "the re-placed part is in flight")
	j.Answered()
	require.True(t, j.Done())
	require.NoError(t, j.Err())
	require.Panics(t, j.Answered, "an answer with no part in flight is a bug")
}

func TestAFailedPartIsReplacedAtMostReroutesMaxTimes(t *testing.T) {
	j := NewJoin()
	for range ReroutesMax {
		require.True(t, j.Reroute(true))
	}
	require.False(t, j.Reroute(true), "the re-placements are used up")
}

func TestOnlyARetryableFailureBeforeAFinalOneIsReplaced(t *testing.T) {
	j := NewJoin()
	require.False(t, j.Reroute(false))
	first, second := errors.New("first"), errors.New("second")
	j.Fail(first)
	j.Fail(second)
	require.Equal(t, first, j.Err(), "the first final failure is the answer")
	require.False(t, j.Reroute(true), "nothing is re-placed once the request failed")
}

func TestReplacedRecordsAvoidWhatFailed(t *testing.T) {
	j := NewJoin()
	j.Exclude("b", true, []int{1, 4})
	require.False(t, j.OwnerExcluded("b"), "an owner that answered keeps its other partitions")
	require.True(t, j.PartitionExcluded(1))
	require.True(t, j.PartitionExcluded(4))
	require.False(t, j.PartitionExcluded(2))
	j.Exclude("c", false, []int{2})
	require.True(t, j.OwnerExcluded("c"), "an owner that did not answer is avoided")
	require.False(t, j.PartitionExcluded(2))
}

func TestByOwnerGroupsInOwnerOrderKeepingTheRecordOrder(t *testing.T) {
	owners := []string{"c", "a", "c", "b", "a"}
	parts := ByOwner([]int{4, 0, 1, 2, 3}, func(i int) string { return owners[i] })
	require.Equal(t, []Part{{Owner: "a", Indexes: []int{4, 1}}, {Owner: "b", Indexes: []int{3}}, {Owner: "c", Indexes: []int{0, 2}}}, parts)
	require.Empty(t, ByOwner(nil, func(int) string { return "x" }))
}

// TestRingNext: the preferred partition when usable, else the next usable
// one in ring order, else none.
func TestRingNext(t *testing.T) {
	usable := func(allowed ...int) func(int) bool {
		return func(index int) bool { return slices.Contains(allowed, index) }
	}
	index, ok := RingNext(2, 6, usable(0, 2, 4))
	require.True(t, ok)
	require.Equal(t, 2, index)
	index, ok = RingNext(5, 6, usable(1, 3))
	require.True(t, ok)
	require.Equal(t, 1, index, "wraps around")
	_, ok = RingNext(0, 6, usable())
	require.False(t, ok)
}
