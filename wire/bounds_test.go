package wire

import (
	"bytes"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/node"
	"narad/wire/wiretest"
)

// maxNodeID is a node id at NodeIDBytesMax.
var maxNodeID = strings.Repeat("n", NodeIDBytesMax)

// requireFits encodes env (EncodeEnvelope asserts FrameBytesMax), frames
// it, and decodes it back.
func requireFits(t *testing.T, name string, env node.Envelope) {
	t.Helper()
	env.From, env.To = maxNodeID, maxNodeID
	encoded, err := EncodeEnvelope(nil, env)
	require.NoError(t, err, name)
	require.LessOrEqual(t, len(encoded), FrameBytesMax, name)
	t.Logf("%s: %d bytes, %.1f%% of FrameBytesMax", name, len(encoded), 100*float64(len(encoded))/FrameBytesMax)
	frame := AppendFrame(nil, encoded)
	payload, err := ReadFrame(bytes.NewReader(frame), nil)
	require.NoError(t, err, name)
	_, err = DecodeEnvelope(payload)
	require.NoError(t, err, name)
}

// TestLargestMessagesFitAFrame: the largest message the node may legally
// send of each kind encodes within FrameBytesMax and decodes: a consume
// reply of MessagesMax messages at every bound, a batch produce at
// node.ProduceBatchBytesMax with maximum keys, the fullest ack, topic,
// member and move listings, and a Raft message at RaftMessageBytesMax.
func TestLargestMessagesFitAFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds messages of about FrameBytesMax")
	}
	requireFits(t, "consume reply", replyOf(node.ConsumeResult{Messages: repeat(wiretest.MaxMessage(), MessagesMax), Batch: true}))
	requireFits(t, "batch produce", forwardOf(largestProduce()))
	requireFits(t, "ack reply", replyOf(node.AckResult{Results: repeat(node.AckItemResult{Handle: strings.Repeat("h", ReceiptHandleBytesMax),
		Err: &node.Error{Code: node.CodeInternal, Message: strings.Repeat("e", ErrorMessageBytesMax)}}, HandlesMax)}))
	requireFits(t, "topic page", replyOf(node.TopicPage{Topics: repeat(wiretest.MaxTopicInfo(), TopicsMax), NextPageToken: wiretest.MaxTopic()}))
	requireFits(t, "topic detail", replyOf(node.TopicDetail{TopicInfo: wiretest.MaxTopicInfo(), PartitionStats: repeat(wiretest.MaxPartitionStats(), PartitionStatsMax)}))
	requireFits(t, "members", replyOf(node.MembersResult{Members: repeat(node.Member{ID: maxNodeID, Addr: strings.Repeat("a", AddressBytesMax),
		Status: strings.Repeat("s", LabelBytesMax), OwnedPartitions: -1 << 63, OutboundMoves: -1 << 63}, MembersMax)}))
	requireFits(t, "moves", replyOf(node.MovesResult{Moves: repeat(node.Move{Topic: wiretest.MaxTopic(), Partition: -1 << 63, From: maxNodeID, To: maxNodeID,
		Phase: strings.Repeat("p", LabelBytesMax), BytesCopied: -1 << 63, BytesTotal: -1 << 63, StartedAtMs: -1 << 63}, MovesMax)}))
	requireFits(t, "raft message", largestRaftMessage(t))
}

// largestProduce is a batch produce of ProduceBatchRecordsMax records with
// maximum keys and node.ProduceBatchBytesMax payload bytes in all.
func largestProduce() node.Produce {
	payload := make([]byte, node.ProduceBatchBytesMax/RecordsMax)
	record := node.ProduceRecord{Key: bytes.Repeat([]byte{'k'}, KeyBytesMax), Partition: -1 << 63, Payload: payload}
	records := repeat(record, RecordsMax)
	records[0].Payload = make([]byte, len(payload)+node.ProduceBatchBytesMax%RecordsMax)
	return node.Produce{Topic: wiretest.MaxTopic(), Records: records, Batch: true}
}

// largestRaftMessage is a Raft message whose encoding is exactly
// RaftMessageBytesMax bytes.
func largestRaftMessage(t *testing.T) node.Envelope {
	message := &raftpb.Message{Context: make([]byte, RaftMessageBytesMax)}
	excess := len(raftMarshalTest(message)) - RaftMessageBytesMax // the tag and length of Context
	message.Context = message.Context[:RaftMessageBytesMax-excess]
	require.Equal(t, RaftMessageBytesMax, len(raftMarshalTest(message)))
	return node.Envelope{Message: node.RaftMessage{Message: message}}
}

func raftMarshalTest(m *raftpb.Message) []byte {
	e := encoder{boundsUnchecked: true}
	e.raftMessage(m)
	d := decoder{input: e.buf}
	return e.buf[len(e.buf)-int(d.uvarint()):]
}

func repeat[T any](v T, n int) []T {
	list := make([]T, n)
	for i := range list {
		list[i] = v
	}
	return list
}

// TestElementBytesMin: each list element's minimum size is the encoding
// of its zero value.
func TestElementBytesMin(t *testing.T) {
	sizes := map[string]struct {
		encode func(e *encoder)
		min    int
	}{
		"ProduceRecord":  {func(e *encoder) { e.bytes(nil, keyLimit); e.int(0); e.bytes(nil, payloadLimit) }, produceRecordBytesMin},
		"receipt handle": {func(e *encoder) { e.string("", receiptHandleLimit) }, receiptHandleBytesMin},
		"TopicInfo":      {func(e *encoder) { e.topicInfo(&node.TopicInfo{}) }, topicInfoBytesMin},
		"PartitionStats": {func(e *encoder) { e.partitionStats(&node.PartitionStats{}) }, partitionStatsBytesMin},
		"Placement":      {func(e *encoder) { e.produceResult(node.ProduceResult{Records: make([]node.Placement, 1)}) }, placementBytesMin + 2},
		"Message":        {func(e *encoder) { e.consumedMessage(&node.Message{}) }, consumedMessageBytesMin},
		"AckItemResult":  {func(e *encoder) { e.ackResult(node.AckResult{Results: make([]node.AckItemResult, 1)}) }, ackItemBytesMin + 2},
		"Member":         {func(e *encoder) { e.membersResult(node.MembersResult{Members: make([]node.Member, 1)}) }, memberBytesMin + 1},
		"Move":           {func(e *encoder) { e.movesResult(node.MovesResult{Moves: make([]node.Move, 1)}) }, moveBytesMin + 1},
	}
	for name, size := range sizes {
		e := encoder{}
		size.encode(&e)
		require.Len(t, e.buf, size.min, "%s (list wrappers add a count and a batch flag)", name)
	}
}

// TestConsumedMessageBytesMax: the largest encoding of one message is
// within consumedMessageBytesMax, which FrameBytesMax is built from.
func TestConsumedMessageBytesMax(t *testing.T) {
	e := encoder{}
	message := wiretest.MaxMessage()
	e.consumedMessage(&message)
	require.LessOrEqual(t, len(e.buf), consumedMessageBytesMax)
	require.LessOrEqual(t, len(e.buf), consumedMessagesBytes([]node.Message{message}))
}

// TestWiretestBoundsAgree: the bounds wiretest restates are the codec's.
func TestWiretestBoundsAgree(t *testing.T) {
	require.Equal(t, NodeIDBytesMax, wiretest.NodeIDBytesMax)
	require.Equal(t, ReceiptHandleBytesMax, wiretest.ReceiptHandleBytesMax)
	require.Equal(t, ErrorMessageBytesMax, wiretest.ErrorMessageBytesMax)
	require.Equal(t, AddressBytesMax, wiretest.AddressBytesMax)
	require.Equal(t, LabelBytesMax, wiretest.LabelBytesMax)
}

// TestBoundRelations: the relations between bounds the codec relies on.
func TestBoundRelations(t *testing.T) {
	require.Greater(t, RaftMessageBytesMax, 0)
	require.LessOrEqual(t, uint64(FrameBytesMax), uint64(1<<32-1), "the frame length field is 32 bits")
	require.GreaterOrEqual(t, FrameBytesMax, node.ProduceBatchBytesMax+RecordsMax*(KeyBytesMax+produceRecordFieldsBytesMax))
	require.Less(t, len(errorMessageCutSuffix), ErrorMessageBytesMax)
}

// TestTypeNumbersAreUnique reads types.go: every typeNumber constant has
// its own value, within the range of its block.
func TestTypeNumbersAreUnique(t *testing.T) {
	fileSet := token.NewFileSet()
	file, err := parser.ParseFile(fileSet, "types.go", nil, 0)
	require.NoError(t, err)
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	_, err = (&types.Config{}).Check("wire", fileSet, []*ast.File{file}, info)
	require.NoError(t, err)
	seen := map[uint64]string{}
	for ident, object := range info.Defs {
		constant_, ok := object.(*types.Const)
		if !ok {
			continue
		}
		value, _ := constant.Uint64Val(constant_.Val())
		require.NotContains(t, seen, value, "%s and %s share type number %d", ident.Name, seen[value], value)
		seen[value] = ident.Name
	}
	require.Len(t, seen, 6+11+10, "type numbers: 6 messages, 11 requests, 10 results")
}

// TestCutErrorMessage: text at the bound is kept; longer text is cut to
// at most the bound, at a UTF-8 boundary, keeping its start, marked.
func TestCutErrorMessage(t *testing.T) {
	require.Equal(t, "short", cutErrorMessage("short"))
	atBound := strings.Repeat("a", ErrorMessageBytesMax)
	require.Equal(t, atBound, cutErrorMessage(atBound))
	for _, long := range []string{atBound + "b", strings.Repeat("é", ErrorMessageBytesMax), strings.Repeat("€", ErrorMessageBytesMax)} {
		cut := cutErrorMessage(long)
		require.LessOrEqual(t, len(cut), ErrorMessageBytesMax)
		require.Greater(t, len(cut), ErrorMessageBytesMax-len(errorMessageCutSuffix)-utf8.UTFMax)
		require.True(t, utf8.ValidString(cut))
		require.True(t, strings.HasSuffix(cut, errorMessageCutSuffix))
		require.True(t, strings.HasPrefix(long, strings.TrimSuffix(cut, errorMessageCutSuffix)))
	}
}
