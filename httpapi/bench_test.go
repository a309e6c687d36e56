package httpapi

import (
	"bytes"
	"encoding/base64"
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

// BenchmarkDecodeProduceBatch decodes a batch of 1,000 records with JSON
// payloads, and one of 1,000 256-byte payloads in base64 (what narad
// bench sends).
func BenchmarkDecodeProduceBatch(b *testing.B) {
	codec := newTestCodec()
	for _, c := range []struct{ name, line string }{
		{"json", `{"key":"user-7","payload":{"id":7,"name":"` + strings.Repeat("x", 200) + `"}}` + "\n"},
		{"base64", `{"payload_base64":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 256)) + `"}` + "\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := strings.Repeat(c.line, 1000)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, failed := codec.Decode(batchRequest(body)); failed != nil {
					b.Fatal(failed.Err)
				}
			}
		})
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
