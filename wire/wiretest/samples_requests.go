package wiretest

import (
	"bytes"
	"math"
	"strings"

	"narad/msg"
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
		NamedRequest{"ListMembers", msg.ListMembers{}},
		NamedRequest{"ListMoves", msg.ListMoves{}},
	)
}

func topicRequestSamples() []NamedRequest {
	zero, zero64 := 0, int64(0)
	maxInt, minInt64 := math.MaxInt, int64(math.MinInt64)
	return []NamedRequest{
		{"CreateTopic/zero", msg.CreateTopic{}},
		{"CreateTopic/max", msg.CreateTopic{Name: MaxTopic(), Partitions: math.MaxInt, RetentionMs: math.MaxInt64,
			VisibilityTimeoutMs: math.MaxInt64, InFlightMax: math.MaxInt, AckedAheadMax: math.MaxInt,
			Schema: bytes.Repeat([]byte("s"), SchemaBytesMax), CreatedBy: strings.Repeat("u", 64), CreatorCreatedAtMs: math.MinInt64,
			MaxDeliveries: math.MaxInt, DeadLetterTopic: MaxTopic(),
			Parent: MaxTopic(), FanoutDelayMs: math.MaxInt64}},
		{"CreateTopic/child", msg.CreateTopic{Name: "late", Parent: "orders", FanoutDelayMs: 60_000, ExpectedOwner: "ann"}},
		{"CreateTopic/min", msg.CreateTopic{Name: "t", Partitions: math.MinInt, RetentionMs: math.MinInt64,
			VisibilityTimeoutMs: -1, InFlightMax: math.MinInt, AckedAheadMax: -1}},
		{"ListTopics/zero", msg.ListTopics{}},
		{"ListTopics/max", msg.ListTopics{Limit: msg.TopicsPageMax, PageToken: MaxTopic()}},
		{"GetTopic/all-partitions", msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}},
		{"GetTopic/max", msg.GetTopic{Name: MaxTopic(), Partition: math.MaxInt}},
		{"GetTopic/confirm", msg.GetTopic{Name: "orders", Partition: msg.PartitionNone, Confirm: true}},
		{"AlterTopic/all-nil", msg.AlterTopic{Name: "orders"}},
		{"AlterTopic/all-zero", msg.AlterTopic{Name: "orders", Partitions: &zero, RetentionMs: &zero64,
			VisibilityTimeoutMs: &zero64, InFlightMax: &zero, AckedAheadMax: &zero}},
		{"AlterTopic/extremes", msg.AlterTopic{Name: MaxTopic(), Partitions: &maxInt, RetentionMs: &minInt64,
			InFlightMax: &maxInt, Schema: bytes.Repeat([]byte("s"), SchemaBytesMax)}},
		{"AlterTopic/schema", msg.AlterTopic{Name: "orders", Schema: []byte(`{"type":"object"}`)}},
		{"AlterTopic/guarded", msg.AlterTopic{Name: "orders", RetentionMs: &zero64, ExpectedOwner: MaxNodeID()}},
		{"AlterTopic/dead-letters", msg.AlterTopic{Name: "orders", MaxDeliveries: &maxInt, DeadLetterTopic: new(MaxTopic())}},
		{"AlterTopic/dead-letters-off", msg.AlterTopic{Name: "orders", MaxDeliveries: &zero, DeadLetterTopic: new("")}},
		{"DeleteTopic/zero", msg.DeleteTopic{}},
		{"DeleteTopic/max", msg.DeleteTopic{Name: MaxTopic(), ExpectedOwner: MaxNodeID()}},
		{"AttachChild/zero", msg.AttachChild{}},
		{"AttachChild/max", msg.AttachChild{Parent: MaxTopic(), Child: MaxTopic(), DelayMs: math.MinInt64, ExpectedOwner: MaxNodeID()}},
		{"DetachChild/some", msg.DetachChild{Parent: "orders", Child: "audit", ExpectedOwner: "ann"}},
		{"ListChildren/max", msg.ListChildren{Parent: MaxTopic()}},
	}
}

func dataRequestSamples() []NamedRequest {
	return []NamedRequest{
		{"Produce/zero", msg.Produce{}},
		{"Produce/single-keyless", msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{
			{Partition: msg.PartitionNone, Payload: []byte(`{"id":1}`)}}}},
		{"Produce/empty-payload", msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k")}}}},
		{"Produce/max-record", msg.Produce{Topic: MaxTopic(), Records: []msg.ProduceRecord{{
			Key: bytes.Repeat([]byte{0xff}, msg.KeyBytesMax), Partition: math.MaxInt,
			Payload: bytes.Repeat([]byte{0}, msg.MessageBytesMax),
			Origin:  &msg.DeadLetterOrigin{Topic: MaxTopic(), Partition: math.MaxInt, Offset: math.MaxUint64, DeliveryCount: math.MaxUint32}}}}},
		{"Produce/dead-letter", msg.Produce{Topic: "orders.dead", Batch: true, Records: []msg.ProduceRecord{
			{Key: []byte("k"), Partition: msg.PartitionNone, Payload: []byte("poison"),
				Origin: &msg.DeadLetterOrigin{Topic: "orders", Partition: 2, Offset: 17, DeliveryCount: 5}}}}},
		{"Produce/max-batch", msg.Produce{Topic: "orders", Batch: true, Records: produceBatch(msg.ProduceBatchRecordsMax, 8)}},
		{"Produce/fan-out", msg.Produce{Topic: "orders.later", Batch: true, FanoutEpoch: math.MaxUint64, Records: []msg.ProduceRecord{
			{Key: []byte("k"), Partition: 1, Payload: []byte("copied")}}}},
		{"Produce/placed-part", msg.Produce{Topic: "orders", Batch: true, SchemaID: 7, TopicIncarnation: math.MaxUint64, TopicCreatedAtMs: math.MinInt64,
			Records: []msg.ProduceRecord{{Partition: 2, Payload: []byte(`{"id":1}`)}}}},
		{"Consume/single", msg.Consume{Topic: "orders", Partition: msg.PartitionNone}},
		{"Consume/batch", msg.Consume{Topic: MaxTopic(), Partition: math.MaxInt, Max: msg.ConsumeBatchMax, WaitMs: math.MaxInt64,
			TopicIncarnation: math.MaxUint64, TopicCreatedAtMs: math.MaxInt64}},
		{"Replay/zero", msg.Replay{}},
		{"Replay/max", msg.Replay{Topic: MaxTopic(), Partition: math.MaxInt, Offset: math.MaxUint64, TopicIncarnation: math.MaxUint64, TopicCreatedAtMs: math.MinInt64}},
		{"Ack/commit", msg.Ack{Topic: "orders", Handles: []string{"1:2:3"}, Action: msg.AckCommit}},
		{"Ack/extend", msg.Ack{Topic: "orders", Handles: []string{MaxHandle()}, Action: msg.AckExtend, Batch: true}},
		{"Ack/nack", msg.Ack{Topic: "orders", Handles: []string{""}, Action: msg.AckNack}},
		{"Ack/return", msg.Ack{Topic: "orders", Handles: []string{""}, Action: msg.AckReturn, Batch: true}},
		{"Ack/max-batch", msg.Ack{Topic: MaxTopic(), Handles: handles(msg.AckBatchHandlesMax), Action: msg.AckNack, Batch: true}},
		{"Ack/no-handles", msg.Ack{Topic: "orders"}},
	}
}

// produceBatch returns n records with keys, partitions and payloads of
// payloadBytes bytes, all different.
func produceBatch(n, payloadBytes int) []msg.ProduceRecord {
	records := make([]msg.ProduceRecord, n)
	for i := range records {
		records[i] = msg.ProduceRecord{Partition: i%5 - 1, Payload: bytes.Repeat([]byte{byte(i)}, payloadBytes)}
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
		{"MoveStatus/zero", msg.MoveStatus{}},
		{"MoveStatus/max", msg.MoveStatus{MoveOf: maxMoveOf()}},
		{"MoveStatus/min", msg.MoveStatus{MoveOf: minMoveOf()}},
		{"MoveRead/zero", msg.MoveRead{}},
		{"MoveRead/max", msg.MoveRead{MoveOf: maxMoveOf(), Base: math.MaxUint64, Position: math.MaxInt64}},
		{"MoveRead/min", msg.MoveRead{MoveOf: minMoveOf(), Base: 1, Position: math.MinInt64}},
		{"MoveFreeze/zero", msg.MoveFreeze{}},
		{"MoveFreeze/max", msg.MoveFreeze{MoveOf: maxMoveOf()}},
		{"MoveFreeze/min", msg.MoveFreeze{MoveOf: minMoveOf()}},
		{"MoveSweepCheck/zero", msg.MoveSweepCheck{}},
		{"MoveSweepCheck/max", msg.MoveSweepCheck{Topic: MaxTopic(), Partition: math.MaxInt}},
		{"MoveSweepCheck/min", msg.MoveSweepCheck{Topic: "t", Partition: math.MinInt}},
		{"Decommission/zero", msg.Decommission{}},
		{"Decommission/cancel-max", msg.Decommission{ID: MaxNodeID(), Cancel: true}},
	}
}

// maxMoveOf and minMoveOf name a move with every field at its bound.
func maxMoveOf() msg.MoveOf {
	return msg.MoveOf{Topic: MaxTopic(), Partition: math.MaxInt, Target: MaxNodeID(), MoveStartedAtMs: math.MaxInt64,
		TopicIncarnation: math.MaxUint64, TopicCreatedAtMs: math.MaxInt64}
}

func minMoveOf() msg.MoveOf {
	return msg.MoveOf{Topic: "t", Partition: math.MinInt, Target: "n", MoveStartedAtMs: math.MinInt64, TopicIncarnation: 1, TopicCreatedAtMs: math.MinInt64}
}
