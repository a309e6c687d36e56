package node

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"narad/msg"

	"github.com/stretchr/testify/require"
)

// ackedOnce produces n records to partition 0 of a fresh topic, consumes
// them all and acks the first; it returns the messages.
func ackedOnce(t *testing.T, h *harness, n int) []msg.Message {
	t.Helper()
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	var messages []msg.Message
	for i := range n {
		h.produce("orders", 0, fmt.Sprint(i))
		m, ok := h.consume("orders")
		require.True(t, ok)
		messages = append(messages, m)
	}
	require.NoError(t, h.ackHandle("orders", messages[0].ReceiptHandle, msg.AckCommit))
	return messages
}

// TestAckTwiceSaysAckedTwice: a retried ack of a record it already acked
// (committed, or held ahead of the frontier) answers success and changes
// nothing; the record is never delivered again.
func TestAckTwiceSaysAckedTwice(t *testing.T) {
	h := newHarness(t)
	messages := ackedOnce(t, h, 3)
	require.NoError(t, h.ackHandle("orders", messages[0].ReceiptHandle, msg.AckCommit), "committed")
	require.NoError(t, h.ackHandle("orders", "0:0:12345:0123456789abcdef", msg.AckCommit),
		"any handle of a committed record: its nonce is gone with its lease, and nothing can come back")
	require.NoError(t, h.ackHandle("orders", messages[2].ReceiptHandle, msg.AckCommit))
	require.NoError(t, h.ackHandle("orders", messages[2].ReceiptHandle, msg.AckCommit), "acked ahead")
	require.Equal(t, uint64(1), h.stats("orders", 0).Committed)
	require.Equal(t, 1, h.node.partitions[partitionKey{"orders", 0}].leases.AckedAhead(), "the repeat added nothing")
	require.NoError(t, h.ackHandle("orders", messages[1].ReceiptHandle, msg.AckCommit))
	require.Equal(t, uint64(3), h.stats("orders", 0).Committed)
	h.tick(5_000)
	_, ok := h.consume("orders")
	require.False(t, ok, "nothing comes back")
}

// TestExtendAndNackOfAnAckedRecordAreStale: there is no lease left to
// renew or release once a record is acknowledged.
func TestExtendAndNackOfAnAckedRecordAreStale(t *testing.T) {
	h := newHarness(t)
	messages := ackedOnce(t, h, 2)
	require.NoError(t, h.ackHandle("orders", messages[1].ReceiptHandle, msg.AckCommit))
	for _, m := range messages {
		for _, action := range []msg.AckAction{msg.AckExtend, msg.AckNack} {
			err := h.ackHandle("orders", m.ReceiptHandle, action)
			require.Equal(t, msg.CodeGone, msg.CodeOf(err), "offset %d action %d", m.Offset, action)
			require.Contains(t, err.Error(), "already acked")
		}
	}
}

// TestAckAfterRestartKnowsTheCommittedOffset: the committed offset on
// disk answers a retried ack after a restart; an ack a crash lost (not
// yet persisted) is stale, and its record comes back.
func TestAckAfterRestartKnowsTheCommittedOffset(t *testing.T) {
	h := newHarness(t)
	messages := ackedOnce(t, h, 2)
	h.tick(h.cfg.CommitPersistIntervalMs)
	require.NoError(t, h.ackHandle("orders", messages[1].ReceiptHandle, msg.AckCommit))
	h.crash() // the second ack was not persisted yet
	require.NoError(t, h.ackHandle("orders", messages[0].ReceiptHandle, msg.AckCommit), "persisted before the crash")
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", messages[1].ReceiptHandle, msg.AckCommit)), "lost by the crash")
	again, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, messages[1].Offset, again.Offset, "the record whose ack was lost comes back")
	require.NoError(t, h.ackHandle("orders", again.ReceiptHandle, msg.AckCommit))
	h.restart()
	require.NoError(t, h.ackHandle("orders", again.ReceiptHandle, msg.AckCommit), "after a graceful restart")
	require.NoError(t, h.ackHandle("orders", messages[1].ReceiptHandle, msg.AckCommit),
		"the old handle of a committed record: at-least-once needs nothing more")
}

// TestAckAfterTheLeaseLapsed: a handle whose lease lapsed is stale while
// its record is unacknowledged (reserved again or not), and answers
// success once another consumer acked the record.
func TestAckAfterTheLeaseLapsed(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	h.produce("orders", 0, "x")
	first, _ := h.consume("orders")
	h.tick(1_000)
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit)), "lapsed, released")
	second, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit)), "replaced")
	require.NoError(t, h.ackHandle("orders", second.ReceiptHandle, msg.AckCommit))
	require.NoError(t, h.ackHandle("orders", first.ReceiptHandle, msg.AckCommit), "another consumer acked it")
	require.Equal(t, msg.CodeGone, msg.CodeOf(h.ackHandle("orders", "0:1:99:0123456789abcdef", msg.AckCommit)), "a record never delivered")
}

// TestAckBelowRetentionIsStale: retention may drop records unacked, so a
// handle below the oldest retained offset is stale whatever it names.
func TestAckBelowRetentionIsStale(t *testing.T) {
	h := segmentedHarness(t)
	m, _ := h.consume("orders")
	require.NoError(t, h.ackHandle("orders", m.ReceiptHandle, msg.AckCommit))
	h.tick(h.cfg.DefaultRetentionMs + h.cfg.RetentionCheckIntervalMs)
	require.Positive(t, h.stats("orders", 0).OldestOffset)
	err := h.ackHandle("orders", m.ReceiptHandle, msg.AckCommit)
	require.Equal(t, msg.CodeGone, msg.CodeOf(err))
	require.Contains(t, err.Error(), "retention")
}

// A handle naming an offset past the partition's end was never issued
// (forged or garbled): 410 says so, not that a lease lapsed.
func TestAckPastThePartitionsEndIsStale(t *testing.T) {
	h := newHarness(t)
	ackedOnce(t, h, 2)
	for _, action := range []msg.AckAction{msg.AckCommit, msg.AckExtend, msg.AckNack} {
		err := h.ackHandle("orders", "0:999999:12345:0123456789abcdef", action)
		require.Equal(t, msg.CodeGone, msg.CodeOf(err))
		require.Contains(t, err.Error(), "offset 999999 is past the end of partition 0 (next offset: 2)")
	}
	require.Equal(t, uint64(1), h.stats("orders", 0).Committed, "nothing changed")
}

// TestBatchAckRepeatsPerHandle: in a batch, each handle already acked
// succeeds and each stale one fails, independently.
func TestBatchAckRepeatsPerHandle(t *testing.T) {
	h := newHarness(t)
	messages := ackedOnce(t, h, 3)
	h.tick(1_000) // messages 1 and 2 lapse
	handles := []string{messages[0].ReceiptHandle, messages[1].ReceiptHandle, messages[0].ReceiptHandle}
	result := h.ok(msg.Ack{Topic: "orders", Handles: handles, Action: msg.AckCommit, Batch: true}).(msg.AckResult)
	require.Len(t, result.Results, 3)
	require.NoError(t, result.Results[0].Err)
	require.Equal(t, msg.CodeGone, msg.CodeOf(result.Results[1].Err))
	require.NoError(t, result.Results[2].Err, "the same handle twice in one batch")
}

// TestAckAtTheNewOwnerAfterAMove: the committed offset and the acks held
// ahead of it move with the partition (the source's queue state as of the
// freeze), so the new owner answers a retried ack of the old owner's
// handle of an acknowledged record with success, through any node; the
// handles of records still unacknowledged are stale there, and those
// records are delivered again.
func TestAckAtTheNewOwnerAfterAMove(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader, source, target, messages := consumedAtTheSource(t, c, 5)
	var handles []string
	for _, m := range messages {
		handles = append(handles, m.ReceiptHandle)
	}
	require.NoError(t, c.do(source, msg.Ack{Topic: "t", Handles: []string{handles[0], handles[1], handles[3]}, Action: msg.AckCommit, Batch: true}).Err)

	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target })
	c.tick(100)
	for _, at := range []string{target, source, c.otherThan(source, target)} {
		result := c.do(at, msg.Ack{Topic: "t", Handles: handles, Action: msg.AckCommit, Batch: true})
		require.NoError(t, result.Err)
		for i, item := range result.Result.(msg.AckResult).Results {
			if i < 2 || i == 3 {
				require.NoError(t, item.Err, "at %s, handle %d was acknowledged before the move", at, i)
			} else {
				require.Equal(t, msg.CodeGone, msg.CodeOf(item.Err), "at %s, handle %d is of an unacknowledged record", at, i)
			}
		}
	}
	again := c.do(target, msg.Consume{Topic: "t", Partition: 0})
	require.Equal(t, uint64(2), again.Result.(msg.ConsumeResult).Messages[0].Offset)
}

// consumedAtTheSource elects a leader with a topic "t", produces count
// records to partition 0 at its owner (the source of a move to come, to
// target) and consumes them there.
func consumedAtTheSource(t *testing.T, c *clusterHarness, count int) (leader, source, target string, messages []msg.Message) {
	leader = c.electWithTopic("t", 3)
	source = c.owners(leader, "t")[0]
	target = c.otherThan(source)
	for i := range count {
		require.NoError(t, c.do(source, producePinned("t", 0, fmt.Sprintf("r%d", i))).Err)
	}
	got := c.do(source, msg.Consume{Topic: "t", Partition: 0, Max: count})
	messages = got.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, count)
	return leader, source, target, messages
}

// TestAHandleOfAnotherOwnerSaysWhyItIsStale: a handle minted under
// another key (by the partition's previous owner, or by its owner before
// a restart: a driver draws a key at every start) verifies to no
// reservation, and its 410 says so rather than that a lease lapsed (a
// consumer whose ack was refused 503 during a handover and retried after
// the move read "the lease expired" of a 1 s old lease); a lapsed lease
// under the owner's own key still says it lapsed.
func TestAHandleOfAnotherOwnerSaysWhyItIsStale(t *testing.T) {
	const moved = "it was issued before the partition moved or its owner restarted"
	c := newClusterHarness(t, 3)
	c.reconfigure(func(cfg *Config) { cfg.HandleKey = bytes.Repeat([]byte{cfg.NodeID[1]}, HandleKeyBytes) })
	leader, source, target, messages := consumedAtTheSource(t, c, 2)
	c.startMove(leader, "t", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "t")[0] == target })
	for i, action := range []msg.AckAction{msg.AckCommit, msg.AckExtend} {
		for _, at := range []string{target, source} {
			err := c.do(at, msg.Ack{Topic: "t", Handles: []string{messages[i].ReceiptHandle}, Action: action}).Err
			require.Equal(t, msg.CodeGone, msg.CodeOf(err), "at %s, action %d", at, action)
			require.ErrorContains(t, err, moved, "at %s, action %d", at, action)
			require.ErrorContains(t, err, "the record will be delivered again")
		}
	}

	h := newHarness(t)
	h.createTopic("orders", func(c *msg.CreateTopic) { c.VisibilityTimeoutMs = 1_000 })
	h.produce("orders", 0, "x")
	h.produce("orders", 0, "y")
	lapsed, _ := h.consume("orders")
	before, _ := h.consume("orders")
	h.tick(500)
	require.NoError(t, h.ackHandle("orders", before.ReceiptHandle, msg.AckExtend))
	h.tick(500)
	err := h.ackHandle("orders", lapsed.ReceiptHandle, msg.AckCommit)
	require.ErrorContains(t, err, "receipt handle is stale: the lease expired or was re-reserved")
	h.cfg.HandleKey = bytes.Repeat([]byte{0x77}, HandleKeyBytes)
	h.restart()
	err = h.ackHandle("orders", before.ReceiptHandle, msg.AckCommit)
	require.Equal(t, msg.CodeGone, msg.CodeOf(err))
	require.ErrorContains(t, err, moved)
}

// TestAForwardedAckThatTimesOutIsRetryable: an ack forwarded to an owner
// that does not answer fails 503, never 410; once the owner answers
// again, the retry learns that the first attempt landed.
func TestAForwardedAckThatTimesOutIsRetryable(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	owner := c.otherThan(leader)
	partition := slices.Index(owners, owner)
	at := c.otherThan(leader, owner)
	require.NoError(t, c.do(owner, producePinned("t", partition, "x")).Err)
	got := c.do(owner, msg.Consume{Topic: "t", Partition: partition})
	handle := got.Result.(msg.ConsumeResult).Messages[0].ReceiptHandle
	// The owner applies the ack, but its reply is lost on the way back.
	c.drop = func(env msg.Envelope) bool {
		_, reply := env.Message.(msg.ForwardReply)
		return reply && env.From == owner
	}
	id := c.send(at, msg.Ack{Topic: "t", Handles: []string{handle}, Action: msg.AckCommit})
	reply := c.await(id, 100, 100)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "a timed-out forward: %v", reply.Err)
	require.Equal(t, uint64(1), c.nodes[owner].partitions[partitionKey{"t", partition}].leases.Committed(), "the ack landed")
	c.drop = nil
	c.tick(c.nodes[at].cfg.PeerDownMs)
	require.NoError(t, c.do(at, msg.Ack{Topic: "t", Handles: []string{handle}, Action: msg.AckCommit}).Err)
}

// TestAnAckThroughAReplicaBehindOnPartitionsIsRetryable: partitions were
// added; an ack of a record of a new partition sent through a node whose
// replica has not applied the growth is answered 503 (retry), not 410:
// the lease is live at its owner, and 410 tells the client its ack can
// never land (consume review).
func TestAnAckThroughAReplicaBehindOnPartitionsIsRetryable(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	behind := c.otherThan(leader)
	c.cut[behind] = true
	grown := 6
	require.NoError(t, c.await(c.send(leader, msg.AlterTopic{Name: "t", Partitions: &grown}), 100, 10).Err)
	owners := c.owners(leader, "t")
	added := slices.IndexFunc(owners[3:], func(o string) bool { return o != behind }) + 3
	require.NoError(t, c.do(owners[added], producePinned("t", added, "new")).Err)
	got := c.do(owners[added], msg.Consume{Topic: "t", Partition: added})
	require.NoError(t, got.Err)
	handle := got.Result.(msg.ConsumeResult).Messages[0].ReceiptHandle

	require.Len(t, c.owners(behind, "t"), 3, "the cut replica has not applied the growth")
	// It goes to the leader (ackRoute), which the cut replica cannot reach:
	// its forward times out, 503.
	ack := c.await(c.send(behind, msg.Ack{Topic: "t", Handles: []string{handle}, Action: msg.AckCommit}), 100, 50)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(ack.Err), "retryable: %v", ack.Err)
	require.NoError(t, c.do(owners[added], msg.Ack{Topic: "t", Handles: []string{handle}, Action: msg.AckCommit}).Err, "the lease was live")
}

// Property: an ack whose handle names a partition the topic does not have
// is answered 410 through any node, as the API says: a follower sends it
// to the leader, which knows every growth, instead of answering 503
// "retry" for ever (a client retrying until 204 or 410 never stopped).
func TestAnAckOfAPartitionTheTopicDoesNotHaveIsGoneThroughAnyNode(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("jobs", 3)
	for _, at := range c.ids {
		reply := c.do(at, msg.Ack{Topic: "jobs", Handles: []string{"7:0:1099511627780:05b3016e0f49dff0"}, Action: msg.AckCommit})
		require.Equal(t, msg.CodeGone, msg.CodeOf(reply.Err), "through %s (the leader is %s): %v", at, leader, reply.Err)
		require.ErrorContains(t, reply.Err, "topic jobs has no partition 7", "the 410 says why, through %s", at)
	}
}
