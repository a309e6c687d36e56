package wiretest

import (
	"bytes"
	"math"
	"strings"

	"narad/node"
)

// RequestSamples returns canonical requests of every type with edge values.
func RequestSamples() []NamedRequest { return requestSamples() }

// ResultSamples returns canonical results of every type with edge values.
func ResultSamples() []NamedResult { return resultSamples() }

func requestSamples() []NamedRequest {
	var samples []NamedRequest
	samples = append(samples, topicRequestSamples()...)
	samples = append(samples, dataRequestSamples()...)
	samples = append(samples, moveRequestSamples()...)
	return append(samples,
		NamedRequest{"ListMembers", node.ListMembers{}},
		NamedRequest{"ListMoves", node.ListMoves{}},
	)
}

func topicRequestSamples() []NamedRequest {
	zero, zero64 := 0, int64(0)
	maxInt, minInt64 := math.MaxInt, int64(math.MinInt64)
	return []NamedRequest{
		{"CreateTopic/zero", node.CreateTopic{}},
		{"CreateTopic/max", node.CreateTopic{Name: MaxTopic(), Partitions: math.MaxInt, RetentionMs: math.MaxInt64,
			VisibilityTimeoutMs: math.MaxInt64, InFlightMax: math.MaxInt, AckedAheadMax: math.MaxInt,
			Schema: bytes.Repeat([]byte("s"), SchemaBytesMax), CreatedBy: strings.Repeat("u", 64)}},
		{"CreateTopic/min", node.CreateTopic{Name: "t", Partitions: math.MinInt, RetentionMs: math.MinInt64,
			VisibilityTimeoutMs: -1, InFlightMax: math.MinInt, AckedAheadMax: -1}},
		{"ListTopics/zero", node.ListTopics{}},
		{"ListTopics/max", node.ListTopics{Limit: node.TopicsPageMax, PageToken: MaxTopic()}},
		{"GetTopic/all-partitions", node.GetTopic{Name: "orders", Partition: node.PartitionNone}},
		{"GetTopic/max", node.GetTopic{Name: MaxTopic(), Partition: math.MaxInt}},
		{"AlterTopic/all-nil", node.AlterTopic{Name: "orders"}},
		{"AlterTopic/all-zero", node.AlterTopic{Name: "orders", Partitions: &zero, RetentionMs: &zero64,
			VisibilityTimeoutMs: &zero64, InFlightMax: &zero, AckedAheadMax: &zero}},
		{"AlterTopic/extremes", node.AlterTopic{Name: MaxTopic(), Partitions: &maxInt, RetentionMs: &minInt64,
			InFlightMax: &maxInt, Schema: bytes.Repeat([]byte("s"), SchemaBytesMax)}},
		{"AlterTopic/schema", node.AlterTopic{Name: "orders", Schema: []byte(`{"type":"object"}`)}},
		{"DeleteTopic/zero", node.DeleteTopic{}},
		{"DeleteTopic/max", node.DeleteTopic{Name: MaxTopic()}},
	}
}

func dataRequestSamples() []NamedRequest {
	return []NamedRequest{
		{"Produce/zero", node.Produce{}},
		{"Produce/single-keyless", node.Produce{Topic: "orders", Records: []node.ProduceRecord{
			{Partition: node.PartitionNone, Payload: []byte(`{"id":1}`)}}}},
		{"Produce/empty-payload", node.Produce{Topic: "orders", Records: []node.ProduceRecord{{Key: []byte("k")}}}},
		{"Produce/max-record", node.Produce{Topic: MaxTopic(), Records: []node.ProduceRecord{{
			Key: bytes.Repeat([]byte{0xff}, node.KeyBytesMax), Partition: math.MaxInt,
			Payload: bytes.Repeat([]byte{0}, node.MessageBytesMax)}}}},
		{"Produce/max-batch", node.Produce{Topic: "orders", Batch: true, Records: produceBatch(node.ProduceBatchRecordsMax, 8)}},
		{"Consume/single", node.Consume{Topic: "orders", Partition: node.PartitionNone}},
		{"Consume/batch", node.Consume{Topic: MaxTopic(), Partition: math.MaxInt, Max: node.ConsumeBatchMax, WaitMs: math.MaxInt64}},
		{"Replay/zero", node.Replay{}},
		{"Replay/max", node.Replay{Topic: MaxTopic(), Partition: math.MaxInt, Offset: math.MaxUint64}},
		{"Ack/commit", node.Ack{Topic: "orders", Handles: []string{"1:2:3"}, Action: node.AckCommit}},
		{"Ack/extend", node.Ack{Topic: "orders", Handles: []string{MaxHandle()}, Action: node.AckExtend, Batch: true}},
		{"Ack/nack", node.Ack{Topic: "orders", Handles: []string{""}, Action: node.AckNack}},
		{"Ack/max-batch", node.Ack{Topic: MaxTopic(), Handles: handles(node.AckBatchHandlesMax), Action: node.AckNack, Batch: true}},
		{"Ack/no-handles", node.Ack{Topic: "orders"}},
	}
}

// produceBatch returns n records with keys, partitions and payloads of
// payloadBytes bytes, all different.
func produceBatch(n, payloadBytes int) []node.ProduceRecord {
	records := make([]node.ProduceRecord, n)
	for i := range records {
		records[i] = node.ProduceRecord{Partition: i%5 - 1, Payload: bytes.Repeat([]byte{byte(i)}, payloadBytes)}
		if i%2 == 0 {
			records[i].Key = []byte(strings.Repeat("k", i%17+1))
		}
	}
	return records
}

func handles(n int) []string {
	list := make([]string, n)
	for i := range list {
		list[i] = strings.Repeat("7", i%ReceiptHandleBytesMax+1)
	}
	return list
}

func moveRequestSamples() []NamedRequest {
	return []NamedRequest{
		{"MoveStatus/zero", node.MoveStatus{}},
		{"MoveStatus/max", node.MoveStatus{Topic: MaxTopic(), Partition: math.MaxInt, Target: MaxNodeID(), MoveStartedAtMs: math.MaxInt64}},
		{"MoveStatus/min", node.MoveStatus{Topic: "t", Partition: math.MinInt, Target: "n", MoveStartedAtMs: math.MinInt64}},
		{"MoveRead/zero", node.MoveRead{}},
		{"MoveRead/max", node.MoveRead{Topic: MaxTopic(), Partition: math.MaxInt, Base: math.MaxUint64, Position: math.MaxInt64}},
		{"MoveRead/min", node.MoveRead{Topic: "t", Partition: math.MinInt, Base: 1, Position: math.MinInt64}},
		{"MoveFreeze/zero", node.MoveFreeze{}},
		{"MoveFreeze/max", node.MoveFreeze{Topic: MaxTopic(), Partition: math.MaxInt, Target: MaxNodeID(), MoveStartedAtMs: math.MaxInt64}},
		{"MoveFreeze/min", node.MoveFreeze{Topic: "t", Partition: math.MinInt, Target: "n", MoveStartedAtMs: math.MinInt64}},
		{"MoveSweepCheck/zero", node.MoveSweepCheck{}},
		{"MoveSweepCheck/max", node.MoveSweepCheck{Topic: MaxTopic(), Partition: math.MaxInt}},
		{"MoveSweepCheck/min", node.MoveSweepCheck{Topic: "t", Partition: math.MinInt}},
		{"Decommission/zero", node.Decommission{}},
		{"Decommission/cancel-max", node.Decommission{ID: MaxNodeID(), Cancel: true}},
	}
}
