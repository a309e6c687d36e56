package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

var testTopic = msg.TopicInfo{
	Name: "orders", Partitions: 3, RetentionMs: 3600000, VisibilityTimeoutMs: 30000,
	InFlightMax: 1024, AckedAheadMax: 512, CreatedAt: 1700000000,
}

const testTopicJSON = `"name":"orders","partitions":3,"retention_ms":3600000,"visibility_timeout_ms":30000,` +
	`"max_in_flight_per_partition":1024,"max_acked_ahead_per_partition":512,"created_at":1700000000`

// encodeCase is one request and reply, with the exact answer expected.
type encodeCase struct {
	name       string
	request    msg.Request
	reply      msg.Reply
	wantStatus int
	wantBody   string // without the trailing newline; "" for no body
}

func runEncodeCases(t *testing.T, cases []encodeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			response := Encode(tc.request, tc.reply)
			require.Equal(t, tc.wantStatus, response.Status)
			if tc.wantBody == "" {
				require.Empty(t, response.Body)
				require.Empty(t, response.Header.Get("Content-Type"))
				return
			}
			require.Equal(t, tc.wantBody+"\n", string(response.Body))
			require.Equal(t, "application/json", response.Header.Get("Content-Type"))
		})
	}
}

func ok(result msg.Result) msg.Reply { return msg.Reply{Result: result} }

func TestEncodeTopics(t *testing.T) {
	stats := msg.PartitionStats{Index: 1, Segments: 2, OldestOffset: 3, NextOffset: 9, HighWatermark: 9,
		SizeBytes: 100, OldestSegmentAt: 1700000001, OwnerNode: "node-1", Available: true, Committed: 4, InFlight: 2}
	runEncodeCases(t, []encodeCase{
		{"create", msg.CreateTopic{Name: "orders"}, ok(testTopic), 201, `{` + testTopicJSON + `}`},
		{"create with owner", msg.CreateTopic{Name: "orders"}, ok(withOwner(testTopic, "alice")), 201,
			`{` + testTopicJSON + `,"owner":"alice"}`},
		{"alter", msg.AlterTopic{Name: "orders"}, ok(testTopic), 200, `{` + testTopicJSON + `}`},
		{"list empty", msg.ListTopics{Limit: 100}, ok(msg.TopicPage{}), 200, `{"topics":[],"next_page_token":""}`},
		{"list page", msg.ListTopics{Limit: 1}, ok(msg.TopicPage{Topics: []msg.TopicInfo{testTopic}, NextPageToken: "orders"}),
			200, `{"topics":[{` + testTopicJSON + `}],"next_page_token":"orders"}`},
		{"get without stats", msg.GetTopic{Name: "orders"}, ok(msg.TopicDetail{TopicInfo: testTopic}), 200,
			`{` + testTopicJSON + `,"partition_stats":[]}`},
		{"get with stats", msg.GetTopic{Name: "orders"},
			ok(msg.TopicDetail{TopicInfo: testTopic, PartitionStats: []msg.PartitionStats{stats, {Index: 2, OwnerNode: "node-2"}}}), 200,
			`{` + testTopicJSON + `,"partition_stats":[` +
				`{"index":1,"segments":2,"oldest_offset":3,"next_offset":9,"high_watermark":9,"size_bytes":100,` +
				`"oldest_segment_at":1700000001,"owner_node":"node-1","available":true,"committed_offset":4,"in_flight":2},` +
				`{"index":2,"segments":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,"size_bytes":0,` +
				`"owner_node":"node-2","available":false,"committed_offset":0,"in_flight":0}]}`},
		{"delete", msg.DeleteTopic{Name: "orders"}, ok(nil), 204, ""},
	})
}

func withOwner(topic msg.TopicInfo, owner string) msg.TopicInfo {
	topic.Owner = owner
	return topic
}

func TestEncodeProduce(t *testing.T) {
	single := msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Payload: []byte("x")}}}
	batch := msg.Produce{Topic: "t", Records: make([]msg.ProduceRecord, 2), Batch: true}
	runEncodeCases(t, []encodeCase{
		{"single", single, ok(msg.ProduceResult{Records: []msg.Placement{{Partition: 1, Offset: 7}}}), 202,
			`{"partition":1,"offset":7}`},
		{"batch", batch, ok(msg.ProduceResult{Records: []msg.Placement{{Partition: 0, Offset: 5}, {Partition: 2, Offset: 0}},
			Batch: true}), 202, `{"accepted":2,"records":[{"partition":0,"offset":5},{"partition":2,"offset":0}]}`},
	})
}

var testMessage = msg.Message{Topic: "orders", Partition: 2, Offset: 41, Key: []byte("user-7"),
	Payload: []byte(`{"id": 7}`), TimestampMs: 1700000000123, ReceiptHandle: "2:41:9", DeliveryCount: 1}

const testMessageJSON = `{"topic":"orders","partition":2,"offset":41,"key":"user-7","payload":{"id": 7},` +
	`"timestamp":1700000000,"timestamp_ms":1700000000123,"receipt_handle":"2:41:9","delivery_count":1}`

func TestEncodeConsumeAndReplay(t *testing.T) {
	replayed := testMessage
	replayed.ReceiptHandle, replayed.DeliveryCount, replayed.Key = "", 0, nil
	single := msg.Consume{Topic: "orders", Partition: msg.PartitionNone}
	batch := msg.Consume{Topic: "orders", Partition: msg.PartitionNone, Max: 5}
	runEncodeCases(t, []encodeCase{
		{"single", single, ok(msg.ConsumeResult{Messages: []msg.Message{testMessage}}), 200, testMessageJSON},
		{"single nothing", single, ok(msg.ConsumeResult{}), 204, ""},
		{"batch nothing", batch, ok(msg.ConsumeResult{Batch: true}), 200, `{"messages":[]}`},
		{"batch two", batch, ok(msg.ConsumeResult{Messages: []msg.Message{testMessage, testMessage}, Batch: true}), 200,
			`{"messages":[` + testMessageJSON + `,` + testMessageJSON + `]}`},
		{"replay", msg.Replay{Topic: "orders", Partition: 2, Offset: 41}, ok(msg.ReplayResult{Message: &replayed}), 200,
			`{"topic":"orders","partition":2,"offset":41,"payload":{"id": 7},"timestamp":1700000000,"timestamp_ms":1700000000123}`},
		{"replay past the end", msg.Replay{Topic: "orders", Partition: 2, Offset: 99}, ok(msg.ReplayResult{}), 204, ""},
		{"dead letter", single, ok(msg.ConsumeResult{Messages: []msg.Message{deadLetter}}), 200,
			strings.TrimSuffix(testMessageJSON, "}") + `,"dead_letter":{"topic":"orders.in","partition":0,"offset":18446744073709551615,"delivery_count":5}}`},
	})
}

var deadLetter = func() msg.Message {
	m := testMessage
	m.DeadLetter = &msg.DeadLetterOrigin{Topic: "orders.in", Partition: 0, Offset: 1<<64 - 1, DeliveryCount: 5}
	return m
}()

func TestEncodePayloadRules(t *testing.T) {
	cases := []struct {
		name, want string
		payload    []byte
	}{
		{"JSON object kept byte for byte", `"payload":{ "a" : [1,2] }`, []byte(`{ "a" : [1,2] }`)},
		{"JSON string kept", `"payload":"hi"`, []byte(`"hi"`)},
		{"JSON number kept", `"payload":12.5e3`, []byte(`12.5e3`)},
		{"plain text becomes a string, no HTML escaping", `"payload":"hello <b>&</b>\n"`, []byte("hello <b>&</b>\n")},
		{"text that is almost JSON", `"payload":"{\"a\":"`, []byte(`{"a":`)},
		{"invalid UTF-8 is base64", `"payload":"//4A","payload_encoding":"base64"`, []byte{0xff, 0xfe, 0x00}},
		{"JSON with invalid UTF-8 inside a string is base64", `"payload":"IoAi","payload_encoding":"base64"`, []byte{'"', 0x80, '"'}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			message := msg.Message{Topic: "t", Payload: tc.payload, TimestampMs: 1999}
			want := `{"topic":"t","partition":0,"offset":0,` + tc.want + `,"timestamp":1,"timestamp_ms":1999}`
			require.Equal(t, want, string(appendMessage(nil, message)))
		})
	}
}

func TestEncodeAck(t *testing.T) {
	single := msg.Ack{Topic: "t", Handles: []string{"1:2:3"}}
	batch := msg.Ack{Topic: "t", Handles: []string{"1:2:3", "1:3:4", "0:0:1"}, Batch: true}
	runEncodeCases(t, []encodeCase{
		{"single", single, ok(msg.AckResult{Results: []msg.AckItemResult{{Handle: "1:2:3"}}}), 204, ""},
		{"single stale", single, ok(msg.AckResult{Results: []msg.AckItemResult{{Handle: "1:2:3", Err: msg.Gone("receipt handle is stale")}}}),
			410, `{"error":"receipt handle is stale"}`},
		{"batch", batch, ok(msg.AckResult{Batch: true, Results: []msg.AckItemResult{
			{Handle: "1:2:3"},
			{Handle: "1:3:4", Err: msg.Gone("receipt handle is stale")},
			{Handle: "0:0:1", Err: msg.Unavailable("acked-ahead set is full; head of queue may be stuck")},
		}}), 200, `{"results":[{"receipt_handle":"1:2:3","status":204},` +
			`{"receipt_handle":"1:3:4","status":410,"error":"receipt handle is stale"},` +
			`{"receipt_handle":"0:0:1","status":503,"error":"acked-ahead set is full; head of queue may be stuck"}]}`},
	})
}

func TestEncodeCluster(t *testing.T) {
	member := msg.Member{ID: "node-1", Addr: "10.0.0.1:7942", Status: "alive", OwnedPartitions: 6}
	move := msg.Move{Topic: "orders", Partition: 1, From: "node-1", To: "node-2", Phase: "catchup",
		BytesCopied: 10, BytesTotal: 20, StartedAtMs: 1700000000000}
	runEncodeCases(t, []encodeCase{
		{"members", msg.ListMembers{}, ok(msg.MembersResult{Members: []msg.Member{member}}), 200,
			`{"members":[{"id":"node-1","addr":"10.0.0.1:7942","status":"alive","draining":false,` +
				`"voter":false,"disk_low":false,"owned_partitions":6,"outbound_moves":0,"inbound_moves":0}]}`},
		{"no members", msg.ListMembers{}, ok(msg.MembersResult{}), 200, `{"members":[]}`},
		{"moves", msg.ListMoves{}, ok(msg.MovesResult{Moves: []msg.Move{move}}), 200,
			`{"moves":[{"topic":"orders","partition":1,"from":"node-1","to":"node-2","phase":"catchup",` +
				`"bytes_copied":10,"bytes_total":20,"started_at_ms":1700000000000}]}`},
		{"no moves", msg.ListMoves{}, ok(msg.MovesResult{}), 200, `{"moves":[]}`},
	})
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		err    error
		status int
	}{
		{msg.Invalid("bad"), 400},
		{msg.NotFound("topic not found"), 404},
		{msg.Conflict("topic already exists"), 409},
		{msg.Gone("offset 3 aged out of retention (oldest retained: 9)"), 410},
		{msg.TooLarge("too big"), 413},
		{&msg.Error{Code: msg.CodeNotOwner, Message: "not the partition owner"}, 421},
		{msg.Unavailable("no live owner"), 503},
		{msg.Internal("produce failed"), 500},
		{errors.New("disk on fire"), 500},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			response := Encode(msg.DeleteTopic{Name: "t"}, msg.Reply{Err: tc.err})
			require.Equal(t, tc.status, response.Status)
			require.Equal(t, `{"error":`+string(marshalJSON(tc.err.Error()))+"}\n", string(response.Body))
			require.Equal(t, "application/json", response.Header.Get("Content-Type"))
			retryAfter := response.Header.Get("Retry-After")
			if tc.status == http.StatusServiceUnavailable {
				require.Equal(t, "1", retryAfter, "every 503 says when to retry")
			} else {
				require.Empty(t, retryAfter)
			}
		})
	}
}

func TestErrorRegistryCoversEveryCode(t *testing.T) {
	seen := map[int]msg.Code{}
	for code := msg.CodeInvalid; code <= msg.CodeForbidden; code++ {
		status := StatusOf(code)
		require.GreaterOrEqual(t, status, 400, "code %d", code)
		require.NotContains(t, seen, status, "codes %d and %d share status %d", seen[status], code, status)
		seen[status] = code
	}
	require.Len(t, errorRegistry, int(msg.CodeForbidden), "a registry row for a code node does not define")
	require.Panics(t, func() { StatusOf(0) })
	require.Panics(t, func() { StatusOf(msg.CodeForbidden + 1) })
}

// TestEncodeContractViolationsPanic: a reply that breaks msg.Reply's contract is
// a bug, not something to encode.
func TestEncodeContractViolationsPanic(t *testing.T) {
	single := msg.Consume{Topic: "t"}
	cases := []struct {
		name    string
		request msg.Request
		reply   msg.Reply
	}{
		{"wrong result type", msg.CreateTopic{Name: "t"}, ok(msg.TopicPage{})},
		{"pointer result", msg.CreateTopic{Name: "t"}, ok(&testTopic)},
		{"delete with a result", msg.DeleteTopic{Name: "t"}, ok(testTopic)},
		{"single consume with two messages", single, ok(msg.ConsumeResult{Messages: make([]msg.Message, 2)})},
		{"single consume answered as batch", single, ok(msg.ConsumeResult{Batch: true})},
		{"batch consume over max", msg.Consume{Topic: "t", Max: 1},
			ok(msg.ConsumeResult{Messages: make([]msg.Message, 2), Batch: true})},
		{"produce placement count", msg.Produce{Records: make([]msg.ProduceRecord, 2), Batch: true},
			ok(msg.ProduceResult{Records: make([]msg.Placement, 1), Batch: true})},
		{"ack result count", msg.Ack{Handles: []string{"1:1:1"}}, ok(msg.AckResult{})},
		{"error with no code", msg.DeleteTopic{}, msg.Reply{Err: &msg.Error{Message: "?"}}},
		{"unknown request", nil, ok(nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Panics(t, func() { Encode(tc.request, tc.reply) })
		})
	}
}

func TestResponseWrite(t *testing.T) {
	recorder := httptest.NewRecorder()
	Encode(msg.ListMoves{}, ok(msg.MovesResult{})).Write(recorder)
	require.Equal(t, http.StatusOK, recorder.Code)
	require.Equal(t, "application/json", recorder.Header().Get("Content-Type"))
	require.Equal(t, "13", recorder.Header().Get("Content-Length"))
	require.Equal(t, "{\"moves\":[]}\n", recorder.Body.String())

	recorder = httptest.NewRecorder()
	Encode(msg.DeleteTopic{Name: "t"}, ok(nil)).Write(recorder)
	require.Equal(t, http.StatusNoContent, recorder.Code)
	require.Empty(t, recorder.Body.Bytes())
}

// Every 503 tells the client when to retry; other errors do not.
func TestEncodeUnavailableCarriesRetryAfter(t *testing.T) {
	produce := msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 1, Payload: []byte("x")}}}
	unavailable := Encode(produce, msg.Reply{Err: msg.Unavailable("partition 1 of t is unavailable; retry")})
	require.Equal(t, http.StatusServiceUnavailable, unavailable.Status)
	require.Equal(t, "1", unavailable.Header.Get("Retry-After"))
	invalid := Encode(produce, msg.Reply{Err: msg.Invalid("bad")})
	require.Equal(t, http.StatusBadRequest, invalid.Status)
	require.Empty(t, invalid.Header.Get("Retry-After"))
}

// A placement is written by hand as encoding/json writes msg.Placement,
// up to the largest offset, within placementBytesMax with its newline.
func TestAppendPlacementMatchesEncodingJSON(t *testing.T) {
	for _, placement := range []msg.Placement{{}, {Partition: 1, Offset: 7}, {Partition: 1<<31 - 1, Offset: 1<<64 - 1}} {
		want, err := json.Marshal(placement)
		require.NoError(t, err)
		encoded := appendPlacement(nil, placement)
		require.Equal(t, string(want), string(encoded))
		require.LessOrEqual(t, len(encoded)+1, placementBytesMax)
	}
}

// The JSON header is shared by responses: the one response that adds to
// it (401's WWW-Authenticate) adds to its own copy.
func TestSharedJSONHeaderStaysAsItWas(t *testing.T) {
	refused := unauthenticated()
	require.Equal(t, realm, refused.Header.Get("WWW-Authenticate"))
	require.Equal(t, http.Header{"Content-Type": {"application/json"}}, jsonHeader)
	produced := Encode(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Payload: []byte("x")}}},
		ok(msg.ProduceResult{Records: []msg.Placement{{Partition: 1, Offset: 7}}}))
	require.Empty(t, produced.Header.Get("WWW-Authenticate"))
}

// appendJSONString writes every string exactly as marshalJSON does
// (encoding/json without HTML escaping), on its direct path for plain
// ASCII and through marshalJSON for the rest, from a string and from
// bytes alike.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, value := range []string{"", "orders", "1:17:1099511627777:3f9a0011aabbccdd", "a b~!#$%&'()*+,-./<>=?@[]^_`{|}",
		`quote"`, `back\slash`, "tab\tnewline\n", "\x00\x1f\x7f", "é ü 中文", "\u2028\u2029", "bad \xff utf-8", "<html>&"} {
		want := string(marshalJSON(value))
		require.Equal(t, want, string(appendJSONString([]byte("prefix"), value)[len("prefix"):]), "%q", value)
		require.Equal(t, want, string(appendJSONString(nil, []byte(value))), "%q as bytes", value)
	}
}

// appendPayload writes JSON verbatim, other UTF-8 as a JSON string and
// anything else as base64, as the consumed message's docs say.
func TestAppendPayloadForms(t *testing.T) {
	for _, c := range []struct {
		payload, want, encoding string
	}{
		{`{"a": [1, 2]}`, `{"a": [1, 2]}`, ""},
		{"plain text", `"plain text"`, ""},
		{"say \"hi\"\n", `"say \"hi\"\n"`, ""},
		{"\xff\xfe\x00", `"//4A"`, payloadEncodingBase64},
	} {
		got, encoding := appendPayload([]byte(`"payload":`), []byte(c.payload))
		require.Equal(t, `"payload":`+c.want, string(got), "%q", c.payload)
		require.Equal(t, c.encoding, encoding, "%q", c.payload)
	}
}

// A batch ack is 200 whatever its items are, and its 503 items carried no
// Retry-After, though docs/api.md says every 503 does: the answer carries
// it when an item is 503, and only then.
func TestABatchAckWithAnUnavailableItemCarriesRetryAfter(t *testing.T) {
	batch := msg.Ack{Topic: "t", Handles: []string{"1:2:3", "0:0:1"}, Batch: true}
	unavailable := Encode(batch, ok(msg.AckResult{Batch: true, Results: []msg.AckItemResult{
		{Handle: "1:2:3"}, {Handle: "0:0:1", Err: msg.Unavailable("acked-ahead set is full; head of queue may be stuck")},
	}}))
	require.Equal(t, http.StatusOK, unavailable.Status)
	require.Equal(t, "1", unavailable.Header.Get("Retry-After"))
	require.Equal(t, "application/json", unavailable.Header.Get("Content-Type"))
	settled := Encode(batch, ok(msg.AckResult{Batch: true, Results: []msg.AckItemResult{
		{Handle: "1:2:3"}, {Handle: "0:0:1", Err: msg.Gone("receipt handle is stale")},
	}}))
	require.Empty(t, settled.Header.Get("Retry-After"), "no item to retry")
}
