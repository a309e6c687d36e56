package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Property: a panic inside a run (an assert of the core) is that run's
// failure, checker "panic", with the panic's value and where it came
// from; the caller gets a report (a sweep goes on with its next seed).
func TestPanicIsTheRunsFailure(t *testing.T) {
	w := NewWorld(DefaultOptions(1))
	w.recoverPanic(func() { panicDeepInTheCore(3) })
	require.NotNil(t, w.failure, "the panic became the run's failure")
	require.Equal(t, "panic", w.failure.Checker)
	require.Contains(t, w.failure.Detail, "invariant broken: on purpose")
	require.Contains(t, w.failure.Detail, "panicDeepInTheCore", "the report says where the panic came from")
	require.LessOrEqual(t, strings.Count(w.failure.Detail, "\n"), 2*panicStackFramesMax, "the stack is bounded")
	report := w.report()
	require.Equal(t, w.failure, report.Failure)
	require.Contains(t, report.FailureText(), "reproduce: go test ./sim -run 'TestSim$' -seed=1")

	w.recoverPanic(func() { panic("a second panic") })
	require.Contains(t, w.failure.Detail, "on purpose", "the first failure stands")
}

func panicDeepInTheCore(depth int) {
	if depth == 0 {
		panic("invariant broken: on purpose")
	}
	panicDeepInTheCore(depth - 1)
}
