package node

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// harness drives a node the way a driver does, synchronously, on an
// in-memory disk: every request is handled and every Ready persisted,
// answered and advanced before the call returns.
type harness struct {
	t   testing.TB
	cfg Config
	fs  *storage.MemFS
	// metaPath is the metastore's bbolt file (a real file: bbolt cannot
	// run on the in-memory disk; a committed transaction survives a crash).
	metaPath string
	node     *Node
	nowMs    int64
	nextID   msg.RequestID
	replies  map[msg.RequestID]msg.Reply
	// syncsRun counts Sync.Run calls, for group-commit assertions.
	syncsRun int
	// messages are the envelopes the node sent (a single node sends only
	// to members that tests add by hand).
	messages []msg.Envelope
	// observer, when set before a (re)start, receives the node's events.
	observer Observer
}

const harnessStartMs int64 = 1_700_000_000_000

// testHandleKey is the receipt handle key of the test nodes (a driver
// draws a fresh one at every start).
var testHandleKey = bytes.Repeat([]byte{0x5a}, HandleKeyBytes)

func newHarness(t testing.TB) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.HandleKey = testHandleKey
	cfg.Log.SegmentBytes = 64 << 10
	h := &harness{t: t, cfg: cfg, fs: storage.NewMemFS(rand.New(rand.NewPCG(1, 2))), nowMs: harnessStartMs,
		replies: map[msg.RequestID]msg.Reply{}, metaPath: filepath.Join(t.TempDir(), "meta.db")}
	h.start()
	t.Cleanup(func() {
		if h.node != nil {
			_ = h.node.Abandon()
		}
	})
	return h
}

// start recovers the node and runs it until it leads its single-node
// metastore and is a member (its first heartbeat applied).
func (h *harness) start() {
	store, err := meta.OpenStore(h.metaPath, meta.StoreOptions{NoSync: true})
	require.NoError(h.t, err)
	n, err := New(h.cfg, h.fs, store, h.nowMs, h.observer)
	require.NoError(h.t, err)
	h.node = n
	h.flush()
	_, member := n.meta.State().Member(h.cfg.NodeID)
	require.True(h.t, n.meta.IsLeader() && member, "a single node leads and is a member after its first Ready")
}

// send hands a request to the node and flushes; it returns the id so the
// caller can look for a reply that may come later (long polls).
func (h *harness) send(req msg.Request) msg.RequestID {
	h.nextID++
	h.node.Handle(h.nextID, req)
	h.flush()
	return h.nextID
}

// do sends a request that must be answered at once and returns the reply.
func (h *harness) do(req msg.Request) msg.Reply {
	h.t.Helper()
	id := h.send(req)
	reply, ok := h.replies[id]
	require.True(h.t, ok, "request %d (%T) got no reply", id, req)
	return reply
}

// ok is do for a request that must succeed; it returns the result.
func (h *harness) ok(req msg.Request) any {
	h.t.Helper()
	reply := h.do(req)
	require.NoError(h.t, reply.Err, "%T", req)
	return reply.Result
}

// fail is do for a request that must fail with code.
func (h *harness) fail(req msg.Request, code msg.Code) *msg.Error {
	h.t.Helper()
	reply := h.do(req)
	require.Error(h.t, reply.Err, "%T must fail", req)
	e, isError := reply.Err.(*msg.Error)
	require.True(h.t, isError, "error %v is not *Error", reply.Err)
	require.Equal(h.t, code, e.Code, "error %q", e.Message)
	return e
}

func (h *harness) flush() {
	for h.node.HasReady() {
		h.advanceOnce()
	}
}

// advanceOnce handles one Ready: its syncs, replies and messages.
func (h *harness) advanceOnce() {
	rd := h.node.Ready()
	h.messages = append(h.messages, rd.ProduceForwards...) // before the syncs, as the host sends them
	h.takeReplies(rd.EarlyReplies)
	for _, s := range rd.Syncs {
		require.NoError(h.t, s.Run())
		h.syncsRun++
	}
	h.takeReplies(rd.Replies)
	h.messages = append(h.messages, rd.Messages...)
	h.node.Advance(rd)
	require.Empty(h.t, rd.Jobs, "a single node never moves a partition")
}

// takeReplies records replies, each request answered at most once.
func (h *harness) takeReplies(replies []msg.Reply) {
	for _, r := range replies {
		_, dup := h.replies[r.ID]
		require.False(h.t, dup, "request %d answered twice", r.ID)
		h.replies[r.ID] = r
	}
}

func (h *harness) tick(deltaMs int64) {
	h.nowMs += deltaMs
	h.node.Tick(h.nowMs)
	h.flush()
}

// crash drops the node and every unsynced write of its disk, then
// restarts it.
func (h *harness) crash() {
	require.NoError(h.t, h.node.Abandon())
	h.node = nil
	h.fs.Crash()
	h.start()
}

// restart closes the node gracefully and starts it again.
func (h *harness) restart() {
	require.NoError(h.t, h.node.Close())
	h.node = nil
	h.start()
}

func (h *harness) createTopic(name string, mutate ...func(*msg.CreateTopic)) msg.TopicInfo {
	h.t.Helper()
	req := msg.CreateTopic{Name: name}
	for _, m := range mutate {
		m(&req)
	}
	return h.ok(req).(msg.TopicInfo)
}

func (h *harness) produce(topicName string, partition int, payload string) msg.Placement {
	h.t.Helper()
	result := h.ok(msg.Produce{Topic: topicName, Records: []msg.ProduceRecord{{Partition: partition, Payload: []byte(payload)}}}).(msg.ProduceResult)
	require.Len(h.t, result.Records, 1)
	return result.Records[0]
}

func (h *harness) consume(topicName string) (msg.Message, bool) {
	h.t.Helper()
	result := h.ok(msg.Consume{Topic: topicName, Partition: msg.PartitionNone}).(msg.ConsumeResult)
	if len(result.Messages) == 0 {
		return msg.Message{}, false
	}
	require.Len(h.t, result.Messages, 1)
	return result.Messages[0], true
}

func (h *harness) ackHandle(topicName, handle string, action msg.AckAction) error {
	return h.do(msg.Ack{Topic: topicName, Handles: []string{handle}, Action: action}).Err
}

func (h *harness) stats(topicName string, partition int) msg.PartitionStats {
	h.t.Helper()
	detail := h.ok(msg.GetTopic{Name: topicName, Partition: partition}).(msg.TopicDetail)
	require.Len(h.t, detail.PartitionStats, 1)
	return detail.PartitionStats[0]
}
