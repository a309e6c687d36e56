package movedest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var testMove = Move{Topic: "t", Partition: 3, Source: "a", Target: "b", StartedAtMs: 100}

var testConfig = Config{LagBytes: 10, CatchUpPassesMax: 4, StallTimeoutMs: 5_000, ForcePromoteAfterMs: 8_000, ProposalTimeoutMs: 5_000}

// alive and dead are the inputs' views at a time.
func alive(nowMs int64) Seen { return Seen{NowMs: nowMs} }
func dead(nowMs int64) Seen  { return Seen{NowMs: nowMs, SourceDead: true} }

func state(frozen bool, sizes ...int64) *SourceState {
	s := &SourceState{HWM: uint64(len(sizes)) * 10, Committed: 1, Frozen: frozen}
	for i, size := range sizes {
		s.Segments = append(s.Segments, Segment{Base: uint64(i) * 10, Size: size})
	}
	return s
}

// answerState answers the request in flight with a state.
func answerState(t *testing.T, s *Session, seen Seen, st *SourceState) Output {
	t.Helper()
	require.True(t, s.Busy())
	return s.Answered(seen, Answer{Request: s.pendingRequest, OK: true, State: st})
}

// answerRead answers the read in flight with written bytes.
func answerRead(t *testing.T, s *Session, seen Seen, written int64) Output {
	t.Helper()
	require.Equal(t, ActionRead, s.pending)
	return s.Answered(seen, Answer{Request: s.pendingRequest, OK: true, Written: written})
}

// copyAll answers reads until the session asks for something else.
func copyAll(t *testing.T, s *Session, seen Seen, out Output) Output {
	t.Helper()
	for out.Action.Kind == ActionRead {
		segment := s.state.Segments[0]
		for _, candidate := range s.state.Segments {
			if candidate.Base == out.Action.Base {
				segment = candidate
			}
		}
		require.Equal(t, s.Copied(segment.Base), out.Action.Position, "a read asks for the bytes right after those copied")
		out = answerRead(t, s, seen, segment.Size-out.Action.Position)
	}
	return out
}

// frozenCopy drives a session to Finalize's job with a source state of
// sizes, and returns the session and the finalize action.
func frozenCopy(t *testing.T, sizes ...int64) (*Session, Action) {
	t.Helper()
	s := New(testMove, testConfig, 0)
	require.Equal(t, ActionStatus, s.Tick(alive(1)).Action.Kind)
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, sizes...)))
	require.Equal(t, ActionStatus, out.Action.Kind, "a pass ends with a status request")
	out = answerState(t, s, alive(3), state(false, sizes...))
	require.Equal(t, ActionFreeze, out.Action.Kind)
	out = copyAll(t, s, alive(4), answerState(t, s, alive(4), state(true, sizes...)))
	require.Equal(t, ActionFinalize, out.Action.Kind)
	return s, out.Action
}

func TestASessionCopiesFreezesFinalizesAndFlips(t *testing.T) {
	s, finalize := frozenCopy(t, 40, 25)
	require.Equal(t, PhaseFinalize, s.Phase())
	require.Equal(t, uint64(20), finalize.HWM)
	require.Equal(t, int64(65), s.Progress().BytesCopied)
	require.Equal(t, Output{}, s.Tick(alive(5)), "a session waits for its job")

	out := s.JobDone(alive(6), finalize.Request, true)
	require.Equal(t, []Note{{Kind: NoteInstalled, HWM: 20}}, out.Notes)
	require.Equal(t, Action{Kind: ActionFlip}, out.Action)
	require.Equal(t, ActionNone, s.Tick(alive(6+FlipRetryMs-1)).Action.Kind, "the flip is not proposed again before FlipRetryMs")
	require.Equal(t, Action{Kind: ActionFlip}, s.Tick(alive(6+FlipRetryMs)).Action, "a flip that did not apply is proposed again")
}

func TestCatchUpHandsOffOnceTheLagIsSmall(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, 100)))
	out = answerState(t, s, alive(3), state(false, 105))
	require.Equal(t, []Note{{Kind: NoteCatchUpDone, LagBytes: 5, Passes: 1, Converged: true}}, out.Notes)
	require.Equal(t, PhaseHandoff, s.Phase())
	require.Equal(t, ActionFreeze, out.Action.Kind)
}

func TestCatchUpGivesUpWhenTheLagStopsShrinking(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, 100)))
	out = answerState(t, s, alive(3), state(false, 150)) // lag 50: the first pass's
	require.Equal(t, PhaseCatchUp, s.Phase())
	out = copyAll(t, s, alive(4), out)
	out = answerState(t, s, alive(5), state(false, 200)) // lag 50 again: not shrinking
	require.Equal(t, []Note{{Kind: NoteCatchUpDone, LagBytes: 50, Passes: 2, Converged: false}}, out.Notes)
	require.Equal(t, ActionFreeze, out.Action.Kind)
}

func TestCatchUpGivesUpAfterItsPasses(t *testing.T) {
	s := New(testMove, Config{LagBytes: 10, CatchUpPassesMax: 2, StallTimeoutMs: 5_000, ForcePromoteAfterMs: 8_000, ProposalTimeoutMs: 5_000}, 0)
	s.Tick(alive(1))
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, 100)))
	out = copyAll(t, s, alive(3), answerState(t, s, alive(3), state(false, 190))) // pass 1, lag 90 (the first state's lag was 100)
	require.Equal(t, PhaseCatchUp, s.Phase())
	out = answerState(t, s, alive(4), state(false, 250)) // pass 2, lag 60: shrinking, but the passes are used up
	require.Equal(t, PhaseHandoff, s.Phase())
	require.Equal(t, NoteCatchUpDone, out.Notes[0].Kind)
	require.False(t, out.Notes[0].Converged)
}

func TestAnAnswerToAnotherRequestIsIgnored(t *testing.T) {
	s := New(testMove, testConfig, 0)
	status := s.Tick(alive(1)).Action
	require.Equal(t, ActionStatus, status.Kind)
	stale := s.Answered(alive(2), Answer{Request: status.Request - 1, OK: true, State: state(true, 10)})
	require.Equal(t, Output{}, stale)
	require.True(t, s.Busy(), "the request in flight still waits")
	require.False(t, s.haveState, "the stale state was not taken")
	require.Equal(t, Output{}, s.JobDone(alive(2), status.Request, true), "a job outcome does not answer a request")
	require.Equal(t, ActionRead, s.Answered(alive(3), Answer{Request: status.Request, OK: true, State: state(false, 30)}).Action.Kind)
}

func TestAFreezeAnswerThatIsNotFrozenDoesNotHandOff(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	out := answerState(t, s, alive(2), state(false, 0))
	require.Equal(t, ActionFreeze, out.Action.Kind)
	out = answerState(t, s, alive(3), state(false, 0))
	require.Equal(t, Output{}, out, "a state that is not frozen is not final")
	require.Equal(t, PhaseHandoff, s.Phase())
	out = s.Answered(alive(4), Answer{Request: s.Tick(alive(4)).Action.Request, OK: false})
	require.Equal(t, PhaseHandoff, s.Phase(), "a refused freeze is asked again")
	require.Equal(t, ActionFreeze, s.Tick(alive(5)).Action.Kind)
}

func TestADeadSourceIsReplacedOnlyByACopyOfAFrozenState(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, 30)))
	require.Equal(t, ActionStatus, out.Action.Kind)
	s.Answered(dead(3), Answer{Request: out.Action.Request, OK: false})
	for _, at := range []int64{4, 2 + testConfig.ForcePromoteAfterMs - 1} {
		require.Equal(t, Output{}, s.Tick(dead(at)), "a state that was never frozen is never promoted")
	}
	out = s.Tick(dead(2 + testConfig.ForcePromoteAfterMs))
	require.Equal(t, sourceLost(testConfig.ForcePromoteAfterMs), out, "nor waited for: the move is aborted")
	require.False(t, s.Progress().Forced)
}

// sourceLost is the output of a session that gives a dead source up after
// silentForMs: the abort, never a promotion.
func sourceLost(silentForMs int64) Output {
	return Output{Notes: []Note{{Kind: NoteSourceLost, SilentForMs: silentForMs}}, Action: Action{Kind: ActionAbort}}
}

func TestAFailedInstallRestarts(t *testing.T) {
	s, finalize := frozenCopy(t, 40)
	require.Equal(t, Action{Kind: ActionRestart}, s.JobDone(alive(10), finalize.Request, false).Action)
}

func TestADeadSourceIsReplacedOnlyByACompleteCopy(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	read := answerState(t, s, alive(2), state(true, 30)).Action // frozen, as a restarted source answers; 30 bytes to read
	require.Equal(t, ActionRead, read.Kind)
	s.Answered(alive(3), Answer{Request: read.Request, OK: true, Written: 20})
	require.Equal(t, ActionRead, s.pending)
	s.Answered(dead(4), Answer{Request: s.pendingRequest, OK: false})
	require.Equal(t, Output{}, s.Tick(dead(3+testConfig.ForcePromoteAfterMs-1)), "the copy misses 10 bytes: no promotion")
	require.Equal(t, sourceLost(testConfig.ForcePromoteAfterMs), s.Tick(dead(3+testConfig.ForcePromoteAfterMs)), "the move is aborted instead")
	require.Equal(t, PhaseCatchUp, s.Phase())
	require.False(t, s.Progress().Forced)
}

func TestAFrozenSourceThatDiesInFinalizeIsWaitedFor(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	answerState(t, s, alive(2), state(false, 0)) // converged at once: freeze
	read := answerState(t, s, alive(3), state(true, 30)).Action
	require.Equal(t, PhaseFinalize, s.Phase())
	s.Answered(dead(4), Answer{Request: read.Request, OK: false})
	out := s.Tick(dead(3 + testConfig.ForcePromoteAfterMs - 1))
	require.Equal(t, Action{Kind: ActionRead, Request: out.Action.Request, Position: 0}, out.Action,
		"a frozen source's final tail is read from it: the copy is neither promoted nor aborted at once")
	s.Answered(dead(3+testConfig.ForcePromoteAfterMs-1), Answer{Request: out.Action.Request, OK: false})
	require.Equal(t, sourceLost(testConfig.ForcePromoteAfterMs), s.Tick(dead(3+testConfig.ForcePromoteAfterMs)),
		"a source dead for the promotion delay gets the move aborted: the tail may never come")
}

// TestAnAliveFrozenSourceInFinalizeIsNeverGivenUp: a stall with the final
// tail still to read, the source alive, is no reason to abort: the move is
// about to complete.
func TestAnAliveFrozenSourceInFinalizeIsNeverGivenUp(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	answerState(t, s, alive(2), state(false, 0))
	read := answerState(t, s, alive(3), state(true, 30)).Action
	s.Answered(alive(4), Answer{Request: read.Request, OK: false})
	out := s.Tick(alive(4 + 10*testConfig.StallTimeoutMs))
	require.Equal(t, ActionRead, out.Action.Kind)
	require.Empty(t, out.Notes)
}

// TestADeadSourceNeverReachedGetsTheMoveAbortedFromTheSessionStart: a
// session that began while its source was already dead (the destination
// restarted, say) counts the silence from its own start, and gives the
// source up after the longer of the promotion delay and the stall timeout;
// it proposes the abort again every proposal timeout until the move ends.
func TestADeadSourceNeverReachedGetsTheMoveAbortedFromTheSessionStart(t *testing.T) {
	const startMs = 50_000
	config := testConfig
	config.StallTimeoutMs = 2 * config.ForcePromoteAfterMs
	s := New(testMove, config, startMs)
	require.Equal(t, Output{}, s.Tick(dead(startMs+1)), "a dead source is not asked")
	require.Equal(t, Output{}, s.Tick(dead(startMs+config.StallTimeoutMs-1)), "the longer of the two delays")
	require.Equal(t, sourceLost(config.StallTimeoutMs), s.Tick(dead(startMs+config.StallTimeoutMs)))
	require.Equal(t, Output{}, s.Tick(dead(startMs+config.StallTimeoutMs+config.ProposalTimeoutMs-1)), "not again before the proposal timeout")
	require.Equal(t, sourceLost(config.StallTimeoutMs+config.ProposalTimeoutMs), s.Tick(dead(startMs+config.StallTimeoutMs+config.ProposalTimeoutMs)),
		"again: the first proposal may be lost")
}

func TestAFrozenCompleteCopyOfADeadSourceIsPromotedAfterTheDelay(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(true, 30))) // frozen status: a restarted source
	require.Equal(t, ActionStatus, out.Action.Kind)
	s.Answered(dead(3), Answer{Request: out.Action.Request, OK: false})
	require.Equal(t, Output{}, s.Tick(dead(2+testConfig.ForcePromoteAfterMs-1)), "the promotion waits ForcePromoteAfterMs from the last answer")
	out = s.Tick(dead(2 + testConfig.ForcePromoteAfterMs))
	require.Equal(t, []Note{{Kind: NoteForcePromote, SilentForMs: testConfig.ForcePromoteAfterMs, HWM: 10}}, out.Notes)
	require.Equal(t, ActionFinalize, out.Action.Kind)
	out = s.JobDone(dead(20_000), out.Action.Request, true)
	require.Equal(t, Action{Kind: ActionFlip, Forced: true}, out.Action)
}

// A stalled session proposes its abort, then goes on asking the source,
// and proposes the abort again once ProposalTimeoutMs passed without the
// move ending (the first proposal may have been lost), not before.
func TestAStalledSessionProposesItsAbortAgainUntilTheMoveEnds(t *testing.T) {
	s := New(testMove, testConfig, 0)
	status := s.Tick(alive(1)).Action
	s.Answered(alive(2), Answer{Request: status.Request, OK: false})
	require.Equal(t, ActionStatus, s.Tick(alive(testConfig.StallTimeoutMs-1)).Action.Kind)
	s.Answered(alive(testConfig.StallTimeoutMs-1), Answer{Request: s.pendingRequest, OK: false})
	stalled := Output{Notes: []Note{{Kind: NoteStalled}}, Action: Action{Kind: ActionAbort}}
	abortedAt := testConfig.StallTimeoutMs
	require.Equal(t, stalled, s.Tick(alive(abortedAt)))
	require.Equal(t, ActionStatus, s.Tick(alive(abortedAt+1)).Action.Kind, "the session goes on asking meanwhile")
	s.Answered(alive(abortedAt+1), Answer{Request: s.pendingRequest, OK: false})
	require.NotEqual(t, ActionAbort, s.Tick(alive(abortedAt+testConfig.ProposalTimeoutMs-1)).Action.Kind, "not again before the proposal timeout")
	s.Answered(alive(abortedAt+testConfig.ProposalTimeoutMs-1), Answer{Request: s.pendingRequest, OK: false})
	require.Equal(t, stalled, s.Tick(alive(abortedAt+testConfig.ProposalTimeoutMs)), "proposed again: the first may be lost")
}

func TestAReadOfBytesTheSourceLostRestartsTheCopy(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	read := answerState(t, s, alive(2), state(false, 30)).Action
	require.Equal(t, ActionRead, read.Kind)
	out := s.Answered(alive(3), Answer{Request: read.Request, Gone: true})
	require.Equal(t, Action{Kind: ActionRestart}, out.Action)
}

func TestAnEmptyReadIsAskedAgain(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	read := answerState(t, s, alive(2), state(false, 30)).Action
	require.Equal(t, Output{}, s.Answered(alive(3), Answer{Request: read.Request, OK: true}))
	again := s.Tick(alive(4)).Action
	require.Equal(t, ActionRead, again.Kind)
	require.Equal(t, read.Position, again.Position)
	require.Greater(t, again.Request, read.Request, "every request has a new number")
}

func TestThePlacementEndsASession(t *testing.T) {
	s, finalize := frozenCopy(t, 40)
	placement := Placement{Assigned: true, Owner: "a", Target: "b", StartedAtMs: 100}
	require.Equal(t, EndNone, s.Placement(placement))
	require.False(t, s.RollsBack(), "nothing installed before the job")
	for _, ended := range []Placement{{}, {Assigned: true, Owner: "a"}, {Assigned: true, Owner: "a", Target: "c", StartedAtMs: 100},
		{Assigned: true, Owner: "a", Target: "b", StartedAtMs: 101}, {Assigned: true, Owner: "c", Target: "b", StartedAtMs: 100}} {
		require.Equal(t, EndAborted, s.Placement(ended), "%+v is not this session's move", ended)
	}
	s.JobDone(alive(10), finalize.Request, true)
	require.True(t, s.RollsBack(), "an installed copy whose flip did not apply is rolled back")
	require.Equal(t, EndCompleted, s.Placement(Placement{Assigned: true, Owner: "b"}))
}

func TestTimeGoingBackIsABug(t *testing.T) {
	s := New(testMove, testConfig, 50)
	require.Panics(t, func() { s.Tick(alive(49)) })
}

// TestAJobOutcomeOfAnotherJobIsIgnored pins JobDone's request check. The
// node never reports another job's outcome to a session (at most one
// finalize job per session, and a restarted session is a new Session), so
// the simulator cannot show it; it is defence in depth (docs/necessity.md).
func TestAJobOutcomeOfAnotherJobIsIgnored(t *testing.T) {
	s, finalize := frozenCopy(t, 40)
	require.Equal(t, Output{}, s.JobDone(alive(5), finalize.Request+1, true), "a later number is not this job")
	require.Equal(t, Output{}, s.JobDone(alive(5), finalize.Request-1, false), "an earlier number is not this job")
	require.Equal(t, PhaseFinalize, s.Phase())
	require.True(t, s.Busy(), "the job in flight still waits")
	require.Equal(t, ActionFlip, s.JobDone(alive(6), finalize.Request, true).Action.Kind)
}

// TestAStateNeverAnsweredIsNotPromoted pins givesUp's reached check. A
// frozen state only arrives in an answer, which sets reached, so the
// check is implied by the Frozen one and no run can show it; it is
// defence in depth (docs/necessity.md). The test builds the state by
// hand.
func TestAStateNeverAnsweredIsNotPromoted(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.state, s.haveState = *state(true, 0), true
	out := s.Tick(dead(testConfig.ForcePromoteAfterMs + 1))
	require.NotEqual(t, ActionFinalize, out.Action.Kind, "a source never reached is not replaced")
	require.False(t, s.forced)
}

// TestTheFinalizeCarriesTheFinalStatesCorruption: the corruption the
// verification accepts is the one of the state the finalize records (the
// frozen one), not of an earlier pass, also for a forced promotion.
func TestTheFinalizeCarriesTheFinalStatesCorruption(t *testing.T) {
	s := New(testMove, testConfig, 0)
	s.Tick(alive(1))
	early := state(false, 40)
	early.Corruption = Corruption{Count: 1, Offsets: []uint64{3}}
	out := copyAll(t, s, alive(2), answerState(t, s, alive(2), early))
	out = answerState(t, s, alive(3), early)
	require.Equal(t, ActionFreeze, out.Action.Kind)
	final := state(true, 40)
	final.Corruption = Corruption{Count: 2, Offsets: []uint64{3, 5}}
	out = copyAll(t, s, alive(4), answerState(t, s, alive(4), final))
	require.Equal(t, ActionFinalize, out.Action.Kind)
	require.Equal(t, final.Corruption, out.Action.Corruption)

	forced := New(testMove, testConfig, 0)
	forced.Tick(alive(1))
	out = copyAll(t, forced, alive(2), answerState(t, forced, alive(2), final))
	forced.Answered(dead(3), Answer{Request: out.Action.Request, OK: false})
	out = forced.Tick(dead(2 + testConfig.ForcePromoteAfterMs))
	require.Equal(t, ActionFinalize, out.Action.Kind)
	require.Equal(t, final.Corruption, out.Action.Corruption, "a forced promotion accepts the frozen state's corruption")
}

// TestASessionPastItsRestartsOnlyProposesTheAbort: a session whose move
// was restarted RestartsMax times on its node asks the source for
// nothing; it proposes the abort at once, and again every
// ProposalTimeoutMs until the move ends. Below the bound it copies.
func TestASessionPastItsRestartsOnlyProposesTheAbort(t *testing.T) {
	config := testConfig
	config.RestartsMax = 3
	below := New(testMove, config, 0)
	below.Restarted(2)
	require.Equal(t, ActionStatus, below.Tick(alive(1)).Action.Kind, "below the bound it copies")

	s := New(testMove, config, 0)
	s.Restarted(3)
	out := s.Tick(alive(1))
	require.Equal(t, Output{Notes: []Note{{Kind: NoteRestartsExhausted, Restarts: 3}}, Action: Action{Kind: ActionAbort}}, out)
	require.False(t, s.Busy(), "nothing asked of the source")
	require.Equal(t, Output{}, s.Tick(alive(1+config.ProposalTimeoutMs-1)), "not again before the proposal timeout")
	again := s.Tick(alive(1 + config.ProposalTimeoutMs))
	require.Equal(t, ActionAbort, again.Action.Kind, "again after it")
	require.Empty(t, again.Notes, "the exhaustion is noted once")
	require.Equal(t, Output{}, s.Tick(dead(2+config.ProposalTimeoutMs)), "a dead source changes nothing")
}

// TestAStateHoldingLessThanTheCopyRestartsIt: a source that reports less
// of a segment than the copy holds, or no segment where the copy holds
// one, is not reporting the log that was copied; finalized, the copy's
// extra bytes would lie past the final high-watermark and its recovery
// would serve them. The copy starts over, in CatchUp and at the freeze. A
// copied segment below the source's first is one its retention removed
// since, and goes on.
func TestAStateHoldingLessThanTheCopyRestartsIt(t *testing.T) {
	restarted := Output{Notes: []Note{{Kind: NoteCopyAheadOfSource}}, Action: Action{Kind: ActionRestart}}
	copied := func() *Session {
		s := New(testMove, testConfig, 0)
		s.Tick(alive(1))
		out := copyAll(t, s, alive(2), answerState(t, s, alive(2), state(false, 30, 40)))
		require.Equal(t, ActionStatus, out.Action.Kind)
		return s
	}
	for name, st := range map[string]*SourceState{
		"a shorter segment":     state(false, 30, 20),
		"a segment missing":     {HWM: 5, Segments: []Segment{{Base: 0, Size: 30}}},
		"no segment at all":     {HWM: 0},
		"a new log at the base": {HWM: 0, Segments: []Segment{{Base: 0, Size: 0}}},
	} {
		s := copied()
		require.Equal(t, restarted, answerState(t, s, alive(3), st), name)
	}

	s := copied()
	out := answerState(t, s, alive(3), state(false, 30, 40))
	require.Equal(t, ActionFreeze, out.Action.Kind)
	require.Equal(t, restarted, answerState(t, s, alive(4), state(true, 30, 20)), "a frozen state too")

	s = copied()
	aged := &SourceState{HWM: 20, Segments: []Segment{{Base: 10, Size: 40}, {Base: 20, Size: 50}}}
	out = answerState(t, s, alive(3), aged)
	require.NotEqual(t, ActionRestart, out.Action.Kind, "segment 0 aged out at the source")
	require.Equal(t, ActionRead, out.Action.Kind, "the new segment is read")
}
