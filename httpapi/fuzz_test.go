package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/node"
)

// FuzzDecodeProduceBatch feeds arbitrary NDJSON bodies to Decode. Every
// outcome must be a 400 or 413 JSON error, or a batch within every bound
// that survives a round trip through the NDJSON form.
func FuzzDecodeProduceBatch(f *testing.F) {
	for _, seed := range []string{
		`{"payload":{"a":1}}`,
		`{"key":"k","partition":0,"payload":"x"}` + "\n" + `{"payload_base64":"AAE="}`,
		"\r\n\n" + `{"payload":[1,2,3]}` + "\r\n",
		`{"payload":null}`,
		`{"payload":1,"payload_base64":"AA=="}`,
		`{"payload":1,"partition":-1}`,
		`{"payload":1} {"payload":2}`,
		`{"payload_base64":"!!"}`,
		`{"payload":1,"extra":true}`,
		`{"key":"\ud800","payload":"\u0000"}`,
		"",
		"\n\n",
		`[`,
	} {
		f.Add([]byte(seed))
	}
	codec := newTestCodec()
	f.Fuzz(func(t *testing.T, body []byte) {
		decoded, failed := codec.Decode(ndjsonRequest(body))
		if failed != nil {
			requireBatchFailure(t, failed)
			return
		}
		produce, isProduce := decoded.Request.(node.Produce)
		require.True(t, isProduce, "decoded a %T", decoded.Request)
		requireBatchWithinBounds(t, produce)
		again, failed := codec.Decode(ndjsonRequest(encodeBatch(produce.Records)))
		require.Nil(t, failed, "re-encoded batch failed: %+v", failed)
		require.Equal(t, produce, again.Request)
	})
}

func ndjsonRequest(body []byte) *http.Request {
	request := httptest.NewRequest("POST", "/v1/topics/orders/produce", bytes.NewReader(body))
	request.Header.Set("Content-Type", "application/x-ndjson")
	return request
}

func requireBatchFailure(t *testing.T, failed *ErrorResponse) {
	t.Helper()
	require.NotNil(t, failed.Err)
	require.Contains(t, []int{400, 413}, failed.Status())
	var body errorBody
	require.NoError(t, json.Unmarshal(failed.Response.Body, &body))
	require.Equal(t, failed.Err.Message, body.Error)
}

func requireBatchWithinBounds(t *testing.T, produce node.Produce) {
	t.Helper()
	require.True(t, produce.Batch)
	require.Equal(t, "orders", produce.Topic)
	require.NotEmpty(t, produce.Records)
	require.LessOrEqual(t, len(produce.Records), node.ProduceBatchRecordsMax)
	total := 0
	for _, record := range produce.Records {
		require.NotEmpty(t, record.Payload)
		require.LessOrEqual(t, len(record.Payload), defaultMessageBodyBytesMax)
		require.GreaterOrEqual(t, record.Partition, node.PartitionNone)
		require.True(t, record.Key == nil || len(record.Key) > 0, "an empty key must be no key")
		total += len(record.Payload)
	}
	require.LessOrEqual(t, total, node.ProduceBatchBytesMax)
}

// encodeBatch writes records back as NDJSON, every payload as base64.
func encodeBatch(records []node.ProduceRecord) []byte {
	var buffer bytes.Buffer
	for _, record := range records {
		buffer.WriteString(`{"key":`)
		buffer.Write(marshalJSON(string(record.Key)))
		if record.Partition != node.PartitionNone {
			buffer.WriteString(`,"partition":` + strconv.Itoa(record.Partition))
		}
		buffer.WriteString(`,"payload_base64":"` + base64.StdEncoding.EncodeToString(record.Payload) + "\"}\n")
	}
	return buffer.Bytes()
}
