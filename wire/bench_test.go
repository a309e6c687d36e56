package wire_test

import (
	"bytes"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/msg"
	"narad/wire"
)

// benchmarkProduce is a forwarded batch produce of 1,000 records with
// 256-byte payloads and 16-byte keys.
func benchmarkProduce() msg.Envelope {
	records := make([]msg.ProduceRecord, 1000)
	for i := range records {
		records[i] = msg.ProduceRecord{Key: []byte(fmt.Sprintf("customer-%07d", i)), Partition: msg.PartitionNone,
			Payload: bytes.Repeat([]byte{byte(i)}, 256)}
	}
	request := msg.Produce{Topic: "orders", Records: records, Batch: true}
	return msg.Envelope{From: "node-1", To: "node-2", Message: msg.ForwardRequest{ID: 1 << 33, Request: request, LocalOnly: true}}
}

// benchmarkConsume is a forwarded reply of 100 consumed messages with
// 256-byte payloads.
func benchmarkConsume() msg.Envelope {
	messages := make([]msg.Message, 100)
	for i := range messages {
		messages[i] = msg.Message{Topic: "orders", Partition: i % 12, Offset: 1<<30 + uint64(i),
			Key: []byte(fmt.Sprintf("customer-%07d", i)), Payload: bytes.Repeat([]byte{byte(i)}, 256),
			TimestampMs: 1_700_000_000_000 + int64(i), ReceiptHandle: fmt.Sprintf("%d:%d:%d", i%12, 1<<30+i, 1<<40+i),
			DeliveryCount: 1}
	}
	reply := msg.Reply{ID: 77, Result: msg.ConsumeResult{Messages: messages, Batch: true}}
	return msg.Envelope{From: "node-2", To: "node-1", Message: msg.ForwardReply{ID: 1 << 33, Reply: reply}}
}

// benchmarkHeartbeat is a Raft heartbeat, of the messages a cluster at
// rest sends most, which the codec reads without protobuf.
func benchmarkHeartbeat() msg.Envelope {
	heartbeat := &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), To: proto.Uint64(2), From: proto.Uint64(1),
		Term: proto.Uint64(7), Commit: proto.Uint64(1 << 20)}
	return msg.Envelope{From: "node-1", To: "node-2", Message: msg.RaftMessage{Message: heartbeat}}
}

func BenchmarkForwardProduce1000(b *testing.B) { benchmarkRoundTrip(b, benchmarkProduce()) }

func BenchmarkRaftHeartbeat(b *testing.B) { benchmarkRoundTrip(b, benchmarkHeartbeat()) }

func BenchmarkForwardReplyConsume100(b *testing.B) { benchmarkRoundTrip(b, benchmarkConsume()) }

// benchmarkRoundTrip measures encode+decode of env, and each alone.
// Bytes per op are the encoded size.
func benchmarkRoundTrip(b *testing.B, env msg.Envelope) {
	encoded, err := wire.EncodeEnvelope(nil, env)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, len(encoded))
	b.Run("encode+decode", func(b *testing.B) {
		b.SetBytes(int64(len(encoded)))
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = wire.EncodeEnvelope(buf[:0], env)
			if _, err := wire.DecodeEnvelope(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(encoded)))
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = wire.EncodeEnvelope(buf[:0], env)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(encoded)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.DecodeEnvelope(encoded); err != nil {
				b.Fatal(err)
			}
		}
	})
}
