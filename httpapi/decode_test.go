package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// decodeCase is one request given to Decode and what must come out:
// either want (with wantRoute) or wantStatus with wantMessage.
type decodeCase struct {
	name        string
	method      string
	target      string
	contentType string
	body        string
	want        msg.Request
	wantRoute   string
	wantStatus  int
	wantMessage string
}

func newTestCodec() *Codec { return NewCodec(DefaultCodecConfig()) }

func (tc decodeCase) request() *http.Request {
	request := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
	if tc.contentType != "" {
		request.Header.Set("Content-Type", tc.contentType)
	}
	return request
}

func runDecodeCases(t *testing.T, cases []decodeCase) {
	t.Helper()
	codec := newTestCodec()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			decoded, failed := codec.Decode(tc.request())
			if tc.wantStatus != 0 {
				requireFailure(t, failed, tc.wantStatus, tc.wantMessage)
				return
			}
			require.Nil(t, failed, "unexpected failure %+v", failed)
			require.Equal(t, tc.wantRoute, decoded.Route)
			require.Equal(t, tc.want, decoded.Request)
		})
	}
}

// requireFailure checks a JSON error answer exactly.
func requireFailure(t *testing.T, failed *ErrorResponse, status int, message string) {
	t.Helper()
	require.NotNil(t, failed, "decode succeeded, want %d %q", status, message)
	require.Equal(t, status, failed.Status())
	require.NotNil(t, failed.Err)
	require.Equal(t, message, failed.Err.Message)
	require.Equal(t, "application/json", failed.Response.Header.Get("Content-Type"))
	require.Equal(t, `{"error":`+string(marshalJSON(message))+"}\n", string(failed.Response.Body))
}

func intPointer(value int) *int       { return &value }
func int64Pointer(value int64) *int64 { return &value }

func TestDecodeTopicRoutes(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "create minimal", method: "POST", target: "/v1/topics", body: `{"name":"orders"}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: "orders"}},
		{name: "create every field, owner ignored, zero fan-out fields accepted", method: "POST", target: "/v1/topics",
			body: `{"name":"a.B_c-9","partitions":6,"retention_ms":7200000,"visibility_timeout_ms":5000,` +
				`"max_in_flight_per_partition":10,"max_acked_ahead_per_partition":20,"owner":"mallory",` +
				`"schema":null,"parent":"","fanout_delay_ms":0}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: "a.B_c-9", Partitions: 6, RetentionMs: 7200000,
				VisibilityTimeoutMs: 5000, InFlightMax: 10, AckedAheadMax: 20}},
		{name: "create with schema", method: "POST", target: "/v1/topics", body: `{"name":"a","schema":{"type":"object"}}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: "a", Schema: []byte(`{"type":"object"}`)}},
		{name: "create with dead letters", method: "POST", target: "/v1/topics", body: `{"name":"a","max_deliveries":3,"dead_letter_topic":"a.dead"}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: "a", MaxDeliveries: 3, DeadLetterTopic: "a.dead"}},
		{name: "alter dead letters off", method: "PATCH", target: "/v1/topics/orders", body: `{"max_deliveries":0,"dead_letter_topic":""}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", MaxDeliveries: intPointer(0), DeadLetterTopic: new("")}},
		{name: "alter dead-letter topic only", method: "PATCH", target: "/v1/topics/orders", body: `{"dead_letter_topic":"x"}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", DeadLetterTopic: new("x")}},
		{name: "alter schema only", method: "PATCH", target: "/v1/topics/orders", body: `{"schema":true}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", Schema: []byte(`true`)}},
		{name: "create name of 255 bytes", method: "POST", target: "/v1/topics",
			body:      `{"name":"` + strings.Repeat("x", 255) + `"}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: strings.Repeat("x", 255)}},
		{name: "list default", method: "GET", target: "/v1/topics",
			wantRoute: RouteListTopics, want: msg.ListTopics{Limit: msg.TopicsPageDefault}},
		{name: "list page", method: "GET", target: "/v1/topics?limit=1000&page_token=orders",
			wantRoute: RouteListTopics, want: msg.ListTopics{Limit: 1000, PageToken: "orders"}},
		{name: "get", method: "GET", target: "/v1/topics/orders",
			wantRoute: RouteGetTopic, want: msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}},
		{name: "get one partition", method: "GET", target: "/v1/topics/orders?partition=2",
			wantRoute: RouteGetTopic, want: msg.GetTopic{Name: "orders", Partition: 2}},
		{name: "alter visibility (extension 1)", method: "PATCH", target: "/v1/topics/orders", body: `{"visibility_timeout_ms":0}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", VisibilityTimeoutMs: int64Pointer(0)}},
		{name: "alter every field", method: "PATCH", target: "/v1/topics/orders",
			body: `{"partitions":9,"retention_ms":3600000,"max_in_flight_per_partition":1,` +
				`"max_acked_ahead_per_partition":2,"schema":null}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", Partitions: intPointer(9),
				RetentionMs: int64Pointer(3600000), InFlightMax: intPointer(1), AckedAheadMax: intPointer(2)}},
		{name: "delete", method: "DELETE", target: "/v1/topics/orders",
			wantRoute: RouteDeleteTopic, want: msg.DeleteTopic{Name: "orders"}},
		{name: "members", method: "GET", target: "/v1/cluster/members", wantRoute: RouteMembers, want: msg.ListMembers{}},
		{name: "moves", method: "GET", target: "/v1/cluster/moves", wantRoute: RouteMoves, want: msg.ListMoves{}},
		{name: "decommission", method: "POST", target: "/v1/cluster/members/n2/decommission", wantRoute: RouteDecommission, want: msg.Decommission{ID: "n2"}},
		{name: "cancel decommission", method: "DELETE", target: "/v1/cluster/members/n2/decommission", wantRoute: RouteCancelDecommission,
			want: msg.Decommission{ID: "n2", Cancel: true}},
		{name: "healthz", method: "GET", target: "/healthz", wantRoute: RouteHealth},
		{name: "healthz by HEAD", method: "HEAD", target: "/healthz", wantRoute: RouteHealth},
		{name: "readyz", method: "GET", target: "/readyz", wantRoute: RouteReady},
		{name: "metrics", method: "GET", target: "/metrics", wantRoute: RouteMetrics},
	})
}

const nameRule = `invalid topic name: want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`

func TestDecodeCreateTopicErrors(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "create unknown field", method: "POST", target: "/v1/topics", body: `{"name":"a","x":1}`,
			wantStatus: 400, wantMessage: `invalid json: unknown field "x"`},
		{name: "create trailing value", method: "POST", target: "/v1/topics", body: `{"name":"a"} {"name":"b"}`,
			wantStatus: 400, wantMessage: "invalid json: unexpected data after the JSON value"},
		{name: "create trailing garbage", method: "POST", target: "/v1/topics", body: `{"name":"a"}]`,
			wantStatus: 400, wantMessage: "invalid json: unexpected data after the JSON value"},
		{name: "create empty body", method: "POST", target: "/v1/topics",
			wantStatus: 400, wantMessage: "invalid json: the body is empty"},
		{name: "create not UTF-8", method: "POST", target: "/v1/topics", body: "{\"name\":\"a\",\"owner\":\"\xff\"}",
			wantStatus: 400, wantMessage: "invalid json: the body is not valid UTF-8"},
		{name: "create not an object", method: "POST", target: "/v1/topics", body: `[1]`,
			wantStatus: 400, wantMessage: "invalid json: the body must be an object, not a JSON array"},
		{name: "create null", method: "POST", target: "/v1/topics", body: " null\n",
			wantStatus: 400, wantMessage: "invalid json: the body must be an object, not a JSON null"},
		{name: "alter null", method: "PATCH", target: "/v1/topics/a", body: `null`,
			wantStatus: 400, wantMessage: "invalid json: the body must be an object, not a JSON null"},
		{name: "create fractional partitions", method: "POST", target: "/v1/topics", body: `{"name":"a","partitions":1.5}`,
			wantStatus: 400, wantMessage: `invalid json: field "partitions" must be an integer, not a JSON number 1.5`},
		// An integer past 64 bits was "must be an integer, not a JSON number
		// 9223372036854775808": it is one, and the answer named no range.
		{name: "create retention past int64", method: "POST", target: "/v1/topics", body: `{"name":"a","retention_ms":9223372036854775808}`,
			wantStatus: 400, wantMessage: `invalid json: field "retention_ms" must be an integer from -9223372036854775808 to 9223372036854775807, not 9223372036854775808`},
		{name: "alter partitions below int64", method: "PATCH", target: "/v1/topics/a", body: `{"partitions":-99999999999999999999}`,
			wantStatus: 400, wantMessage: `invalid json: field "partitions" must be an integer from -9223372036854775808 to 9223372036854775807, not -99999999999999999999`},
		{name: "create body over 1 MiB", method: "POST", target: "/v1/topics",
			body:       `{"name":"a","owner":"` + strings.Repeat("x", 1<<20) + `"}`,
			wantStatus: 413, wantMessage: "request body too large"},
		{name: "create without name", method: "POST", target: "/v1/topics", body: `{"partitions":3}`,
			wantStatus: 400, wantMessage: "name is required"},
		{name: "create name with space", method: "POST", target: "/v1/topics", body: `{"name":"a b"}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "create name dot", method: "POST", target: "/v1/topics", body: `{"name":"."}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "create name dot dot", method: "POST", target: "/v1/topics", body: `{"name":".."}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "create name slash", method: "POST", target: "/v1/topics", body: `{"name":"a/b"}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "create name non-ASCII", method: "POST", target: "/v1/topics", body: `{"name":"café"}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "create name of 256 bytes", method: "POST", target: "/v1/topics",
			body:       `{"name":"` + strings.Repeat("x", 256) + `"}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "create negative partitions", method: "POST", target: "/v1/topics", body: `{"name":"a","partitions":-1}`,
			wantStatus: 400, wantMessage: "partitions must be 0 (the default) or from 3 to topic.max_partitions (108 unless configured), got -1"},
		{name: "create negative retention", method: "POST", target: "/v1/topics", body: `{"name":"a","retention_ms":-1}`,
			wantStatus: 400, wantMessage: "retention_ms must be 0 (the default) or from 3600000 to 3153600000000 (100 years), got -1"},
		{name: "create negative visibility", method: "POST", target: "/v1/topics",
			body:       `{"name":"a","visibility_timeout_ms":-5}`,
			wantStatus: 400, wantMessage: "visibility_timeout_ms must be 0 (the default) or from 1 to 43200000 (12h), got -5"},
		{name: "create negative in-flight cap", method: "POST", target: "/v1/topics",
			body:       `{"name":"a","max_in_flight_per_partition":-1}`,
			wantStatus: 400, wantMessage: "max_in_flight_per_partition must be 0 (the default) or from 1 to 1048576, got -1"},
		{name: "create negative acked-ahead cap", method: "POST", target: "/v1/topics",
			body:       `{"name":"a","max_acked_ahead_per_partition":-1}`,
			wantStatus: 400, wantMessage: "max_acked_ahead_per_partition must be 0 (the default) or from 1 to 1048576, got -1"},
		{name: "create with delay but no parent", method: "POST", target: "/v1/topics", body: `{"name":"a","fanout_delay_ms":5}`,
			wantStatus: 400, wantMessage: "fanout_delay_ms requires parent"},
		{name: "create with negative delay", method: "POST", target: "/v1/topics", body: `{"name":"a","parent":"p","fanout_delay_ms":-5}`,
			wantStatus: 400, wantMessage: "fanout_delay_ms must be between 0 and 31536000000 (one year), got -5"},
		{name: "create with a bad parent name", method: "POST", target: "/v1/topics", body: `{"name":"a","parent":"p q"}`,
			wantStatus: 400, wantMessage: `invalid parent topic name "p q": want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`},
	})
}

func TestDecodeFanoutErrors(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "attach without child", method: "POST", target: "/v1/topics/orders/children", body: `{}`,
			wantStatus: 400, wantMessage: "child is required"},
		{name: "attach negative delay", method: "POST", target: "/v1/topics/orders/children", body: `{"child":"c","delay_ms":-1}`,
			wantStatus: 400, wantMessage: "delay_ms must be between 0 and 31536000000 (one year), got -1"},
		{name: "attach bad child name", method: "POST", target: "/v1/topics/orders/children", body: `{"child":".."}`,
			wantStatus: 400, wantMessage: `invalid child topic name "..": want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`},
		{name: "attach unknown field", method: "POST", target: "/v1/topics/orders/children", body: `{"child":"c","x":1}`,
			wantStatus: 400, wantMessage: `invalid json: unknown field "x"`},
		{name: "attach bad parent", method: "POST", target: "/v1/topics/a%20b/children", body: `{"child":"c"}`,
			wantStatus: 400, wantMessage: nameRule},
		{name: "detach bad child", method: "DELETE", target: "/v1/topics/orders/children/a%20b",
			wantStatus: 400, wantMessage: `invalid child topic name "a b": want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`},
		{name: "attach", method: "POST", target: "/v1/topics/orders/children", body: `{"child":"audit","delay_ms":60000}`,
			wantRoute: RouteAttachChild, want: msg.AttachChild{Parent: "orders", Child: "audit", DelayMs: 60_000}},
		{name: "list children", method: "GET", target: "/v1/topics/orders/children",
			wantRoute: RouteListChildren, want: msg.ListChildren{Parent: "orders"}},
		{name: "detach", method: "DELETE", target: "/v1/topics/orders/children/audit",
			wantRoute: RouteDetachChild, want: msg.DetachChild{Parent: "orders", Child: "audit"}},
		{name: "create child", method: "POST", target: "/v1/topics", body: `{"name":"late","parent":"orders","fanout_delay_ms":5}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: "late", Parent: "orders", FanoutDelayMs: 5}},
	})
}

func TestDecodeTopicErrors(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "list limit 0", method: "GET", target: "/v1/topics?limit=0",
			wantStatus: 400, wantMessage: "invalid limit: want an integer from 1 to 1000"},
		{name: "list limit 1001", method: "GET", target: "/v1/topics?limit=1001",
			wantStatus: 400, wantMessage: "invalid limit: want an integer from 1 to 1000"},
		{name: "list limit text", method: "GET", target: "/v1/topics?limit=ten",
			wantStatus: 400, wantMessage: "invalid limit: want an integer from 1 to 1000"},
		{name: "list malformed query", method: "GET", target: "/v1/topics?limit=%zz",
			wantStatus: 400, wantMessage: `invalid query string: invalid URL escape "%zz"`},
		{name: "get negative partition", method: "GET", target: "/v1/topics/orders?partition=-1",
			wantStatus: 400, wantMessage: "invalid partition: want an integer from 0 to 9223372036854775807"},
		{name: "get text partition", method: "GET", target: "/v1/topics/orders?partition=one",
			wantStatus: 400, wantMessage: "invalid partition: want an integer from 0 to 9223372036854775807"},
		{name: "get bad name in path", method: "GET", target: "/v1/topics/a%20b",
			wantStatus: 400, wantMessage: nameRule},
		{name: "get escaped dot dot in path", method: "GET", target: "/v1/topics/%2e%2e",
			wantStatus: 400, wantMessage: nameRule},
		{name: "alter nothing", method: "PATCH", target: "/v1/topics/orders", body: `{}`,
			wantStatus: 400, wantMessage: "at least one field is required"},
		{name: "alter only nulls", method: "PATCH", target: "/v1/topics/orders", body: `{"partitions":null}`,
			wantStatus: 400, wantMessage: "at least one field is required"},
		{name: "alter unknown field", method: "PATCH", target: "/v1/topics/orders", body: `{"name":"b"}`,
			wantStatus: 400, wantMessage: `invalid json: unknown field "name"`},
		// A dead-letter topic's name is checked here, echoed clipped: the
		// node and the grant check quoted it whole, a megabyte of it.
		{name: "create bad dead-letter name", method: "POST", target: "/v1/topics",
			body:       `{"name":"a","max_deliveries":1,"dead_letter_topic":"` + strings.Repeat("/", 1000) + `"}`,
			wantStatus: 400, wantMessage: `invalid dead_letter_topic name "` + strings.Repeat("/", echoBytesMax) + `"... (1000 bytes): want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`},
		{name: "alter bad dead-letter name", method: "PATCH", target: "/v1/topics/orders", body: `{"dead_letter_topic":".."}`,
			wantStatus: 400, wantMessage: `invalid dead_letter_topic name "..": want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`},
		{name: "alter dead letters off", method: "PATCH", target: "/v1/topics/orders", body: `{"max_deliveries":0,"dead_letter_topic":""}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", MaxDeliveries: new(int), DeadLetterTopic: new(string)}},
		{name: "alter negative partitions", method: "PATCH", target: "/v1/topics/orders", body: `{"partitions":-3}`,
			wantStatus: 400, wantMessage: "partitions must be at least the topic's count (it only grows) and at most topic.max_partitions (108 unless configured), got -3"},
		{name: "alter negative visibility", method: "PATCH", target: "/v1/topics/orders",
			body:       `{"retention_ms":3600000,"visibility_timeout_ms":-1}`,
			wantStatus: 400, wantMessage: "visibility_timeout_ms must be 0 (the default) or from 1 to 43200000 (12h), got -1"},
		{name: "alter negative max_deliveries", method: "PATCH", target: "/v1/topics/orders", body: `{"max_deliveries":-1}`,
			wantStatus: 400, wantMessage: "max_deliveries must be between 0 (off) and 1000, got -1"},
		{name: "create negative max_deliveries", method: "POST", target: "/v1/topics", body: `{"name":"a","max_deliveries":-2}`,
			wantStatus: 400, wantMessage: "max_deliveries must be between 0 (off) and 1000, got -2"},
		{name: "alter dead-letter topic of the wrong type", method: "PATCH", target: "/v1/topics/orders", body: `{"dead_letter_topic":3}`,
			wantStatus: 400, wantMessage: `invalid json: field "dead_letter_topic" must be a string, not a JSON number`},
		{name: "alter body over 1 MiB", method: "PATCH", target: "/v1/topics/orders",
			body:       `{"partitions":4}` + strings.Repeat(" ", 1<<20),
			wantStatus: 413, wantMessage: "request body too large"},
		{name: "delete bad name", method: "DELETE", target: "/v1/topics/a%2Fb",
			wantStatus: 400, wantMessage: nameRule},
	})
}

func TestDecodeProduceSingle(t *testing.T) {
	produce := func(key string, partition int, payload string) msg.Produce {
		return msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: keyBytes(key), Partition: partition, Payload: []byte(payload)}}}
	}
	runDecodeCases(t, []decodeCase{
		{name: "no key (extension 2)", method: "POST", target: "/v1/topics/orders/produce", body: "hello",
			wantRoute: RouteProduce, want: produce("", msg.PartitionNone, "hello")},
		{name: "empty key is no key", method: "POST", target: "/v1/topics/orders/produce?key=", body: "hello",
			wantRoute: RouteProduce, want: produce("", msg.PartitionNone, "hello")},
		{name: "key and partition, other parameters ignored", method: "POST",
			target: "/v1/topics/orders/produce?key=user%2F7&partition=2&colour=blue", body: `{"a":1}`,
			contentType: "application/json",
			wantRoute:   RouteProduce, want: produce("user/7", 2, `{"a":1}`)},
		{name: "body of exactly 1 MiB", method: "POST", target: "/v1/topics/orders/produce", body: strings.Repeat("x", 1<<20),
			wantRoute: RouteProduce, want: produce("", msg.PartitionNone, strings.Repeat("x", 1<<20))},
		{name: "empty body", method: "POST", target: "/v1/topics/orders/produce",
			wantStatus: 400, wantMessage: "message body is empty"},
		{name: "body over 1 MiB", method: "POST", target: "/v1/topics/orders/produce", body: strings.Repeat("x", 1<<20+1),
			wantStatus: 413, wantMessage: "request body too large"},
		{name: "duplicate key", method: "POST", target: "/v1/topics/orders/produce?key=a&key=b", body: "x",
			wantStatus: 400, wantMessage: `duplicate query parameter "key"`},
		{name: "key not UTF-8", method: "POST", target: "/v1/topics/orders/produce?key=%FF%FE", body: "x",
			wantStatus: 400, wantMessage: "key is not UTF-8 text (a key comes back as JSON text; percent-encode the UTF-8 bytes of a text key)"},
		{name: "duplicate partition", method: "POST", target: "/v1/topics/orders/produce?partition=1&partition=1", body: "x",
			wantStatus: 400, wantMessage: `duplicate query parameter "partition"`},
		{name: "negative partition", method: "POST", target: "/v1/topics/orders/produce?partition=-1", body: "x",
			wantStatus: 400, wantMessage: "invalid partition: want an integer from 0 to 9223372036854775807"},
		{name: "empty partition", method: "POST", target: "/v1/topics/orders/produce?partition=", body: "x",
			wantStatus: 400, wantMessage: "invalid partition: want an integer from 0 to 9223372036854775807"},
		{name: "semicolon in query", method: "POST", target: "/v1/topics/orders/produce?key=a;b", body: "x",
			wantStatus: 400, wantMessage: "invalid query string: invalid semicolon separator in query"},
		{name: "bad topic name", method: "POST", target: "/v1/topics/a%24b/produce", body: "x",
			wantStatus: 400, wantMessage: nameRule},
	})
}

// TestDecodeProduceTooLargeWithoutLength covers a chunked body: no
// Content-Length, so the cap is met while reading.
func TestDecodeProduceTooLargeWithoutLength(t *testing.T) {
	request := httptest.NewRequest("POST", "/v1/topics/orders/produce", io.MultiReader(strings.NewReader(strings.Repeat("x", 1<<20+1))))
	request.ContentLength = -1
	_, failed := newTestCodec().Decode(request)
	requireFailure(t, failed, 413, "request body too large")
}

// TestDecodeBodyCapFromServer covers a body capped by http.MaxBytesReader
// before it reaches Decode: still 413.
func TestDecodeBodyCapFromServer(t *testing.T) {
	request := httptest.NewRequest("POST", "/v1/topics", strings.NewReader(`{"name":"orders"}`))
	request.ContentLength = -1
	request.Body = http.MaxBytesReader(httptest.NewRecorder(), request.Body, 4)
	_, failed := newTestCodec().Decode(request)
	requireFailure(t, failed, 413, "request body too large")
}

func TestDecodeConsume(t *testing.T) {
	consume := func(partition, max int, waitMs int64) msg.Consume {
		return msg.Consume{Topic: "orders", Partition: partition, Max: max, WaitMs: waitMs}
	}
	runDecodeCases(t, []decodeCase{
		{name: "no parameters", method: "GET", target: "/v1/topics/orders/consume",
			wantRoute: RouteConsume, want: consume(msg.PartitionNone, 0, 0)},
		{name: "wait, partition and max", method: "GET", target: "/v1/topics/orders/consume?wait=2s&partition=1&max=10",
			wantRoute: RouteConsume, want: consume(1, 10, 2000)},
		{name: "max 1 and 100", method: "GET", target: "/v1/topics/orders/consume?max=100&wait=500ms",
			wantRoute: RouteConsume, want: consume(msg.PartitionNone, 100, 500)},
		{name: "negative wait is 0", method: "GET", target: "/v1/topics/orders/consume?wait=-5s",
			wantRoute: RouteConsume, want: consume(msg.PartitionNone, 0, 0)},
		{name: "long wait clamped", method: "GET", target: "/v1/topics/orders/consume?wait=1h",
			wantRoute: RouteConsume, want: consume(msg.PartitionNone, 0, 10_000)},
		{name: "local_only ignored", method: "GET", target: "/v1/topics/orders/consume?local_only=1",
			wantRoute: RouteConsume, want: consume(msg.PartitionNone, 0, 0)},
		{name: "replay", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=7",
			wantRoute: RouteConsume, want: msg.Replay{Topic: "orders", Partition: 0, Offset: 7}},
		{name: "replay at the largest offset, wait ignored", method: "GET",
			target:    "/v1/topics/orders/consume?partition=3&offset=18446744073709551615&wait=1s",
			wantRoute: RouteConsume, want: msg.Replay{Topic: "orders", Partition: 3, Offset: 18446744073709551615}},
		{name: "bad wait", method: "GET", target: "/v1/topics/orders/consume?wait=soon",
			wantStatus: 400, wantMessage: "invalid wait: want a Go duration such as 500ms or 10s"},
		{name: "wait without unit", method: "GET", target: "/v1/topics/orders/consume?wait=10",
			wantStatus: 400, wantMessage: "invalid wait: want a Go duration such as 500ms or 10s"},
		{name: "offset without partition", method: "GET", target: "/v1/topics/orders/consume?offset=3",
			wantStatus: 400, wantMessage: "partition required for replay-mode consume"},
		{name: "negative offset", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=-1",
			wantStatus: 400, wantMessage: "invalid offset: want an integer from 0 to 18446744073709551615"},
		{name: "empty offset", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=",
			wantStatus: 400, wantMessage: "invalid offset: want an integer from 0 to 18446744073709551615"},
		{name: "max with replay", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=1&max=5",
			wantStatus: 400, wantMessage: "max does not apply to replay-mode consume"},
		{name: "max 0", method: "GET", target: "/v1/topics/orders/consume?max=0",
			wantStatus: 400, wantMessage: "invalid max: want an integer from 1 to 100"},
		{name: "max 101", method: "GET", target: "/v1/topics/orders/consume?max=101",
			wantStatus: 400, wantMessage: "invalid max: want an integer from 1 to 100"},
		{name: "negative partition", method: "GET", target: "/v1/topics/orders/consume?partition=-2",
			wantStatus: 400, wantMessage: "invalid partition: want an integer from 0 to 9223372036854775807"},
		{name: "bad topic name", method: "GET", target: "/v1/topics/%2e/consume",
			wantStatus: 400, wantMessage: nameRule},
	})
}

func TestDecodeConsumeWaitWithZeroMaximum(t *testing.T) {
	config := DefaultCodecConfig()
	config.ConsumeWaitMaxMs = 0
	decoded, failed := NewCodec(config).Decode(httptest.NewRequest("GET", "/v1/topics/t/consume?wait=5s", nil))
	require.Nil(t, failed)
	require.Equal(t, msg.Consume{Topic: "t", Partition: msg.PartitionNone}, decoded.Request)
}

func TestDecodeAck(t *testing.T) {
	ack := func(action msg.AckAction, batch bool, handles ...string) msg.Ack {
		return msg.Ack{Topic: "orders", Handles: handles, Action: action, Batch: batch}
	}
	const target = "/v1/topics/orders/ack"
	runDecodeCases(t, []decodeCase{
		{name: "ack", method: "POST", target: target + "?receipt_handle=1:2:3:0123456789abcdef",
			wantRoute: RouteAck, want: ack(msg.AckCommit, false, "1:2:3:0123456789abcdef")},
		{name: "a handle given twice", method: "POST", target: target + "?receipt_handle=1:2:3:0123456789abcdef&receipt_handle=junk",
			wantStatus: 400, wantMessage: `duplicate query parameter "receipt_handle"`},
		{name: "extend false", method: "POST", target: target + "?receipt_handle=0:0:1:0123456789abcdef&extend=false",
			wantRoute: RouteAck, want: ack(msg.AckCommit, false, "0:0:1:0123456789abcdef")},
		{name: "extend empty", method: "POST", target: target + "?receipt_handle=0:0:1:0123456789abcdef&extend=",
			wantRoute: RouteAck, want: ack(msg.AckCommit, false, "0:0:1:0123456789abcdef")},
		{name: "extend true", method: "POST", target: target + "?receipt_handle=0:0:1:0123456789abcdef&extend=true",
			wantRoute: RouteAck, want: ack(msg.AckExtend, false, "0:0:1:0123456789abcdef")},
		{name: "extend 1", method: "POST", target: target + "?receipt_handle=0:0:1:0123456789abcdef&extend=1",
			wantRoute: RouteAck, want: ack(msg.AckExtend, false, "0:0:1:0123456789abcdef")},
		{name: "nack", method: "POST", target: target + "?receipt_handle=0:0:1:0123456789abcdef&extend=0",
			wantRoute: RouteAck, want: ack(msg.AckNack, false, "0:0:1:0123456789abcdef")},
		{name: "query handle wins over a JSON body", method: "POST", target: target + "?receipt_handle=0:0:1:0123456789abcdef",
			contentType: "application/json", body: `{"receipt_handles":["9:9:9"]}`,
			wantRoute: RouteAck, want: ack(msg.AckCommit, false, "0:0:1:0123456789abcdef")},
		{name: "batch", method: "POST", target: target, contentType: "application/json",
			body:      `{"receipt_handles":["1:2:3:0123456789abcdef","4:5:6:0123456789abcdef"]}`,
			wantRoute: RouteAck, want: ack(msg.AckCommit, true, "1:2:3:0123456789abcdef", "4:5:6:0123456789abcdef")},
		{name: "batch extend", method: "POST", target: target, contentType: "application/json; charset=utf-8",
			body:      `{"receipt_handles":["1:2:3:0123456789abcdef"],"extend":"true"}`,
			wantRoute: RouteAck, want: ack(msg.AckExtend, true, "1:2:3:0123456789abcdef")},
		{name: "batch nack", method: "POST", target: target, contentType: "application/json",
			body:      `{"receipt_handles":["1:2:3:0123456789abcdef"],"extend":"0"}`,
			wantRoute: RouteAck, want: ack(msg.AckNack, true, "1:2:3:0123456789abcdef")},
		{name: "missing handle", method: "POST", target: target,
			wantStatus: 400, wantMessage: "receipt_handle required"},
		{name: "empty handle", method: "POST", target: target + "?receipt_handle=",
			wantStatus: 400, wantMessage: "receipt_handle required"},
		{name: "handle not three fields", method: "POST", target: target + "?receipt_handle=1:2",
			wantStatus: 400, wantMessage: "receipt handle is malformed"},
		{name: "handle nonce 0", method: "POST", target: target + "?receipt_handle=1:2:0",
			wantStatus: 400, wantMessage: "receipt handle is malformed"},
		{name: "handle with sign", method: "POST", target: target + "?receipt_handle=%2B1:2:3:0123456789abcdef",
			wantStatus: 400, wantMessage: "receipt handle is malformed"},
		{name: "bad extend", method: "POST", target: target + "?receipt_handle=1:2:3:0123456789abcdef&extend=yes",
			wantStatus: 400, wantMessage: `invalid extend: want "true" or "1" (renew the lease), "0" (release for redelivery), or "false" or none (ack)`},
		{name: "batch bad extend", method: "POST", target: target, contentType: "application/json",
			body:       `{"receipt_handles":["1:2:3:0123456789abcdef"],"extend":"later"}`,
			wantStatus: 400, wantMessage: `invalid extend: want "true" or "1" (renew the lease), "0" (release for redelivery), or "false" or none (ack)`},
		{name: "batch extend in query", method: "POST", target: target + "?extend=true", contentType: "application/json",
			body:       `{"receipt_handles":["1:2:3:0123456789abcdef"]}`,
			wantStatus: 400, wantMessage: "extend goes in the body of a batch ack, not in the query"},
		{name: "batch unknown field", method: "POST", target: target, contentType: "application/json",
			body:       `{"receipt_handles":["1:2:3:0123456789abcdef"],"handles":[]}`,
			wantStatus: 400, wantMessage: `invalid json: unknown field "handles"`},
		{name: "batch extend as boolean", method: "POST", target: target, contentType: "application/json",
			body:       `{"receipt_handles":["1:2:3:0123456789abcdef"],"extend":true}`,
			wantStatus: 400, wantMessage: `invalid json: field "extend" must be a string, not a JSON bool`},
		{name: "batch empty list", method: "POST", target: target, contentType: "application/json",
			body:       `{"receipt_handles":[]}`,
			wantStatus: 400, wantMessage: "receipt_handles required"},
		{name: "batch malformed handle", method: "POST", target: target, contentType: "application/json",
			body:       `{"receipt_handles":["1:2:3:0123456789abcdef","x"]}`,
			wantStatus: 400, wantMessage: "receipt_handles[1]: receipt handle is malformed"},
		{name: "batch too many handles", method: "POST", target: target, contentType: "application/json",
			body:       `{"receipt_handles":[` + strings.Repeat(`"1:2:3:0123456789abcdef",`, msg.AckBatchHandlesMax) + `"1:2:3:0123456789abcdef"]}`,
			wantStatus: 413, wantMessage: "batch ack has more than 1000 receipt handles"},
	})
}

func TestDecodeAckBatchAtLimit(t *testing.T) {
	body := `{"receipt_handles":[` + strings.TrimSuffix(strings.Repeat(`"1048576:18446744073709551615:18446744073709551615:0123456789abcdef",`, msg.AckBatchHandlesMax), ",") + `]}`
	request := httptest.NewRequest("POST", "/v1/topics/orders/ack", strings.NewReader(body))
	request.Header.Set("Content-Type", "application/json")
	decoded, failed := newTestCodec().Decode(request)
	require.Nil(t, failed, "the longest handles at the batch limit must fit in a JSON body")
	require.Len(t, decoded.Request.(msg.Ack).Handles, msg.AckBatchHandlesMax)
}

func TestDecodeMuxAnswers(t *testing.T) {
	codec := newTestCodec()
	cases := []struct {
		name, method, target string
		status               int
		body                 string
		allow                string
	}{
		{"unknown path", "GET", "/v1/nothing", 404, "404 page not found\n", ""},
		{"wrong method on users", "PATCH", "/v1/users", 405, "Method Not Allowed\n", "GET, HEAD, POST"},
		{"unknown sub path", "GET", "/v1/topics/orders/partitions", 404, "404 page not found\n", ""},
		{"wrong method on children", "PUT", "/v1/topics/orders/children", 405, "Method Not Allowed\n", "GET, HEAD, POST"},
		{"wrong method on topics", "PUT", "/v1/topics", 405, "Method Not Allowed\n", "GET, HEAD, POST"},
		{"wrong method on produce", "GET", "/v1/topics/orders/produce", 405, "Method Not Allowed\n", "POST"},
		{"wrong method on topic", "POST", "/v1/topics/orders", 405, "Method Not Allowed\n", "DELETE, GET, HEAD, PATCH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			decoded, failed := codec.Decode(httptest.NewRequest(tc.method, tc.target, nil))
			require.NotNil(t, failed)
			require.Equal(t, Decoded{}, decoded)
			require.Nil(t, failed.Err)
			require.Equal(t, tc.status, failed.Status())
			require.Equal(t, tc.body, string(failed.Response.Body))
			require.Equal(t, "text/plain; charset=utf-8", failed.Response.Header.Get("Content-Type"))
			require.Equal(t, tc.allow, failed.Response.Header.Get("Allow"))
		})
	}
}

func TestDecodeUncleanPathRedirects(t *testing.T) {
	_, failed := newTestCodec().Decode(httptest.NewRequest("GET", "/v1//topics", nil))
	require.NotNil(t, failed)
	require.Equal(t, http.StatusTemporaryRedirect, failed.Status())
	require.Equal(t, "/v1/topics", failed.Response.Header.Get("Location"))
}

func TestDecodeFailureKeepsRoute(t *testing.T) {
	decoded, failed := newTestCodec().Decode(httptest.NewRequest("POST", "/v1/topics/orders/ack", nil))
	require.NotNil(t, failed)
	require.Equal(t, Decoded{Route: RouteAck}, decoded)
}

func TestDecodeDecommissionErrors(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "member id too long", method: "POST", target: "/v1/cluster/members/" + strings.Repeat("n", 65) + "/decommission",
			wantStatus: 400, wantMessage: "invalid member id: want 1 to 64 characters of A-Z a-z 0-9 . _ -"},
		{name: "member id with a bad character", method: "DELETE", target: "/v1/cluster/members/n%21/decommission",
			wantStatus: 400, wantMessage: "invalid member id: want 1 to 64 characters of A-Z a-z 0-9 . _ -"},
	})
}
