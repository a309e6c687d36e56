package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Property: a long poll pinned to a partition of another node, whose
// client leaves, is cancelled at the owner too: the owner's parked polls
// and its table of forwarded polls go back to empty, the origin forgets
// the forward, and a record produced afterwards goes to the next poll,
// not to the one that left. (Before, the owner kept such a poll parked
// for its whole wait: a client opening and closing connections filled the
// owner's parked polls from one connection.)
func TestALeavingClientsForwardedPollIsCancelledAtTheOwner(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owner := c.owners(leader, "t")[0]
	origin := c.otherThan(owner)
	poll := c.send(origin, msg.Consume{Topic: "t", Partition: 0, WaitMs: 8_000})
	c.settle()
	require.NotContains(t, c.replies, poll, "the poll waits")
	require.Equal(t, 1, c.nodes[owner].Stats().ParkedPolls, "parked at the owner")
	require.Len(t, c.nodes[owner].routing.parkable, 1)

	c.nodes[origin].Cancel(poll)
	c.settle()
	require.Zero(t, c.nodes[owner].Stats().ParkedPolls, "the owner let the poll go")
	require.Empty(t, c.nodes[owner].routing.parkable)
	require.True(t, c.nodes[owner].routing.served.Empty(), "the owner answered the forward")
	require.Empty(t, c.nodes[origin].routing.passedConsumes, "the origin forgot the forward")
	require.NotContains(t, c.replies, poll, "a cancelled poll gets no reply")

	require.NoError(t, c.do(owner, producePinned("t", 0, "after")).Err)
	next := c.do(origin, msg.Consume{Topic: "t", Partition: 0, WaitMs: 8_000})
	require.NoError(t, next.Err)
	require.Len(t, next.Result.(msg.ConsumeResult).Messages, 1, "the record waits for the next poll")
}
