package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestABatchTakesPartsWithinItsBounds(t *testing.T) {
	var b Batch[string]
	require.True(t, b.Fits(3, 100, 4, 100))
	b.Add(3, 100, "first")
	require.False(t, b.Fits(2, 0, 4, 100), "over the record bound")
	require.False(t, b.Fits(1, 1, 4, 100), "over the byte bound")
	require.True(t, b.Fits(1, 0, 4, 100))
	b.Add(1, 0, "second")
	require.Equal(t, 4, b.Records())
}

func TestABatchAnswerIsSplitInBatchOrder(t *testing.T) {
	var b Batch[string]
	b.Add(2, 10, "first")
	b.Add(1, 10, "second")
	b.Add(3, 10, "third")
	shares, ok := b.Split(6)
	require.True(t, ok)
	require.Equal(t, []Share[string]{{From: 0, To: 2, Continuation: "first"}, {From: 2, To: 3, Continuation: "second"}, {From: 3, To: 6, Continuation: "third"}}, shares)
	_, ok = b.Split(5)
	require.False(t, ok, "an answer of another length cannot be split")
	require.Equal(t, []string{"first", "second", "third"}, b.Continuations())
}
