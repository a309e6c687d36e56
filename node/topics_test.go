package node

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

func TestCreateTopicAppliesDefaults(t *testing.T) {
	h := newHarness(t)
	info := h.createTopic("orders")
	require.Equal(t, msg.TopicInfo{
		Name: "orders", Partitions: 3, RetentionMs: h.cfg.DefaultRetentionMs,
		VisibilityTimeoutMs: 30_000, InFlightMax: 1024, AckedAheadMax: 1024,
		CreatedAt: harnessStartMs / 1000,
	}, info)
}

func TestCreateTopicRejectsBadInputAndChangesNothing(t *testing.T) {
	h := newHarness(t)
	cases := []msg.CreateTopic{
		{Name: ""}, {Name: "."}, {Name: ".."}, {Name: "a/b"}, {Name: string(make([]byte, 256))},
		{Name: "t", Partitions: 2}, {Name: "t", Partitions: 109}, {Name: "t", Partitions: -1},
		{Name: "t", RetentionMs: 3_599_999}, {Name: "t", VisibilityTimeoutMs: -5},
		{Name: "t", VisibilityTimeoutMs: msg.VisibilityTimeoutMsMax + 1}, {Name: "t", VisibilityTimeoutMs: math.MaxInt64},
		{Name: "t", InFlightMax: -1}, {Name: "t", AckedAheadMax: -1},
	}
	for _, req := range cases {
		h.fail(req, msg.CodeInvalid)
	}
	page := h.ok(msg.ListTopics{}).(msg.TopicPage)
	require.Empty(t, page.Topics, "a refused create must not create anything")
}

func TestCreateTopicTwiceConflicts(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	e := h.fail(msg.CreateTopic{Name: "orders"}, msg.CodeConflict)
	require.Equal(t, "topic already exists", e.Message)
}

// TestCreateTopicOfANameTakenInAnotherCaseConflicts: a partition's
// directory is named after its topic, so on a case-insensitive file
// system "orders" and "Orders" would be one; the create is a 409 that
// names the topic it clashes with, plain or as a fan-out child, and
// creates nothing.
func TestCreateTopicOfANameTakenInAnotherCaseConflicts(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit")
	for _, req := range []msg.CreateTopic{{Name: "Orders"}, {Name: "ORDERS", Parent: "audit"}} {
		e := h.fail(req, msg.CodeConflict)
		require.Contains(t, e.Message, `topic "orders" exists`, "the answer names the topic")
		require.Contains(t, e.Message, "differ in more than case")
	}
	page := h.ok(msg.ListTopics{}).(msg.TopicPage)
	require.Equal(t, []string{"audit", "orders"}, topicNames(page), "a refused create creates nothing")
	h.createTopic("orders2")
}

func TestListTopicsKeysetPagination(t *testing.T) {
	h := newHarness(t)
	for i := range 5 {
		h.createTopic(fmt.Sprintf("t%d", i))
	}
	first := h.ok(msg.ListTopics{Limit: 2}).(msg.TopicPage)
	require.Equal(t, []string{"t0", "t1"}, topicNames(first))
	require.Equal(t, "t1", first.NextPageToken)
	second := h.ok(msg.ListTopics{Limit: 3, PageToken: first.NextPageToken}).(msg.TopicPage)
	require.Equal(t, []string{"t2", "t3", "t4"}, topicNames(second))
	require.Equal(t, "t4", second.NextPageToken, "a full last page still returns a token")
	last := h.ok(msg.ListTopics{Limit: 3, PageToken: second.NextPageToken}).(msg.TopicPage)
	require.Empty(t, last.Topics)
	require.Equal(t, "", last.NextPageToken)
	h.fail(msg.ListTopics{Limit: 1001}, msg.CodeInvalid)
	h.fail(msg.ListTopics{Limit: -1}, msg.CodeInvalid)
	h.fail(msg.ListTopics{PageToken: string(make([]byte, msg.TopicNameBytesMax+1))}, msg.CodeInvalid)
}

func topicNames(page msg.TopicPage) []string {
	var names []string
	for _, info := range page.Topics {
		names = append(names, info.Name)
	}
	return names
}

func TestGetTopicReportsPartitionStats(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 1, "a")
	h.produce("orders", 1, "b")
	detail := h.ok(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}).(msg.TopicDetail)
	require.Len(t, detail.PartitionStats, 3)
	p1 := detail.PartitionStats[1]
	require.Equal(t, 1, p1.Index)
	require.Equal(t, uint64(2), p1.HighWatermark)
	require.Equal(t, uint64(2), p1.NextOffset)
	require.True(t, p1.Available)
	require.Equal(t, h.cfg.NodeID, p1.OwnerNode)
	require.Positive(t, p1.SizeBytes)
	h.fail(msg.GetTopic{Name: "orders", Partition: 3}, msg.CodeInvalid)
	h.fail(msg.GetTopic{Name: "missing", Partition: msg.PartitionNone}, msg.CodeNotFound)
}

func TestAlterTopic(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	visibility, partitions := int64(5_000), 5
	info := h.ok(msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: &visibility, Partitions: &partitions}).(msg.TopicInfo)
	require.Equal(t, int64(5_000), info.VisibilityTimeoutMs, "visibility_timeout_ms is alterable (docs/api.md#alter-a-topic)")
	require.Equal(t, 5, info.Partitions)
	h.produce("orders", 4, "new partition works")
	applied := h.node.MetaAppliedIndex()
	again := h.ok(msg.AlterTopic{Name: "orders", Partitions: &partitions}).(msg.TopicInfo)
	require.Equal(t, 5, again.Partitions, "a grow retried after it applied is answered with the topic as it is")
	require.Greater(t, h.node.MetaAppliedIndex(), applied, "once the log says so: a lagging replica's copy is no answer")
	visibility = 6_000
	info = h.ok(msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: &visibility, Partitions: &partitions}).(msg.TopicInfo)
	require.Equal(t, []any{int64(6_000), 5}, []any{info.VisibilityTimeoutMs, info.Partitions}, "the same count beside another change")

	shrink := 4
	h.fail(msg.AlterTopic{Name: "orders", Partitions: &shrink}, msg.CodeInvalid)
	h.fail(msg.AlterTopic{Name: "orders"}, msg.CodeInvalid)
	short := int64(1000)
	h.fail(msg.AlterTopic{Name: "orders", RetentionMs: &short}, msg.CodeInvalid)
	endless := int64(msg.VisibilityTimeoutMsMax + 1) // a lease must lapse: one consume may not hold a record for good
	h.fail(msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: &endless}, msg.CodeInvalid)
	h.fail(msg.AlterTopic{Name: "missing", Partitions: &partitions}, msg.CodeNotFound)
	detail := h.ok(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}).(msg.TopicDetail)
	require.Equal(t, 5, detail.Partitions, "refused alters change nothing")

	longest := int64(msg.VisibilityTimeoutMsMax)
	info = h.ok(msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: &longest}).(msg.TopicInfo)
	require.Equal(t, longest, info.VisibilityTimeoutMs, "the bound itself is accepted")
	zero := int64(0)
	info = h.ok(msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: &zero}).(msg.TopicInfo)
	require.Equal(t, h.cfg.DefaultVisibilityTimeoutMs, info.VisibilityTimeoutMs, "zero restores the default")
}

func TestDeleteTopicRemovesData(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 0, "old")
	h.ok(msg.DeleteTopic{Name: "orders"})
	h.fail(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}, msg.CodeNotFound)
	h.fail(msg.DeleteTopic{Name: "orders"}, msg.CodeNotFound)
	h.createTopic("orders")
	require.Equal(t, uint64(0), h.stats("orders", 0).HighWatermark, "a re-created topic starts empty")
	_, ok := h.consume("orders")
	require.False(t, ok)
}

func TestDeleteTopicAnswersParkedPolls(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	id := h.send(msg.Consume{Topic: "orders", Partition: msg.PartitionNone, WaitMs: 5_000})
	require.NotContains(t, h.replies, id)
	h.ok(msg.DeleteTopic{Name: "orders"})
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(h.replies[id].Err))
}

func TestTopicsSurviveRestart(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.crash()
	page := h.ok(msg.ListTopics{}).(msg.TopicPage)
	require.Equal(t, []string{"orders"}, topicNames(page), "a created topic is durable before its 201")
}

// TestDataWithoutItsMetastoreIsNotSwept: partition data beside a new
// metastore (the old one lost or moved) refuses the start instead of being
// deleted as orphans.
func TestDataWithoutItsMetastoreIsNotSwept(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 0, "precious")
	require.NoError(t, h.node.Close())
	h.node = nil
	store, err := meta.OpenStore(filepath.Join(t.TempDir(), "new-meta.db"), meta.StoreOptions{NoSync: true})
	require.NoError(t, err)
	_, err = New(h.cfg, h.fs, store, h.nowMs, nil)
	require.ErrorIs(t, err, ErrDataWithoutMetastore)
	_, statErr := h.fs.Stat(PartitionDir("orders", 0))
	require.NoError(t, statErr, "the data is still there")
}

// TestARefusedStartLeavesTheIncarnation: New refused a metastore that
// never saw a member beside partition data only after it had advanced the
// incarnation on disk, so each refused start (a supervisor retrying one)
// changed the directory the operator was told to restore into. The
// refusal now comes first: the incarnation file is as it was.
func TestARefusedStartLeavesTheIncarnation(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.produce("orders", 0, "precious")
	require.NoError(t, h.node.Close())
	h.node = nil
	before, err := storage.ReadFile(h.fs, incarnationFile)
	require.NoError(t, err)
	for range 2 {
		store, err := meta.OpenStore(filepath.Join(t.TempDir(), "new-meta.db"), meta.StoreOptions{NoSync: true})
		require.NoError(t, err)
		_, err = New(h.cfg, h.fs, store, h.nowMs, nil)
		require.ErrorIs(t, err, ErrDataWithoutMetastore)
		after, err := storage.ReadFile(h.fs, incarnationFile)
		require.NoError(t, err)
		require.Equal(t, before, after, "a refused start leaves the incarnation on disk as it was")
	}
	store, err := meta.OpenStore(h.metaPath, meta.StoreOptions{NoSync: true})
	require.NoError(t, err)
	h.node, err = New(h.cfg, h.fs, store, h.nowMs, nil)
	require.NoError(t, err, "the start with its own metastore goes on")
	require.Equal(t, binary.BigEndian.Uint64(before)+1, h.node.incarnation, "and takes the next incarnation")
}

// TestOnlyTheOwnerServesAPartition: with a second member in the
// metastore that never answers, partitions placed on it are never written
// here: a request forwarded from it for its own partition is refused 421
// (a request crosses one hop at most), a client's pinned produce is sent
// there and fails 503 after the forward timeout, and the topic's stats
// report its partitions unavailable.
func TestOnlyTheOwnerServesAPartition(t *testing.T) {
	h := newHarness(t)
	mine, theirs := ordersOverTwoMembers(t, h)
	h.produce("orders", mine, "here")

	forwarded := []msg.Request{
		msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: theirs, Payload: []byte("x")}}},
		msg.Consume{Topic: "orders", Partition: theirs},
		msg.Replay{Topic: "orders", Partition: theirs, Offset: 0},
		msg.Ack{Topic: "orders", Handles: []string{fmt.Sprintf("%d:0:5:0123456789abcdef", theirs)}, Action: msg.AckCommit},
	}
	for i, req := range forwarded {
		h.messages = nil
		require.NoError(t, h.node.Step(msg.Envelope{From: "node-2", To: h.cfg.NodeID, Message: msg.ForwardRequest{ID: uint64(i + 1), Request: req, LocalOnly: true}}))
		h.flush()
		reply := onlyForwardReply(t, h.messages)
		require.Equal(t, uint64(i+1), reply.ID)
		if ack, isAck := reply.Reply.Result.(msg.AckResult); isAck {
			require.Equal(t, msg.CodeNotOwner, msg.CodeOf(ack.Results[0].Err))
			continue
		}
		require.Equal(t, msg.CodeNotOwner, msg.CodeOf(reply.Reply.Err), "%T", req)
	}

	pinned := h.send(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: theirs, Payload: []byte("x")}}})
	statsID := h.send(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone})
	h.tick(h.cfg.ForwardTimeoutMs)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(h.replies[pinned].Err), "the owner never answered")
	for _, s := range h.replies[statsID].Result.(msg.TopicDetail).PartitionStats {
		require.Equal(t, s.OwnerNode == h.cfg.NodeID, s.Available, "partition %d", s.Index)
	}
	m, ok := h.consume("orders")
	require.True(t, ok)
	require.Equal(t, mine, m.Partition, "an unpinned consume finds the local record")
}

func onlyForwardReply(t *testing.T, messages []msg.Envelope) msg.ForwardReply {
	var replies []msg.ForwardReply
	for _, env := range messages {
		if reply, ok := env.Message.(msg.ForwardReply); ok {
			require.Equal(t, "node-2", env.To)
			replies = append(replies, reply)
		}
	}
	require.Len(t, replies, 1)
	return replies[0]
}

// TestAlterAndDeleteInOneRound: an alter and a delete of one topic applied
// in the same metastore batch answer the alter 404 (the delete came after
// it); the node once asserted the topic still existed and crashed.
func TestAlterAndDeleteInOneRound(t *testing.T) {
	h := newHarness(t)
	h.createTopic("x")
	visibility := int64(5_000)
	h.node.Handle(100, msg.AlterTopic{Name: "x", VisibilityTimeoutMs: &visibility})
	h.node.Handle(101, msg.DeleteTopic{Name: "x"})
	h.flush()
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(h.replies[100].Err))
	require.NoError(t, h.replies[101].Err)
}

// TestDrainingNodeParksNoPolls: after ReleaseWaiters (graceful shutdown)
// a consume that finds nothing answers at once instead of parking.
func TestDrainingNodeParksNoPolls(t *testing.T) {
	h := newHarness(t)
	h.createTopic("q")
	parked := h.send(msg.Consume{Topic: "q", Partition: msg.PartitionNone, WaitMs: 5_000})
	h.node.ReleaseWaiters()
	h.flush()
	require.Contains(t, h.replies, parked, "parked polls are answered")
	late := h.send(msg.Consume{Topic: "q", Partition: msg.PartitionNone, WaitMs: 5_000})
	require.Contains(t, h.replies, late, "a poll after the release does not park")
}

// ordersOverTwoMembers adds member node-2 (which never answers) and
// creates topic "orders" with 4 partitions over both members; it returns
// a partition this node owns and one node-2 owns.
func ordersOverTwoMembers(t *testing.T, h *harness) (mine, theirs int) {
	_, err := h.node.meta.Propose(meta.MemberHeartbeat{ID: "node-2", HTTPAddr: "127.0.0.2:7942", ClusterAddr: "127.0.0.2:7943", NowMs: h.nowMs})
	require.NoError(t, err)
	h.flush()
	h.createTopic("orders", func(c *msg.CreateTopic) { c.Partitions = 4 })
	mine, theirs = -1, -1
	record, _ := h.node.meta.State().Topic("orders")
	for index, a := range record.Assignments {
		if a.Owner == h.cfg.NodeID {
			mine = index
		} else {
			theirs = index
		}
	}
	require.True(t, mine >= 0 && theirs >= 0, "placement spreads over both members: %+v", record.Assignments)
	return mine, theirs
}
