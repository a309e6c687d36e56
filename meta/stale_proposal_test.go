package meta

import (
	"slices"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// Property: a command applies only in the term it was proposed in. A
// follower's proposal forwarded to a leader that then loses its
// leadership, and handed on to the next leader afterwards, is refused on
// every replica (ErrStaleProposal) and changes nothing; the proposer
// learns it never applies as soon as it applies the next leader's first
// entry (AppliedTerm past the proposal's term), before the forward lands.
// The same forward written by an earlier release (command version 1)
// applies as it did.
func TestAProposalForwardedAcrossALeaderChangeIsRefused(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 11)
	c := newTestCluster(t, 3, 11, true, nil)
	oldLeader := c.waitLeader()
	c.heartbeatAll(oldLeader, 10)
	c.stabilize()
	proposer := otherThan(c.ids, oldLeader)[0]

	proposal, err := c.meta(proposer).Propose(createTopic("late", "n1"))
	require.NoError(t, err)
	c.processReady()
	forward := c.takeInflight(proposer, oldLeader, raftpb.MsgProp)

	c.isolate([]string{oldLeader}, otherThan(c.ids, oldLeader))
	newLeader := c.waitLeader(otherThan(c.ids, oldLeader)...)
	c.stabilize()
	require.Greater(t, c.meta(proposer).AppliedTerm(), proposal.Term, "the proposer applied the new leader's first entry")
	_, found := c.outcome(proposal)
	require.False(t, found, "the held proposal cannot have applied yet")

	c.deliverOne(readdressed(t, c, forward, newLeader))
	c.stabilize()
	c.requireApplied(proposal, ErrStaleProposal)
	for _, id := range otherThan(c.ids, oldLeader) {
		_, exists := c.meta(id).State().Topic("late")
		require.False(t, exists, "a stale proposal created the topic on %s", id)
	}

	c.heal()
	c.tick(20)
	old := readdressed(t, c, forward, newLeader)
	old.data = versionOne(t, old.data)
	c.deliverOne(old)
	c.stabilize()
	c.requireConverged()
	for _, id := range c.ids {
		_, exists := c.meta(id).State().Topic("late")
		require.True(t, exists, "a version 1 command applies whatever its term, on %s", id)
	}
}

// takeInflight removes the one queued message of a kind on a link.
func (c *testCluster) takeInflight(from, to string, kind raftpb.MessageType) inflightMessage {
	index := slices.IndexFunc(c.inflight, func(m inflightMessage) bool { return m.from == from && m.to == to && m.kind == kind })
	require.GreaterOrEqual(c.t, index, 0, "no %v from %s to %s queued", kind, from, to)
	taken := c.inflight[index]
	c.inflight = slices.Delete(c.inflight, index, index+1)
	return taken
}

// readdressed is a copy of a queued message sent to another node, as a
// node that lost its leadership hands a proposal on to the next leader.
func readdressed(t *testing.T, c *testCluster, message inflightMessage, to string) inflightMessage {
	decoded, err := UnmarshalMessage(message.data)
	require.NoError(t, err)
	raftID := c.nodes[to].peer.RaftID
	decoded.To = &raftID
	data, err := MarshalMessage(decoded)
	require.NoError(t, err)
	return inflightMessage{from: message.from, to: to, kind: message.kind, toRaftID: raftID, data: data}
}

// versionOne rewrites the commands a MsgProp carries as version 1.
func versionOne(t *testing.T, data []byte) []byte {
	decoded, err := UnmarshalMessage(data)
	require.NoError(t, err)
	for _, entry := range decoded.GetEntries() {
		command := slices.Clone(entry.GetData())
		require.Equal(t, byte(commandVersion2), command[1])
		command[1] = commandVersion1
		entry.Data = command
	}
	encoded, err := MarshalMessage(decoded)
	require.NoError(t, err)
	return encoded
}
