package meta

import (
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
)

// Property: a leader's read request is confirmed once a quorum answered
// its heartbeat, with the caller's tag and the commit index the leader
// had when it asked (every entry committed before the request is at or
// below it); a follower may not ask.
func TestAReadIsConfirmedByAQuorumAtTheCommitIndex(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 21)
	c := newTestCluster(t, 3, 21, true, nil)
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	follower := otherThan(c.ids, leader)[0]
	require.ErrorIs(t, c.meta(follower).RequestRead(1), ErrNotLeader, "only the leader asks")

	commit := c.meta(leader).Status().Commit
	require.NoError(t, c.meta(leader).RequestRead(7))
	require.Equal(t, 1, c.meta(leader).ReadsOutstanding())
	c.stabilize()
	require.Equal(t, []ReadConfirmed{{Tag: 7, Index: commit}}, c.reads[leader], "confirmed with the tag, at the commit index")
	require.Zero(t, c.meta(leader).ReadsOutstanding(), "a confirmed read is outstanding no more")
	require.Empty(t, c.reads[follower])
}

// Property: a sole voter's read is confirmed at once (it is its own
// quorum), in the next Ready.
func TestASoleVotersReadIsConfirmedAtOnce(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 22)
	c := newTestCluster(t, 1, 22, true, nil)
	leader := c.waitLeader()
	require.NoError(t, c.meta(leader).RequestRead(3))
	require.True(t, c.meta(leader).HasReady(), "the confirmation is a Ready")
	c.processReady()
	require.Equal(t, []ReadConfirmed{{Tag: 3, Index: c.meta(leader).Status().Commit}}, c.reads[leader])
}

// Property: a leader cut off from the quorum (it still believes it
// leads) gets no confirmation, and keeps at most ReadRequestsMax reads
// outstanding (ErrReadsFull past it); once it stepped down they are
// outstanding no more, and a new leader elected meanwhile confirms its
// own.
func TestACutOffLeadersReadsAreNeverConfirmed(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 23)
	c := newTestCluster(t, 3, 23, true, nil)
	old := c.waitLeader()
	c.heartbeatAll(old, 10)
	others := otherThan(c.ids, old)
	c.isolate([]string{old}, others)
	for tag := range uint64(ReadRequestsMax) {
		require.NoError(t, c.meta(old).RequestRead(tag+1))
	}
	require.ErrorIs(t, c.meta(old).RequestRead(ReadRequestsMax+1), ErrReadsFull, "past the bound")
	c.stabilize()
	require.Empty(t, c.reads[old], "no quorum answered")
	require.True(t, c.meta(old).IsLeader(), "sanity: it still believes it leads")
	require.Equal(t, ReadRequestsMax, c.meta(old).ReadsOutstanding())

	next := c.waitLeader(others...)
	c.tick(3 * defaultElectionTicks)
	require.False(t, c.meta(old).IsLeader(), "sanity: CheckQuorum stepped it down")
	require.Zero(t, c.meta(old).ReadsOutstanding(), "the reads of a leadership that ended are forgotten")
	require.ErrorIs(t, c.meta(old).RequestRead(1), ErrNoLeader, "cut off, it knows no leader")
	require.Empty(t, c.reads[old], "none was confirmed")

	require.NoError(t, c.meta(next).RequestRead(9))
	c.stabilize()
	require.Len(t, c.reads[next], 1, "the new leader's read is confirmed by the two it reaches")
	require.Equal(t, uint64(9), c.reads[next][0].Tag)
}
