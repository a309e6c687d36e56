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

	"narad/meta"
	"narad/msg"
	"narad/storage"
	"narad/wire/wiretest"
)

// maxNodeID is a node id at NodeIDBytesMax.
var maxNodeID = strings.Repeat("n", NodeIDBytesMax)

// requireFits encodes env (EncodeEnvelope asserts FrameBytesMax), frames
// it, and decodes it back.
func requireFits(t *testing.T, name string, env msg.Envelope) {
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
// msg.ProduceBatchBytesMax with maximum keys, the fullest ack, topic,
// member and move listings, a move chunk of ChunkBytesMax, a source state
// of SegmentsMax segments, LeasesMax leases and CorruptOffsetsMax corrupt
// offsets, and a Raft message at
// RaftMessageBytesMax.
func TestLargestMessagesFitAFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds messages of about FrameBytesMax")
	}
	requireFits(t, "consume reply", replyOf(msg.ConsumeResult{Messages: repeat(wiretest.MaxMessage(), MessagesMax), Batch: true}))
	requireFits(t, "batch produce", forwardOf(largestProduce()))
	requireFits(t, "ack reply", replyOf(msg.AckResult{Results: repeat(msg.AckItemResult{Handle: strings.Repeat("h", ReceiptHandleBytesMax),
		Err: &msg.Error{Code: msg.CodeInternal, Message: strings.Repeat("e", ErrorMessageBytesMax)}}, HandlesMax)}))
	requireFits(t, "topic page", replyOf(msg.TopicPage{Topics: repeat(wiretest.MaxTopicInfo(), TopicsMax), NextPageToken: wiretest.MaxTopic()}))
	requireFits(t, "topic detail", replyOf(msg.TopicDetail{TopicInfo: wiretest.MaxTopicInfo(), PartitionStats: repeat(wiretest.MaxPartitionStats(), PartitionStatsMax)}))
	requireFits(t, "members", replyOf(msg.MembersResult{Members: repeat(msg.Member{ID: maxNodeID, Addr: strings.Repeat("a", AddressBytesMax),
		Status: strings.Repeat("s", LabelBytesMax), OwnedPartitions: -1 << 63, OutboundMoves: -1 << 63}, MembersMax)}))
	requireFits(t, "moves", replyOf(msg.MovesResult{Moves: repeat(msg.Move{Topic: wiretest.MaxTopic(), Partition: -1 << 63, From: maxNodeID, To: maxNodeID,
		Phase: strings.Repeat("p", LabelBytesMax), BytesCopied: -1 << 63, BytesTotal: -1 << 63, StartedAtMs: -1 << 63}, MovesMax)}))
	requireFits(t, "move chunk", replyOf(msg.MoveChunk{Data: make([]byte, ChunkBytesMax)}))
	requireFits(t, "move source state", replyOf(msg.MoveSourceState{Segments: repeat(wiretest.MaxMoveSegment(), SegmentsMax),
		HWM: 1<<64 - 1, Committed: 1<<64 - 1, Frozen: true, NextUndelivered: 1<<64 - 1,
		Leases:       repeat(msg.MoveLease{Offset: 1<<64 - 1, DeliveryCount: 1<<32 - 1}, LeasesMax),
		CorruptCount: 1<<64 - 1, CorruptOffsets: repeat(uint64(1<<64-1), CorruptOffsetsMax)}))
	requireFits(t, "raft message", largestRaftMessage(t))
}

// largestProduce is a batch produce of ProduceBatchRecordsMax records with
// maximum keys and msg.ProduceBatchBytesMax payload bytes in all.
func largestProduce() msg.Produce {
	payload := make([]byte, msg.ProduceBatchBytesMax/RecordsMax)
	record := msg.ProduceRecord{Key: bytes.Repeat([]byte{'k'}, KeyBytesMax), Partition: -1 << 63, Payload: payload}
	records := repeat(record, RecordsMax)
	records[0].Payload = make([]byte, len(payload)+msg.ProduceBatchBytesMax%RecordsMax)
	return msg.Produce{Topic: wiretest.MaxTopic(), Records: records, Batch: true, FanoutEpoch: 1<<64 - 1, SchemaID: 1<<64 - 1,
		TopicIncarnation: 1<<64 - 1, TopicCreatedAtMs: -1 << 63}
}

// largestRaftMessage is a Raft message whose encoding is exactly
// RaftMessageBytesMax bytes.
func largestRaftMessage(t *testing.T) msg.Envelope {
	message := &raftpb.Message{Context: make([]byte, RaftMessageBytesMax)}
	excess := len(raftMarshalTest(message)) - RaftMessageBytesMax // the tag and length of Context
	message.Context = message.Context[:RaftMessageBytesMax-excess]
	require.Equal(t, RaftMessageBytesMax, len(raftMarshalTest(message)))
	return msg.Envelope{Message: msg.RaftMessage{Message: message}}
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
		"ProduceRecord": {func(e *encoder) {
			e.bytes(nil, keyLimit)
			e.int(0)
			e.bytes(nil, payloadLimit)
			e.deadLetterOrigin(nil)
		},
			produceRecordBytesMin},
		"receipt handle": {func(e *encoder) { e.string("", receiptHandleLimit) }, receiptHandleBytesMin},
		"TopicInfo":      {func(e *encoder) { e.topicInfo(&msg.TopicInfo{}) }, topicInfoBytesMin},
		"PartitionStats": {func(e *encoder) { e.partitionStats(&msg.PartitionStats{}) }, partitionStatsBytesMin},
		"Placement":      {func(e *encoder) { e.produceResult(msg.ProduceResult{Records: make([]msg.Placement, 1)}) }, placementBytesMin + 2},
		"Message":        {func(e *encoder) { e.consumedMessage(&msg.Message{}) }, consumedMessageBytesMin},
		"AckItemResult":  {func(e *encoder) { e.ackResult(msg.AckResult{Results: make([]msg.AckItemResult, 1)}) }, ackItemBytesMin + 2},
		"Member":         {func(e *encoder) { e.membersResult(msg.MembersResult{Members: make([]msg.Member, 1)}) }, memberBytesMin + 1},
		"Move":           {func(e *encoder) { e.movesResult(msg.MovesResult{Moves: make([]msg.Move, 1)}) }, moveBytesMin + 1},
		"MoveSegment": {func(e *encoder) { e.moveSourceState(msg.MoveSourceState{Segments: make([]msg.MoveSegment, 1)}) },
			moveSegmentBytesMin + 9},
		"MoveLease": {func(e *encoder) { e.moveSourceState(msg.MoveSourceState{Leases: make([]msg.MoveLease, 1)}) },
			moveLeaseBytesMin + 9},
		"corrupt offset": {func(e *encoder) { e.moveSourceState(msg.MoveSourceState{CorruptOffsets: make([]uint64, 1)}) },
			corruptOffsetBytesMin + 9},
		"PeerAddress": {func(e *encoder) { e.peerAddresses(make([]msg.PeerAddress, 1)) }, peerAddressBytesMin + 1},
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
	require.LessOrEqual(t, len(e.buf), consumedMessagesBytes([]msg.Message{message}))
}

// TestWiretestBoundsAgree: the bounds wiretest restates are the codec's.
func TestWiretestBoundsAgree(t *testing.T) {
	require.Equal(t, NodeIDBytesMax, wiretest.NodeIDBytesMax)
	require.Equal(t, ReceiptHandleBytesMax, wiretest.ReceiptHandleBytesMax)
	require.Equal(t, ErrorMessageBytesMax, wiretest.ErrorMessageBytesMax)
	require.Equal(t, AddressBytesMax, wiretest.AddressBytesMax)
	require.Equal(t, LabelBytesMax, wiretest.LabelBytesMax)
	require.Equal(t, SchemaBytesMax, wiretest.SchemaBytesMax)
}

// TestBoundRelations: the relations between bounds the codec relies on.
func TestBoundRelations(t *testing.T) {
	require.Greater(t, RaftMessageBytesMax, 0)
	require.LessOrEqual(t, uint64(FrameBytesMax), uint64(1<<32-1), "the frame length field is 32 bits")
	require.GreaterOrEqual(t, FrameBytesMax, msg.ProduceBatchBytesMax+RecordsMax*(KeyBytesMax+produceRecordFieldsBytesMax))
	require.Less(t, len(errorMessageCutSuffix), ErrorMessageBytesMax)
	require.Less(t, ChunkBytesMax, FrameBytesMax-envelopeHeaderBytesMax)
	require.LessOrEqual(t, meta.SnapshotMessageBytesMax, RaftMessageBytesMax, "the metastore sends no snapshot the codec cannot carry")
}

// TestChunkBytesMaxCoversStorage: every chunk size a valid log config may
// have is within ChunkBytesMax, so the codec carries any chunk a source
// reads: storage refuses a config whose ChunkBytesMax is over this bound,
// and accepts the default and one at this bound.
func TestChunkBytesMaxCoversStorage(t *testing.T) {
	config := storage.DefaultLogConfig()
	require.NoError(t, config.Validate())
	require.LessOrEqual(t, config.ChunkBytesMax, ChunkBytesMax)
	config.ChunkBytesMax = ChunkBytesMax
	require.NoError(t, config.Validate(), "storage accepts chunks of ChunkBytesMax")
	config.ChunkBytesMax = ChunkBytesMax + 1
	err := config.Validate()
	require.ErrorIs(t, err, storage.ErrInvalidConfig, "storage accepts chunks over wire.ChunkBytesMax")
	require.Contains(t, err.Error(), "ChunkBytesMax")
}

// TestCorruptOffsetsMaxCoversStorage: a source lists at most its log's
// CorruptOffsetsReportedMax corrupt offsets, and storage refuses a config
// whose bound is over CorruptOffsetsMax, so the codec carries any list.
func TestCorruptOffsetsMaxCoversStorage(t *testing.T) {
	config := storage.DefaultLogConfig()
	require.LessOrEqual(t, config.CorruptOffsetsReportedMax, CorruptOffsetsMax)
	config.CorruptOffsetsReportedMax = CorruptOffsetsMax
	require.NoError(t, config.Validate(), "storage accepts a list of CorruptOffsetsMax")
	config.CorruptOffsetsReportedMax = CorruptOffsetsMax + 1
	err := config.Validate()
	require.ErrorIs(t, err, storage.ErrInvalidConfig, "storage lists more corrupt offsets than wire.CorruptOffsetsMax")
	require.Contains(t, err.Error(), "CorruptOffsetsReportedMax")
}

// TestTypeNumbersAreUnique reads types.go: every typeNumber constant has
// its own value, within the range of its block (the const blocks are, in
// order, peer messages 1-15, requests 16-47 and results 48-95).
func TestTypeNumbersAreUnique(t *testing.T) {
	fileSet := token.NewFileSet()
	file, err := parser.ParseFile(fileSet, "types.go", nil, 0)
	require.NoError(t, err)
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	_, err = (&types.Config{}).Check("wire", fileSet, []*ast.File{file}, info)
	require.NoError(t, err)
	ranges := [][2]uint64{{1, 15}, {16, 47}, {48, 95}}
	seen := map[uint64]string{}
	block := 0
	for _, decl := range file.Decls {
		general, ok := decl.(*ast.GenDecl)
		if !ok || general.Tok != token.CONST {
			continue
		}
		require.Less(t, block, len(ranges), "types.go has more const blocks than ranges")
		for _, spec := range general.Specs {
			for _, ident := range spec.(*ast.ValueSpec).Names {
				value, _ := constant.Uint64Val(info.Defs[ident].(*types.Const).Val())
				require.NotContains(t, seen, value, "%s and %s share type number %d", ident.Name, seen[value], value)
				require.True(t, value >= ranges[block][0] && value <= ranges[block][1], "%s = %d outside %v", ident.Name, value, ranges[block])
				seen[value] = ident.Name
			}
		}
		block++
	}
	require.Len(t, seen, 11+19+14, "type numbers: 11 messages, 19 requests, 14 results")
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
