package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"narad/msg"
)

func BenchmarkDecodeProduceSingle(b *testing.B) {
	codec := newTestCodec()
	payload := strings.Repeat("x", 256)
	b.ReportAllocs()
	for b.Loop() {
		request := httptest.NewRequest("POST", "/v1/topics/orders/produce?key=user-7", strings.NewReader(payload))
		if _, failed := codec.Decode(request); failed != nil {
			b.Fatal(failed.Err)
		}
	}
}

func BenchmarkDecodeProduceBatch(b *testing.B) {
	codec := newTestCodec()
	body := strings.Repeat(`{"key":"user-7","payload":{"id":7,"name":"`+strings.Repeat("x", 200)+`"}}`+"\n", 1000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, failed := codec.Decode(batchRequest(body)); failed != nil {
			b.Fatal(failed.Err)
		}
	}
}

func BenchmarkEncodeConsumeBatch(b *testing.B) {
	messages := make([]msg.Message, msg.ConsumeBatchMax)
	for i := range messages {
		messages[i] = testMessage
	}
	request := msg.Consume{Topic: "orders", Partition: msg.PartitionNone, Max: msg.ConsumeBatchMax}
	reply := msg.Reply{Result: msg.ConsumeResult{Messages: messages, Batch: true}}
	b.ReportAllocs()
	for b.Loop() {
		Encode(request, reply)
	}
}

// BenchmarkDecodeBatchLine decodes the line of BenchmarkDecodeProduceBatch
// with the hand-rolled decoder and with the encoding/json one it replaced.
func BenchmarkDecodeBatchLine(b *testing.B) {
	line := []byte(`{"key":"user-7","payload":{"id":7,"name":"` + strings.Repeat("x", 200) + `"}}`)
	for _, decoder := range []struct {
		name   string
		decode func([]byte) (msg.ProduceRecord, error)
	}{{"handwritten", decodeBatchLine}, {"encoding-json", referenceDecodeBatchLine}} {
		b.Run(decoder.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decoder.decode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
