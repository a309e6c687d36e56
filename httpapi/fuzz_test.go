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

	"narad/msg"
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
		produce, isProduce := decoded.Request.(msg.Produce)
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

func requireBatchWithinBounds(t *testing.T, produce msg.Produce) {
	t.Helper()
	require.True(t, produce.Batch)
	require.Equal(t, "orders", produce.Topic)
	require.NotEmpty(t, produce.Records)
	require.LessOrEqual(t, len(produce.Records), msg.ProduceBatchRecordsMax)
	total := 0
	for _, record := range produce.Records {
		require.NotEmpty(t, record.Payload)
		require.LessOrEqual(t, len(record.Payload), defaultMessageBodyBytesMax)
		require.GreaterOrEqual(t, record.Partition, msg.PartitionNone)
		require.True(t, record.Key == nil || len(record.Key) > 0, "an empty key must be no key")
		total += len(record.Payload)
	}
	require.LessOrEqual(t, total, msg.ProduceBatchBytesMax)
}

// encodeBatch writes records back as NDJSON, every payload as base64.
func encodeBatch(records []msg.ProduceRecord) []byte {
	var buffer bytes.Buffer
	for _, record := range records {
		buffer.WriteString(`{"key":`)
		buffer.Write(marshalJSON(string(record.Key)))
		if record.Partition != msg.PartitionNone {
			buffer.WriteString(`,"partition":` + strconv.Itoa(record.Partition))
		}
		buffer.WriteString(`,"payload_base64":"` + base64.StdEncoding.EncodeToString(record.Payload) + "\"}\n")
	}
	return buffer.Bytes()
}

// FuzzNDJSONLineMatchesEncodingJSON decodes every input as a batch line
// with the hand-rolled decoder and with the encoding/json one it replaced
// (referenceDecodeBatchLine): both must accept it with byte-identical
// records (key, partition, payload) or both reject it with the same
// message. The one intended difference: a line naming a field twice is
// rejected, where encoding/json kept the last value.
func FuzzNDJSONLineMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"key":"k","partition":0,"payload":"x"}`,
		`{"key":"user-7","payload":{"id":7,"name":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}`,
		`{"payload_base64":"AAE="}`,
		`{"payload_base64":"A\/E\u003d"}`,
		`{"payload_base64":"AA\r\nE="}`,
		` { "key" : "k" , "partition" : 2 , "payload" : [ 1 , { "a" : null } ] } ` + "\r",
		"\t{\n\"payload\"\r:\t1\n}\t",
		`{"payload":{"a":{"b":[[[{"c":[true,false,null,-1.5e-3,0,""]}]]]}}}`,
		`{"payload":"\"\\\/\b\f\n\r\t\u0000\u00e9\uD83D\uDE00"}`,
		`{"key":"\ud800","payload":"\u0000"}`,
		`{"key":"\ud800\udc00\udc00\ud800x","payload":1}`,
		"{\"key\":\"\xff\xfe\xc3\xa9\xe2\x82\",\"payload\":\"\xff\"}",
		`{"key":"\u00e9t\u00e9","payload":1}`,
		`{"key":"ключ","payload":"значение"}`,
		`{"KEY":"k","Payload":1,"PARTITION":1}`,
		`{"\u212aey":"k","payload_ba\u017fe64":"aGk="}`,
		`{"k\u0065y":"k","payload":1}`,
		`{"key":"a","key":"b","payload":1}`,
		`{"key":"a","KEY":"b","payload":1}`,
		`{"payload":1,"payload":2}`,
		`{"payload":1,"payload_base64":null}`,
		`{"payload":null}`,
		`{"key":null,"partition":null,"payload":1}`,
		`{"payload":1,"partition":1e2}`,
		`{"payload":1,"partition":-0}`,
		`{"payload":1,"partition":01}`,
		`{"payload":1,"partition":1.0}`,
		`{"payload":1,"partition":-1}`,
		`{"payload":1,"partition":9223372036854775807}`,
		`{"payload":1,"partition":9223372036854775808}`,
		`{"payload":1,"partition":"1"}`,
		`{"key":1,"payload":1}`,
		`{"key":["a"],"payload":1}`,
		`{"payload":1,"extra":true}`,
		`{"payload":1} {"payload":2}`,
		`{"payload":1}x`,
		`{"payload":`,
		`{"payload":"abc`,
		`{"payload":[1,]}`,
		`{"payload":tru}`,
		`{"payload":-}`,
		`{"payload":1.}`,
		`{"payload":1e}`,
		`{"payload_base64":"!!"}`,
		`{"payload_base64":""}`,
		`{}`,
		`null`,
		`nullx`,
		`[]`,
		`12x`,
		`"s"`,
		``,
		` `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		requireMatchesReference(t, line)
	})
}
