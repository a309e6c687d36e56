package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// newHarnessReadingOneRecordARound is a node with topic t whose consumes
// of one round read at most 1 MiB (one large record, and whatever else
// started under the bound).
func newHarnessReadingOneRecordARound(t *testing.T) *harness {
	h := newHarness(t)
	h.cfg.ConsumeReplyBytesMax = msg.MessageBytesMax
	h.cfg.RoundReadBytesMax = msg.MessageBytesMax
	h.restart()
	h.createTopic("t")
	return h
}

// Property: the consumes of one round read at most RoundReadBytesMax of
// records (plus one record for a consume that started under it): past
// it a consume is refused with a 503 and reserves nothing; the next round
// reads again.
func TestTheConsumesOfARoundReadWithinTheirBound(t *testing.T) {
	h := newHarnessReadingOneRecordARound(t)
	payload := strings.Repeat("x", 600_000)
	for range 4 {
		h.produce("t", 0, payload)
	}
	ids := []msg.RequestID{h.nextID + 1, h.nextID + 2, h.nextID + 3}
	for _, id := range ids { // one round: no Ready between them
		h.node.Handle(id, msg.Consume{Topic: "t", Partition: 0})
	}
	h.nextID += 3
	h.flush()
	require.NoError(t, h.replies[ids[0]].Err)
	require.NoError(t, h.replies[ids[1]].Err, "under the bound when it started: one message always fits")
	refused := h.replies[ids[2]]
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "%+v", refused)
	require.Contains(t, refused.Err.Error(), "this round")
	next := h.ok(msg.Consume{Topic: "t", Partition: 0}).(msg.ConsumeResult)
	require.Len(t, next.Messages, 1, "the next round reads again, the refused consume having reserved nothing")
	require.Equal(t, uint64(2), next.Messages[0].Offset)
}

// Property: replays read into the same round's bound as consumes (a
// thousand replays of 1 MiB records, one round, read a gigabyte before):
// past it a replay is refused with a 503, and a consume of the round finds
// the reads spent too; the next round replays again.
func TestTheReplaysOfARoundReadWithinTheRoundsBound(t *testing.T) {
	h := newHarnessReadingOneRecordARound(t)
	payload := strings.Repeat("x", 600_000)
	for range 3 {
		h.produce("t", 0, payload)
	}
	ids := []msg.RequestID{h.nextID + 1, h.nextID + 2, h.nextID + 3, h.nextID + 4}
	for i, id := range ids[:3] { // one round: no Ready between them
		h.node.Handle(id, msg.Replay{Topic: "t", Partition: 0, Offset: uint64(i)})
	}
	h.node.Handle(ids[3], msg.Consume{Topic: "t", Partition: 0})
	h.nextID += 4
	h.flush()
	require.NoError(t, h.replies[ids[0]].Err)
	require.NoError(t, h.replies[ids[1]].Err, "under the bound when it started: one record always fits")
	for _, id := range ids[2:] {
		refused := h.replies[id]
		require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "%+v", refused)
		require.Contains(t, refused.Err.Error(), "consumes and replays of this round")
	}
	again := h.ok(msg.Replay{Topic: "t", Partition: 0, Offset: 2}).(msg.ReplayResult)
	require.Equal(t, uint64(2), again.Message.Offset, "the next round replays again")
}

// Property: a parked poll that a round's spent reads left unanswered
// looks again at the next Tick, and gets its record then (it would
// otherwise wait for another record to arrive, or its wait to end).
func TestAPollLeftByARoundsSpentReadsLooksAgainAtTheNextTick(t *testing.T) {
	h := newHarnessReadingOneRecordARound(t)
	var polls []msg.RequestID
	for range 3 {
		polls = append(polls, h.send(msg.Consume{Topic: "t", Partition: 0, WaitMs: 8_000}))
	}
	for range 3 {
		h.tick(1) // the node's own deadlines settle in the future
	}
	require.Greater(t, h.node.NextDeadlineMs(), h.nowMs+1)
	produceThreeLargeRecords(h, "t")
	require.Contains(t, h.replies, polls[0])
	require.Contains(t, h.replies, polls[1])
	require.NotContains(t, h.replies, polls[2], "the round's reads were spent")
	require.Equal(t, h.nowMs+1, h.node.NextDeadlineMs(), "the driver is asked to tick at once, not at its next deadline")
	h.tick(1)
	reply, answered := h.replies[polls[2]]
	require.True(t, answered, "the poll looked again at the Tick")
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1)
}

// produceThreeLargeRecords produces three records of 600 KB to partition
// 0 of topicName in one batch: three polls parked there can take two of
// them within one round's reads, not the third.
func produceThreeLargeRecords(h *harness, topicName string) {
	payload := []byte(strings.Repeat("x", 600_000))
	records := []msg.ProduceRecord{{Partition: 0, Payload: payload}, {Partition: 0, Payload: payload}, {Partition: 0, Payload: payload}}
	h.ok(msg.Produce{Topic: topicName, Records: records, Batch: true})
}
