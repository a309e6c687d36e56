package movedest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

func TestAConvergedCopyRunsOneMorePassUnderItsFaultSite(t *testing.T) {
	chaos.Force(chaos.SiteMoveDestCatchUpPassRepeated)
	defer chaos.Reset()
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, 100)))
	out = answerState(t, s, alive(3), state(false, 100))
	require.Empty(t, out.Notes, "converged, but the site asks for another pass")
	require.Equal(t, PhaseCatchUp, s.Phase())
	require.Equal(t, ActionStatus, out.Action.Kind)
	out = answerState(t, s, alive(4), state(false, 100))
	require.Equal(t, []Note{{Kind: NoteCatchUpDone, LagBytes: 0, Passes: 2, Converged: true}}, out.Notes,
		"a lag that stopped shrinking still hands off")
	require.Equal(t, ActionFreeze, out.Action.Kind)
}

func TestAFlipIsProposedAgainAtOnceUnderItsFaultSite(t *testing.T) {
	s, finalize := frozenCopy(t, 40)
	require.Equal(t, ActionFlip, s.JobDone(alive(6), finalize.Request, true).Action.Kind)
	chaos.Force(chaos.SiteMoveDestFlipRepeated)
	defer chaos.Reset()
	require.Equal(t, Action{Kind: ActionFlip}, s.Tick(alive(7)).Action, "two flips of one move in flight")
}
