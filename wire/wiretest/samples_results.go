package wiretest

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"narad/msg"
	"narad/storage"
)

func resultSamples() []NamedResult {
	var samples []NamedResult
	samples = append(samples, topicResultSamples()...)
	samples = append(samples, dataResultSamples()...)
	samples = append(samples, moveResultSamples()...)
	return append(samples, clusterResultSamples()...)
}

func topicResultSamples() []NamedResult {
	return []NamedResult{
		{"DeleteTopic/nil", nil},
		{"TopicInfo/zero", msg.TopicInfo{}},
		{"TopicInfo/max", MaxTopicInfo()},
		{"TopicInfo/child", msg.TopicInfo{Name: "audit", Partitions: 3, Role: "child", Parent: "orders",
			AttachEpoch: "67048ff38f82db77", FanoutDelayMs: 60_000}},
		{"ChildrenResult/empty", msg.ChildrenResult{Parent: "orders", Children: []msg.ChildLag{}}},
		{"ChildrenResult/some", msg.ChildrenResult{Parent: MaxTopic(), Children: []msg.ChildLag{
			{Name: "audit", DelayMs: 60_000, LagMessages: 12, LagComplete: true},
			{Name: MaxTopic(), DelayMs: math.MinInt64, LagMessages: math.MaxUint64}, {}}}},
		{"TopicPage/empty", msg.TopicPage{Topics: []msg.TopicInfo{}}},
		{"TopicPage/full", msg.TopicPage{Topics: topicInfos(msg.TopicsPageMax), NextPageToken: MaxTopic()}},
		{"TopicDetail/no-stats", msg.TopicDetail{TopicInfo: MaxTopicInfo(), PartitionStats: []msg.PartitionStats{}}},
		{"TopicDetail/stats", msg.TopicDetail{TopicInfo: msg.TopicInfo{Name: "orders", Partitions: 3}, PartitionStats: []msg.PartitionStats{
			{}, MaxPartitionStats(), {Index: 2, Segments: 1, NextOffset: 10, HighWatermark: 9, OwnerNode: "n1", Available: true, InFlight: -1},
		}}},
	}
}

func dataResultSamples() []NamedResult {
	return []NamedResult{
		{"ProduceResult/zero", msg.ProduceResult{}},
		{"ProduceResult/single", msg.ProduceResult{Records: []msg.Placement{{Partition: 2, Offset: 41}}}},
		{"ProduceResult/max", msg.ProduceResult{Records: placements(msg.ProduceBatchRecordsMax), Batch: true}},
		{"ConsumeResult/empty", msg.ConsumeResult{Messages: []msg.Message{}}},
		{"ConsumeResult/empty-batch", msg.ConsumeResult{Messages: []msg.Message{}, Batch: true}},
		{"ConsumeResult/max-message", msg.ConsumeResult{Messages: []msg.Message{MaxMessage()}}},
		{"ConsumeResult/full-batch", msg.ConsumeResult{Messages: messages(msg.ConsumeBatchMax, 64), Batch: true}},
		{"ReplayResult/nil", msg.ReplayResult{}},
		{"ReplayResult/zero-message", msg.ReplayResult{Message: &msg.Message{}}},
		{"ReplayResult/message", msg.ReplayResult{Message: &msg.Message{Topic: "orders", Partition: 1, Offset: 5,
			Payload: []byte("hello"), TimestampMs: 1_700_000_000_000}}},
		{"AckResult/zero", msg.AckResult{}},
		{"AckResult/every-code", msg.AckResult{Results: ackItems(), Batch: true}},
		{"AckResult/max", msg.AckResult{Results: ackItemsMax(msg.AckBatchHandlesMax), Batch: true}},
	}
}

func clusterResultSamples() []NamedResult {
	return []NamedResult{
		{"MembersResult/empty", msg.MembersResult{Members: []msg.Member{}}},
		{"MembersResult/some", msg.MembersResult{Members: []msg.Member{
			{ID: "n1", Addr: "10.0.0.1:7942", Status: "alive", OwnedPartitions: 12},
			{ID: strings.Repeat("i", NodeIDBytesMax), Addr: strings.Repeat("a", AddressBytesMax),
				Status: strings.Repeat("s", LabelBytesMax), Draining: true, Voter: true, DiskLow: true, OwnedPartitions: math.MaxInt, OutboundMoves: math.MinInt, InboundMoves: math.MaxInt},
			{},
		}}},
		{"MovesResult/empty", msg.MovesResult{Moves: []msg.Move{}}},
		{"MovesResult/some", msg.MovesResult{Moves: []msg.Move{
			{Topic: "orders", Partition: 1, From: "n1", To: "n2", Phase: "catch-up", BytesCopied: 1 << 20, BytesTotal: 1 << 30, StartedAtMs: 1},
			{Topic: MaxTopic(), Partition: math.MaxInt, From: strings.Repeat("f", NodeIDBytesMax), To: strings.Repeat("t", NodeIDBytesMax),
				Phase: strings.Repeat("p", LabelBytesMax), BytesCopied: math.MaxInt64, BytesTotal: math.MinInt64, StartedAtMs: -1},
			{},
		}}},
	}
}

// MaxTopicInfo is a TopicInfo with every field at an extreme.
func MaxTopicInfo() msg.TopicInfo {
	return msg.TopicInfo{Name: MaxTopic(), Partitions: math.MaxInt, RetentionMs: math.MaxInt64,
		VisibilityTimeoutMs: math.MinInt64, InFlightMax: math.MaxInt, AckedAheadMax: math.MinInt,
		CreatedAt: math.MaxInt64, Owner: strings.Repeat("o", NodeIDBytesMax), SchemaVersion: math.MaxInt,
		MaxDeliveries: math.MinInt, DeadLetterTopic: MaxTopic(),
		Role: strings.Repeat("r", LabelBytesMax), Children: maxChildren(), Parent: MaxTopic(),
		AttachEpoch: strings.Repeat("e", LabelBytesMax), FanoutDelayMs: math.MinInt64}
}

// maxChildren is the longest list of children, each name at its bound.
func maxChildren() []string {
	names := make([]string, msg.FanoutChildrenMax)
	for i := range names {
		names[i] = fmt.Sprintf("%03d", i) + MaxTopic()[3:]
	}
	return names
}

// MaxPartitionStats is a PartitionStats with every field at an extreme.
func MaxPartitionStats() msg.PartitionStats {
	return msg.PartitionStats{Index: math.MaxInt, Segments: math.MaxInt, OldestOffset: math.MaxUint64,
		NextOffset: math.MaxUint64, HighWatermark: math.MaxUint64, SizeBytes: math.MaxInt64,
		OldestSegmentAt: math.MinInt64, OwnerNode: strings.Repeat("o", NodeIDBytesMax), Available: true,
		Committed: math.MaxUint64, InFlight: math.MaxInt}
}

// MaxMessage is a consumed message with every field at its bound.
func MaxMessage() msg.Message {
	return msg.Message{Topic: MaxTopic(), Partition: math.MaxInt, Offset: math.MaxUint64,
		Key: bytes.Repeat([]byte{1}, msg.KeyBytesMax), Payload: bytes.Repeat([]byte{2}, msg.MessageBytesMax),
		TimestampMs: math.MinInt64, ReceiptHandle: MaxHandle(), DeliveryCount: math.MaxUint32,
		DeadLetter: &msg.DeadLetterOrigin{Topic: MaxTopic(), Partition: math.MinInt, Offset: math.MaxUint64, DeliveryCount: math.MaxUint32}}
}

func topicInfos(n int) []msg.TopicInfo {
	infos := make([]msg.TopicInfo, n)
	for i := range infos {
		infos[i] = msg.TopicInfo{Name: fmt.Sprintf("topic-%04d", i), Partitions: 3, RetentionMs: 3_600_000,
			VisibilityTimeoutMs: 30_000, InFlightMax: 1024, AckedAheadMax: 1024, CreatedAt: int64(i)}
	}
	return infos
}

func placements(n int) []msg.Placement {
	list := make([]msg.Placement, n)
	for i := range list {
		list[i] = msg.Placement{Partition: i % 7, Offset: uint64(i) << 20}
	}
	return list
}

// messages returns n consumed messages with payloads of payloadBytes.
func messages(n, payloadBytes int) []msg.Message {
	list := make([]msg.Message, n)
	for i := range list {
		list[i] = msg.Message{Topic: "orders", Partition: i % 3, Offset: uint64(i),
			Payload: bytes.Repeat([]byte{byte(i)}, payloadBytes), TimestampMs: 1_700_000_000_000 + int64(i),
			ReceiptHandle: fmt.Sprintf("%d:%d:%d", i%3, i, i*31), DeliveryCount: uint32(i%4 + 1)}
		if i%3 == 0 {
			list[i].Key = []byte(fmt.Sprintf("key-%d", i))
		}
	}
	return list
}

// ackItems has a success and one failure of every code.
func ackItems() []msg.AckItemResult {
	items := []msg.AckItemResult{{Handle: "0:1:2"}}
	for code := msg.CodeInvalid; code <= msg.CodeInternal; code++ {
		items = append(items, msg.AckItemResult{Handle: fmt.Sprintf("%d:1:2", code), Err: &msg.Error{Code: code, Message: "no"}})
	}
	return items
}

func ackItemsMax(n int) []msg.AckItemResult {
	items := make([]msg.AckItemResult, n)
	for i := range items {
		items[i].Handle = MaxHandle()
		if i%2 == 1 {
			items[i].Err = msg.Gone("%s", strings.Repeat("x", ErrorMessageBytesMax))
		}
	}
	return items
}

func moveResultSamples() []NamedResult {
	return []NamedResult{
		{"MoveSourceState/zero", msg.MoveSourceState{}},
		{"MoveSourceState/max", msg.MoveSourceState{Segments: []msg.MoveSegment{MaxMoveSegment()},
			HWM: math.MaxUint64, Committed: math.MaxUint64, Frozen: true, NextUndelivered: math.MaxUint64,
			Leases: []msg.MoveLease{{Offset: 3, DeliveryCount: 2}, {Offset: 4}, {Offset: 5, DeliveryCount: 1, ReturnedUnseen: true}, {Offset: math.MaxUint64, DeliveryCount: math.MaxUint32}}}},
		{"MoveSourceState/min", msg.MoveSourceState{Segments: []msg.MoveSegment{{}, {Base: 1, Size: math.MinInt64}}}},
		{"MoveSourceState/many", msg.MoveSourceState{Segments: moveSegments(1000), HWM: 1 << 40, Committed: 1 << 39}},
		{"MoveSourceState/cursors", msg.MoveSourceState{HWM: 9, Cursors: []msg.FanoutCursor{
			{Child: "audit", Epoch: 0x67048ff38f82db77, NextOffset: 7}, {Child: MaxTopic(), Epoch: math.MaxUint64, NextOffset: math.MaxUint64}, {}}}},
		{"MoveSourceState/corrupt", msg.MoveSourceState{HWM: 90, CorruptCount: 1 << 40, CorruptOffsets: []uint64{0, 17, math.MaxUint64}}},
		{"MoveChunk/zero", msg.MoveChunk{}},
		{"MoveChunk/small", msg.MoveChunk{Data: []byte{0, 1, 0xff}}},
		{"MoveChunk/default-max", msg.MoveChunk{Data: bytes.Repeat([]byte{0x5a}, storage.DefaultLogConfig().ChunkBytesMax)}},
		{"MoveVerdict/zero", msg.MoveVerdict{}},
		{"MoveVerdict/max", msg.MoveVerdict{Owner: MaxNodeID(), Target: strings.Repeat("g", NodeIDBytesMax), AppliedIndex: math.MaxUint64}},
		{"MoveVerdict/no-target", msg.MoveVerdict{Owner: "n1", AppliedIndex: 1}},
	}
}

// MaxMoveSegment is a MoveSegment with every field at an extreme.
func MaxMoveSegment() msg.MoveSegment {
	return msg.MoveSegment{Base: math.MaxUint64, Size: math.MaxInt64, Sealed: true}
}

// moveSegments returns n consecutive segments of a log, the last unsealed.
func moveSegments(n int) []msg.MoveSegment {
	const segmentBytes = 64 << 20
	list := make([]msg.MoveSegment, n)
	for i := range list {
		list[i] = msg.MoveSegment{Base: uint64(i) * 1000, Size: segmentBytes - int64(i), Sealed: i < n-1}
	}
	return list
}
