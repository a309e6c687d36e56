package movesource

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

func TestAFreezeHoldsOnlyForItsMove(t *testing.T) {
	var f Freeze
	require.False(t, f.Frozen())
	require.False(t, f.For("", 0), "a partition that is not frozen is frozen for no move")
	require.True(t, f.Begin("b", 100, 10))
	require.True(t, f.Frozen())
	require.True(t, f.For("b", 100))
	require.False(t, f.For("b", 101), "a later move to the same target is another move")
	require.False(t, f.For("c", 100))
	require.False(t, f.Begin("b", 100, 20), "asked again for the same move: not a new freeze")
	require.True(t, f.Begin("c", 200, 30), "a freeze for another move replaces it")
	require.Equal(t, "c", f.Target())
	require.Equal(t, int64(200), f.MoveStartedAtMs())
}

func TestAFreezeEndsWhenTheAppliedMoveIsAnother(t *testing.T) {
	var f Freeze
	require.False(t, f.Outdated("", 0), "nothing to end")
	f.Begin("b", 100, 10)
	require.False(t, f.Outdated("b", 100))
	require.True(t, f.Outdated("", 0), "the move completed or was aborted")
	require.True(t, f.Outdated("b", 101), "re-targeted to the same node by a later move")
	require.Equal(t, int64(40), f.End(50), "it held from 10 to 50")
	require.False(t, f.Frozen())
	require.Panics(t, func() { f.End(60) }, "a freeze ends once")
}

func TestAnExpiredFreezeAsksForTheAbortOncePerRetryInterval(t *testing.T) {
	var f Freeze
	require.False(t, f.Expire(1_000, 10, 100), "no freeze, no abort")
	f.Begin("b", 100, 10)
	require.False(t, f.Expire(19, 10, 100))
	require.True(t, f.Expire(20, 10, 100))
	require.False(t, f.Expire(30, 10, 100), "asked for once per retry interval")
	require.False(t, f.Expire(119, 10, 100))
	require.True(t, f.Expire(120, 10, 100), "asked again while the freeze holds: the first ask may have been lost")
	f.Begin("c", 200, 140)
	require.True(t, f.Expire(150, 10, 100), "a new freeze asks at its own TTL")
	f.End(160)
	f.Begin("c", 200, 170)
	require.False(t, f.Expire(179, 10, 100), "a freeze begun again counts from its new start")
}

// An abort refused at once (no leader to propose to) is asked again
// soonMs later, not a whole retry interval later; one that was proposed
// waits the interval.
func TestARefusedAbortIsAskedAgainSoon(t *testing.T) {
	var f Freeze
	f.Begin("b", 100, 10)
	require.True(t, f.Expire(20, 10, 100))
	f.AbortRefused(20, 5, 100)
	require.False(t, f.Expire(24, 10, 100))
	require.True(t, f.Expire(25, 10, 100), "asked again soon after the refusal")
	require.False(t, f.Expire(30, 10, 100), "proposed this time: the retry interval again")
	require.True(t, f.Expire(125, 10, 100))
	f.AbortRefused(125, 500, 100)
	require.True(t, f.Expire(225, 10, 100), "a refusal never puts the next ask past the retry interval")
}

func TestWaitingFreezeRequestsAreTakenInOrderOnce(t *testing.T) {
	var f Freeze
	f.Begin("b", 100, 10)
	require.False(t, f.Waiting())
	f.Wait(msg.RequestID(7))
	f.Wait(msg.RequestID(3))
	require.True(t, f.Waiting())
	require.Equal(t, []msg.RequestID{7, 3}, f.TakeWaiting())
	require.False(t, f.Waiting())
	require.Empty(t, f.TakeWaiting())
}
