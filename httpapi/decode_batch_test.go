package httpapi

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

const batchTarget = "/v1/topics/orders/produce"

func batchRequest(body string) *http.Request {
	request := httptest.NewRequest("POST", batchTarget, strings.NewReader(body))
	request.Header.Set("Content-Type", "application/x-ndjson")
	return request
}

func batchOf(records ...msg.ProduceRecord) msg.Produce {
	return msg.Produce{Topic: "orders", Records: records, Batch: true}
}

func TestDecodeProduceBatch(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "payload kinds, key and partition", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body: `{"key":"k1","partition":2,"payload":{"a": [1, 2]}}` + "\n" +
				`{"payload":"text"}` + "\n" +
				`{"payload_base64":"//4A"}` + "\n" +
				`{"payload":null,"key":""}` + "\n",
			wantRoute: RouteProduce, want: batchOf(
				msg.ProduceRecord{Key: []byte("k1"), Partition: 2, Payload: []byte(`{"a": [1, 2]}`)},
				msg.ProduceRecord{Partition: msg.PartitionNone, Payload: []byte(`"text"`)},
				msg.ProduceRecord{Partition: msg.PartitionNone, Payload: []byte{0xff, 0xfe, 0x00}},
				msg.ProduceRecord{Partition: msg.PartitionNone, Payload: []byte(`null`)},
			)},
		{name: "blank lines and CRLF skipped", method: "POST", target: batchTarget,
			contentType: "Application/X-NDJSON; charset=utf-8",
			body:        "\n  \r\n" + `{"payload":1}` + "\r\n\n" + `{"payload":2}`,
			wantRoute:   RouteProduce, want: batchOf(
				msg.ProduceRecord{Partition: msg.PartitionNone, Payload: []byte(`1`)},
				msg.ProduceRecord{Partition: msg.PartitionNone, Payload: []byte(`2`)},
			)},
		{name: "no records", method: "POST", target: batchTarget, contentType: "application/x-ndjson", body: "\n \n",
			wantStatus: 400, wantMessage: "batch produce has no records"},
		{name: "empty body", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			wantStatus: 400, wantMessage: "batch produce has no records"},
		{name: "bad json names its line", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload":1}` + "\n\n" + `{"payload":` + "\n",
			wantStatus: 400, wantMessage: "invalid ndjson line 3: unexpected EOF"},
		{name: "unknown field", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload":1,"topic":"x"}`,
			wantStatus: 400, wantMessage: `invalid ndjson line 1: json: unknown field "topic"`},
		{name: "two values on a line", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload":1} {"payload":2}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 1: unexpected data after the JSON value"},
		{name: "both payloads", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload":1,"payload_base64":"AA=="}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 1: want exactly one of payload and payload_base64"},
		{name: "no payload", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"key":"k"}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 1: want exactly one of payload and payload_base64"},
		{name: "bad base64", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload_base64":"!!"}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 1: invalid payload_base64: illegal base64 data at input byte 0"},
		{name: "empty base64 payload", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload_base64":""}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 1: payload is empty"},
		{name: "negative partition", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body:       `{"payload":1}` + "\n" + `{"payload":1,"partition":-1}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 2: partition must be >= 0"},
		{name: "key in query", method: "POST", target: batchTarget + "?key=k", contentType: "application/x-ndjson",
			body:       `{"payload":1}`,
			wantStatus: 400, wantMessage: "key and partition go in the records of a batch produce, not in the query"},
		{name: "partition in query", method: "POST", target: batchTarget + "?partition=1", contentType: "application/x-ndjson",
			body:       `{"payload":1}`,
			wantStatus: 400, wantMessage: "key and partition go in the records of a batch produce, not in the query"},
	})
}

func TestDecodeProduceBatchRecordLimit(t *testing.T) {
	line := `{"payload":1}` + "\n"
	decoded, failed := newTestCodec().Decode(batchRequest(strings.Repeat(line, msg.ProduceBatchRecordsMax)))
	require.Nil(t, failed)
	require.Len(t, decoded.Request.(msg.Produce).Records, msg.ProduceBatchRecordsMax)

	_, failed = newTestCodec().Decode(batchRequest(strings.Repeat(line, msg.ProduceBatchRecordsMax+1)))
	requireFailure(t, failed, 413, "batch produce has more than 1000 records")
}

// base64Line is a batch line whose payload is size bytes.
func base64Line(size int) string {
	return `{"payload_base64":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xab}, size)) + `"}` + "\n"
}

func TestDecodeProduceBatchByteLimit(t *testing.T) {
	recordBytes := 1 << 20
	recordsAtLimit := msg.ProduceBatchBytesMax / recordBytes
	full := strings.Repeat(base64Line(recordBytes), recordsAtLimit)

	decoded, failed := newTestCodec().Decode(batchRequest(full))
	require.Nil(t, failed, "exactly %d payload bytes must pass", msg.ProduceBatchBytesMax)
	total := 0
	for _, record := range decoded.Request.(msg.Produce).Records {
		total += len(record.Payload)
	}
	require.Equal(t, msg.ProduceBatchBytesMax, total)

	_, failed = newTestCodec().Decode(batchRequest(full + base64Line(1)))
	requireFailure(t, failed, 413, fmt.Sprintf("batch produce payloads are over %d bytes", msg.ProduceBatchBytesMax))
}

func TestDecodeProduceBatchRecordOverMessageLimit(t *testing.T) {
	_, failed := newTestCodec().Decode(batchRequest(base64Line(1) + base64Line(1<<20+1)))
	requireFailure(t, failed, 413, "ndjson line 2: payload of 1048577 bytes is over 1048576 bytes")
}

func TestDecodeProduceBatchRawBodyLimit(t *testing.T) {
	config := DefaultCodecConfig()
	body := `{"payload":1}` + strings.Repeat(" ", int(config.BatchBodyBytesMax))
	_, failed := NewCodec(config).Decode(batchRequest(body))
	requireFailure(t, failed, 413, "request body too large")
}
