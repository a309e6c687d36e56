package wiretest

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"narad/node"
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
		{"TopicInfo/zero", node.TopicInfo{}},
		{"TopicInfo/max", MaxTopicInfo()},
		{"TopicPage/empty", node.TopicPage{Topics: []node.TopicInfo{}}},
		{"TopicPage/full", node.TopicPage{Topics: topicInfos(node.TopicsPageMax), NextPageToken: MaxTopic()}},
		{"TopicDetail/no-stats", node.TopicDetail{TopicInfo: MaxTopicInfo(), PartitionStats: []node.PartitionStats{}}},
		{"TopicDetail/stats", node.TopicDetail{TopicInfo: node.TopicInfo{Name: "orders", Partitions: 3}, PartitionStats: []node.PartitionStats{
			{}, MaxPartitionStats(), {Index: 2, Segments: 1, NextOffset: 10, HighWatermark: 9, OwnerNode: "n1", Available: true, InFlight: -1},
		}}},
	}
}

func dataResultSamples() []NamedResult {
	return []NamedResult{
		{"ProduceResult/zero", node.ProduceResult{}},
		{"ProduceResult/single", node.ProduceResult{Records: []node.Placement{{Partition: 2, Offset: 41}}}},
		{"ProduceResult/max", node.ProduceResult{Records: placements(node.ProduceBatchRecordsMax), Batch: true}},
		{"ConsumeResult/empty", node.ConsumeResult{Messages: []node.Message{}}},
		{"ConsumeResult/empty-batch", node.ConsumeResult{Messages: []node.Message{}, Batch: true}},
		{"ConsumeResult/max-message", node.ConsumeResult{Messages: []node.Message{MaxMessage()}}},
		{"ConsumeResult/full-batch", node.ConsumeResult{Messages: messages(node.ConsumeBatchMax, 64), Batch: true}},
		{"ReplayResult/nil", node.ReplayResult{}},
		{"ReplayResult/zero-message", node.ReplayResult{Message: &node.Message{}}},
		{"ReplayResult/message", node.ReplayResult{Message: &node.Message{Topic: "orders", Partition: 1, Offset: 5,
			Payload: []byte("hello"), TimestampMs: 1_700_000_000_000}}},
		{"AckResult/zero", node.AckResult{}},
		{"AckResult/every-code", node.AckResult{Results: ackItems(), Batch: true}},
		{"AckResult/max", node.AckResult{Results: ackItemsMax(node.AckBatchHandlesMax), Batch: true}},
	}
}

func clusterResultSamples() []NamedResult {
	return []NamedResult{
		{"MembersResult/empty", node.MembersResult{Members: []node.Member{}}},
		{"MembersResult/some", node.MembersResult{Members: []node.Member{
			{ID: "n1", Addr: "10.0.0.1:7942", Status: "alive", OwnedPartitions: 12},
			{ID: strings.Repeat("i", NodeIDBytesMax), Addr: strings.Repeat("a", AddressBytesMax),
				Status: strings.Repeat("s", LabelBytesMax), Draining: true, Voter: true, OwnedPartitions: math.MaxInt, OutboundMoves: math.MinInt},
			{},
		}}},
		{"MovesResult/empty", node.MovesResult{Moves: []node.Move{}}},
		{"MovesResult/some", node.MovesResult{Moves: []node.Move{
			{Topic: "orders", Partition: 1, From: "n1", To: "n2", Phase: "catch-up", BytesCopied: 1 << 20, BytesTotal: 1 << 30, StartedAtMs: 1},
			{Topic: MaxTopic(), Partition: math.MaxInt, From: strings.Repeat("f", NodeIDBytesMax), To: strings.Repeat("t", NodeIDBytesMax),
				Phase: strings.Repeat("p", LabelBytesMax), BytesCopied: math.MaxInt64, BytesTotal: math.MinInt64, StartedAtMs: -1},
			{},
		}}},
	}
}

// MaxTopicInfo is a TopicInfo with every field at an extreme.
func MaxTopicInfo() node.TopicInfo {
	return node.TopicInfo{Name: MaxTopic(), Partitions: math.MaxInt, RetentionMs: math.MaxInt64,
		VisibilityTimeoutMs: math.MinInt64, InFlightMax: math.MaxInt, AckedAheadMax: math.MinInt,
		CreatedAt: math.MaxInt64, Owner: strings.Repeat("o", NodeIDBytesMax), SchemaVersion: math.MaxInt}
}

// MaxPartitionStats is a PartitionStats with every field at an extreme.
func MaxPartitionStats() node.PartitionStats {
	return node.PartitionStats{Index: math.MaxInt, Segments: math.MaxInt, OldestOffset: math.MaxUint64,
		NextOffset: math.MaxUint64, HighWatermark: math.MaxUint64, SizeBytes: math.MaxInt64,
		OldestSegmentAt: math.MinInt64, OwnerNode: strings.Repeat("o", NodeIDBytesMax), Available: true,
		Committed: math.MaxUint64, InFlight: math.MaxInt}
}

// MaxMessage is a consumed message with every field at its bound.
func MaxMessage() node.Message {
	return node.Message{Topic: MaxTopic(), Partition: math.MaxInt, Offset: math.MaxUint64,
		Key: bytes.Repeat([]byte{1}, node.KeyBytesMax), Payload: bytes.Repeat([]byte{2}, node.MessageBytesMax),
		TimestampMs: math.MinInt64, ReceiptHandle: MaxHandle(), DeliveryCount: math.MaxUint32}
}

func topicInfos(n int) []node.TopicInfo {
	infos := make([]node.TopicInfo, n)
	for i := range infos {
		infos[i] = node.TopicInfo{Name: fmt.Sprintf("topic-%04d", i), Partitions: 3, RetentionMs: 3_600_000,
			VisibilityTimeoutMs: 30_000, InFlightMax: 1024, AckedAheadMax: 1024, CreatedAt: int64(i)}
	}
	return infos
}

func placements(n int) []node.Placement {
	list := make([]node.Placement, n)
	for i := range list {
		list[i] = node.Placement{Partition: i % 7, Offset: uint64(i) << 20}
	}
	return list
}

// messages returns n consumed messages with payloads of payloadBytes.
func messages(n, payloadBytes int) []node.Message {
	list := make([]node.Message, n)
	for i := range list {
		list[i] = node.Message{Topic: "orders", Partition: i % 3, Offset: uint64(i),
			Payload: bytes.Repeat([]byte{byte(i)}, payloadBytes), TimestampMs: 1_700_000_000_000 + int64(i),
			ReceiptHandle: fmt.Sprintf("%d:%d:%d", i%3, i, i*31), DeliveryCount: uint32(i%4 + 1)}
		if i%3 == 0 {
			list[i].Key = []byte(fmt.Sprintf("key-%d", i))
		}
	}
	return list
}

// ackItems has a success and one failure of every code.
func ackItems() []node.AckItemResult {
	items := []node.AckItemResult{{Handle: "0:1:2"}}
	for code := node.CodeInvalid; code <= node.CodeInternal; code++ {
		items = append(items, node.AckItemResult{Handle: fmt.Sprintf("%d:1:2", code), Err: &node.Error{Code: code, Message: "no"}})
	}
	return items
}

func ackItemsMax(n int) []node.AckItemResult {
	items := make([]node.AckItemResult, n)
	for i := range items {
		items[i].Handle = MaxHandle()
		if i%2 == 1 {
			items[i].Err = node.Gone("%s", strings.Repeat("x", ErrorMessageBytesMax))
		}
	}
	return items
}

func moveResultSamples() []NamedResult {
	return []NamedResult{
		{"MoveSourceState/zero", node.MoveSourceState{}},
		{"MoveSourceState/max", node.MoveSourceState{Segments: []node.MoveSegment{MaxMoveSegment()},
			HWM: math.MaxUint64, Committed: math.MaxUint64, Frozen: true}},
		{"MoveSourceState/min", node.MoveSourceState{Segments: []node.MoveSegment{{}, {Base: 1, Size: math.MinInt64}}}},
		{"MoveSourceState/many", node.MoveSourceState{Segments: moveSegments(1000), HWM: 1 << 40, Committed: 1 << 39}},
		{"MoveChunk/zero", node.MoveChunk{}},
		{"MoveChunk/small", node.MoveChunk{Data: []byte{0, 1, 0xff}}},
		{"MoveChunk/default-max", node.MoveChunk{Data: bytes.Repeat([]byte{0x5a}, storage.DefaultLogConfig().ChunkBytesMax)}},
		{"MoveVerdict/zero", node.MoveVerdict{}},
		{"MoveVerdict/max", node.MoveVerdict{Owner: MaxNodeID(), Target: strings.Repeat("g", NodeIDBytesMax), AppliedIndex: math.MaxUint64}},
		{"MoveVerdict/no-target", node.MoveVerdict{Owner: "n1", AppliedIndex: 1}},
	}
}

// MaxMoveSegment is a MoveSegment with every field at an extreme.
func MaxMoveSegment() node.MoveSegment {
	return node.MoveSegment{Base: math.MaxUint64, Size: math.MaxInt64, Sealed: true}
}

// moveSegments returns n consecutive segments of a log, the last unsealed.
func moveSegments(n int) []node.MoveSegment {
	const segmentBytes = 64 << 20
	list := make([]node.MoveSegment, n)
	for i := range list {
		list[i] = node.MoveSegment{Base: uint64(i) * 1000, Size: segmentBytes - int64(i), Sealed: i < n-1}
	}
	return list
}
