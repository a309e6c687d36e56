package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// A decommissioned node leaves the member list once its decommission is
// complete and it is dead, and stays out of it: while it keeps running
// (its heartbeats are dropped), and after it starts again on its data.
func TestADecommissionedNodeIsForgottenOnceDeadAndStaysForgotten(t *testing.T) {
	c := newClusterHarness(t, 4) // four voters: a removal leaves three
	leader := c.elect()
	leaving := c.except(leader)[0]
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool { return c.nodes[leader].meta.State().Retired(leaving) })
	_, listed := c.nodes[leader].meta.State().Member(leaving)
	require.True(t, listed, "a member is not forgotten before it is marked dead")

	c.tickUntil(100, 100, func() bool {
		_, listed := c.nodes[leader].meta.State().Member(leaving)
		return !listed
	})
	c.tick(5_000) // the retired node still runs, past a heartbeat interval and a dead check
	c.crash(leaving)
	c.tick(5_000) // and starts again on its data
	for _, id := range c.except(leaving) {
		_, listed := c.nodes[id].meta.State().Member(leaving)
		require.False(t, listed, "%s lists the retired member %s again", id, leaving)
	}
	require.Error(t, c.nodes[leaving].Serving(), "a retired node is not ready")
	now, ok := c.leader()
	require.True(t, ok)
	require.NoError(t, c.do(now, msg.CreateTopic{Name: "after", Partitions: 3}).Err, "the metastore commits without it")
	require.Len(t, c.nodes[now].listMembers().Members, 3)
	for _, id := range c.except(leaving) {
		_, kept := c.nodes[id].cluster.heardMs[leaving]
		require.False(t, kept, "%s keeps when it last heard from the forgotten %s", id, leaving)
	}
}

// The leader drops the heartbeat of a member that left the voters, so a
// retired node (one whose replica never learned of its removal, or an
// old release's) never becomes a member again, while a node never seen
// becomes one by its first heartbeat.
func TestTheLeaderDropsTheHeartbeatOfARetiredNode(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader, leaving := forgetAfterDecommission(t, c)
	n := c.nodes[leader]
	beat := msg.Heartbeat{HTTPAddr: "127.0.0.9:7942", ClusterAddr: "127.0.0.9:7943", NowMs: c.nowMs, Incarnation: 99}
	n.stepHeartbeat(leaving, beat)
	n.stepHeartbeat("n9", beat)
	c.tick(100)
	_, listed := n.meta.State().Member(leaving)
	require.False(t, listed, "a retired node's heartbeat made it a member again")
	_, listed = n.meta.State().Member("n9")
	require.True(t, listed, "a new node's heartbeat makes it a member")
}

// A decommission retried after the member was forgotten (its first answer
// lost) is answered as done, and a cancel as too late, as before the
// member was forgotten; an id never seen is not found.
func TestADecommissionOfAForgottenMemberAnswersAsComplete(t *testing.T) {
	c := newClusterHarness(t, 4)
	_, leaving := forgetAfterDecommission(t, c)
	asker := c.except(leaving)[1]
	require.NoError(t, c.do(asker, msg.Decommission{ID: leaving}).Err, "a retried decommission")
	cancel := c.do(asker, msg.Decommission{ID: leaving, Cancel: true})
	require.Error(t, cancel.Err)
	require.Equal(t, msg.CodeConflict, cancel.Err.(*msg.Error).Code, "%v", cancel.Err)
	unknown := c.do(asker, msg.Decommission{ID: "n9"})
	require.Error(t, unknown.Err)
	require.Equal(t, msg.CodeNotFound, unknown.Err.(*msg.Error).Code, "%v", unknown.Err)
}

// forgetAfterDecommission decommissions a follower of a four-node cluster
// and ticks until the leader forgot it; it returns the leader and the id.
func forgetAfterDecommission(t *testing.T, c *clusterHarness) (leader, leaving string) {
	leader = c.elect()
	leaving = c.except(leader)[0]
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 400, func() bool {
		_, listed := c.nodes[leader].meta.State().Member(leaving)
		return !listed
	})
	return leader, leaving
}

// A heartbeat proposed before the retirement that applies after the
// member was forgotten (held back, or forwarded late by a deposed leader)
// lists it again, alive and not draining. It takes no partition, is
// marked draining again, and goes once dead.
func TestARetiredMemberListedAgainTakesNoPartitionAndGoesAgain(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader, leaving := forgetAfterDecommission(t, c)
	n := c.nodes[leader]
	late := meta.MemberHeartbeat{ID: leaving, HTTPAddr: c.configs[leaving].AdvertiseAddr, ClusterAddr: c.configs[leaving].ClusterAddr,
		NowMs: c.nowMs, Incarnation: 99}
	require.True(t, n.proposeNow(0, proposalHeartbeat, "", meta.MemberHeartbeats{Beats: []meta.MemberHeartbeat{late}}))
	c.settle()
	m, listed := n.meta.State().Member(leaving)
	require.True(t, listed && m.Alive && !m.Draining, "listed again, alive and not draining: %+v", m)

	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "fresh", Partitions: 8}).Err)
	require.NotContains(t, c.owners(leader, "fresh"), leaving, "a retired member takes no partition")
	c.tickUntil(100, 100, func() bool {
		m, listed := n.meta.State().Member(leaving)
		return listed && m.Draining
	})
	c.tickUntil(100, 100, func() bool {
		_, listed := n.meta.State().Member(leaving)
		return !listed
	})
}

// A decommission or its cancel whose SetDraining applies after the member
// was forgotten (proposed through a lagging replica, or racing the
// removal) is answered as complete, as one checked after it is.
func TestADecommissionAppliedAfterTheForgetAnswersAsComplete(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader, leaving := forgetAfterDecommission(t, c)
	n := c.nodes[leader]
	notFound := fmt.Errorf("%w: member %q", meta.ErrMemberNotFound, leaving)
	_, err := n.proposalResult(&pendingProposal{kind: proposalDecommission, topic: leaving}, notFound)
	require.Nil(t, err, "a decommission: done")
	_, err = n.proposalResult(&pendingProposal{kind: proposalCancelDecommission, topic: leaving}, notFound)
	require.Equal(t, msg.CodeConflict, codeOf(t, err), "a cancel: too late")
	_, err = n.proposalResult(&pendingProposal{kind: proposalDecommission, topic: "n9"}, fmt.Errorf("%w: n9", meta.ErrMemberNotFound))
	require.Equal(t, msg.CodeNotFound, codeOf(t, err), "an id never seen")
}

func codeOf(t *testing.T, err error) msg.Code {
	var failure *msg.Error
	require.ErrorAs(t, err, &failure)
	return failure.Code
}

// A retired node left running is named in a heartbeat-dropped event once
// per retiredBeatWarnEveryMs, not at each of its beats; the note of it
// goes once it stops beating.
func TestARetiredNodesHeartbeatIsWarnedOfOncePerPeriod(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader, leaving := forgetAfterDecommission(t, c)
	n := c.nodes[leader]
	recorder := &detailRecorder{}
	n.observer = recorder
	beat := func() {
		n.stepHeartbeat(leaving, msg.Heartbeat{HTTPAddr: "127.0.0.9:7942", ClusterAddr: "127.0.0.9:7943", NowMs: c.nowMs, Incarnation: 99})
	}
	dropped := func() int {
		count := 0
		for _, event := range recorder.events {
			if strings.HasPrefix(event, "heartbeat-dropped: "+leaving+": its decommission is complete") {
				count++
			}
		}
		return count
	}
	interval := c.configs[leader].MemberHeartbeatIntervalMs
	for range retiredBeatWarnEveryMs / interval {
		beat()
		c.tick(interval)
	}
	require.Equal(t, 1, dropped(), "one warning for a period of beats: %v", recorder.events)
	beat()
	require.Equal(t, 2, dropped(), "a beat a period after the warning warns again")
	c.tick(retiredBeatWarnEveryMs)
	require.NotContains(t, n.cluster.heartbeats.retiredWarned, leaving, "the note goes once the node stopped beating")
	_, listed := n.meta.State().Member(leaving)
	require.False(t, listed, "a retired node's heartbeat made it a member again")
}

// A decommissioned node left running kept asking the metastore leader
// about the partitions it had moved away (the stale-copy sweep), at every
// sweep pass, for good: the leader, which forgets a retired member, sent
// no answer it could receive, and each ask timed out (11
// forward-timed-out errors every 10 s in a three-node cluster). A node
// that knows it is retired sweeps nothing: its data directory holds
// nothing the cluster needs, and the operator throws it away.
func TestARetiredNodeAsksNothingMoreAboutItsOldCopies(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.electWithTopic("t", 8)
	leaving := c.except(leader)[0]
	require.Positive(t, c.partitionsOwned(leader, "t")[leaving], "the leaving node owns partitions to move away")
	asked := 0
	c.drop = func(env msg.Envelope) bool { // no verdict reaches it: its copies stay candidates
		forward, isForward := env.Message.(msg.ForwardRequest)
		if !isForward || env.From != leaving {
			return false
		}
		if _, sweep := forward.Request.(msg.MoveSweepCheck); sweep {
			asked++
			return true
		}
		return false
	}
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 600, func() bool { return c.nodes[leaving].knowsRetired() })
	c.tick(100) // its Tick notes the retirement
	require.NotEmpty(t, c.nodes[leaving].sweeper.candidates, "its old copies are still candidates")
	asked = 0
	for range 600 { // a minute: six sweep passes
		c.tick(100)
	}
	require.Zero(t, asked, "a retired node asked the leader about its old copies")
}

// A retired member stays listed, and its address known to every replica,
// through the grace in which it still forwards its clients' requests
// (cluster.dead_after_ms after it learned of its removal), even when it
// is marked dead sooner (its last heartbeat applied before the removal).
// Forgotten sooner, a node that joined after it could not reply to its
// forwards, and it placed the records again: two copies behind one 202
// (audit of a decommission under load: forgotten 0.7 s before its grace
// ended).
func TestARetiredMemberIsNotForgottenWithinItsForwardingGrace(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.elect()
	leaving := c.except(leader)[0]
	c.tick(400) // a heartbeat of every member applied
	// Its last heartbeat is the one applied now, before its removal.
	c.drop = func(env msg.Envelope) bool {
		_, beat := env.Message.(msg.Heartbeat)
		return beat && env.From == leaving
	}
	require.NoError(t, c.do(leader, msg.Decommission{ID: leaving}).Err)
	c.tickUntil(100, 300, func() bool { return c.nodes[leaving].retirement.sinceMs != 0 })
	retiredAtMs := c.nowMs // when the retired node learned of its removal: its grace starts
	c.cut[leaving] = true  // stopped
	var deadAtMs int64
	c.tickUntil(100, 200, func() bool {
		m, listed := c.nodes[leader].meta.State().Member(leaving)
		if listed && !m.Alive && deadAtMs == 0 {
			deadAtMs = c.nowMs
		}
		return !listed
	})
	graceEndsMs := retiredAtMs + c.configs[leaving].MemberDeadAfterMs
	require.NotZero(t, deadAtMs)
	require.Less(t, deadAtMs, graceEndsMs, "marked dead within the grace: the case this is about")
	require.GreaterOrEqual(t, c.nowMs, graceEndsMs, "forgotten at %d ms, within the grace that ends at %d ms", c.nowMs, graceEndsMs)
}
