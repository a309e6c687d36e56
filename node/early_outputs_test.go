package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A produce split between this node and another owner: its forward rides
// Ready.ProduceForwards (it may leave before the Ready's syncs), and once
// the owner answered, the client's 202 rides Ready.EarlyReplies of a Ready
// that also syncs this node's newer writes, which it does not wait for.
func TestSplitProduceForwardsAndAnswersWithoutWaitingForSyncs(t *testing.T) {
	h := newHarness(t)
	mine, theirs := ordersOverTwoMembers(t, h)

	h.nextID++
	client := h.nextID
	h.node.Handle(client, msg.Produce{Topic: "orders", Batch: true, Records: []msg.ProduceRecord{
		{Partition: mine, Payload: []byte("here")}, {Partition: theirs, Payload: []byte("there")}}})
	rd := h.node.Ready()
	require.Len(t, rd.ProduceForwards, 1, "the other owner's part")
	forward, ok := rd.ProduceForwards[0].Message.(msg.ForwardRequest)
	require.True(t, ok)
	require.Equal(t, "node-2", rd.ProduceForwards[0].To)
	for _, env := range rd.Messages {
		_, isForward := env.Message.(msg.ForwardRequest)
		require.False(t, isForward, "no forward waits among the messages")
	}
	require.NotEmpty(t, rd.Syncs, "this node's own part is written in this round")
	require.Empty(t, rd.EarlyReplies)
	for _, s := range rd.Syncs {
		require.NoError(t, s.Run())
	}
	require.Empty(t, rd.Replies, "not answered before the other owner is")
	h.node.Advance(rd)
	h.flush()

	h.nextID++
	h.node.Handle(h.nextID, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: mine, Payload: []byte("later")}}})
	require.NoError(t, h.node.Step(msg.Envelope{From: "node-2", To: h.cfg.NodeID, Message: msg.ForwardReply{ID: forward.ID,
		Reply: msg.Reply{Result: msg.ProduceResult{Records: []msg.Placement{{Partition: theirs, Offset: 0}}, Batch: true}}}}))
	rd = h.node.Ready()
	require.NotEmpty(t, rd.Syncs, "the later produce's round")
	require.Len(t, rd.EarlyReplies, 1, "the split produce is answered without waiting for it")
	require.Equal(t, client, rd.EarlyReplies[0].ID)
	require.NoError(t, rd.EarlyReplies[0].Err)
	result := rd.EarlyReplies[0].Result.(msg.ProduceResult)
	require.Len(t, result.Records, 2)
	require.Equal(t, theirs, result.Records[1].Partition)
	for _, reply := range rd.Replies {
		require.NotEqual(t, client, reply.ID)
	}
	for _, s := range rd.Syncs {
		require.NoError(t, s.Run())
	}
	h.node.Advance(rd)
}
