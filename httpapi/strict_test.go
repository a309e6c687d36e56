package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// duplicateProbe is what the documents of TestFindDuplicateKey decode
// into: a struct at the top and in each grant, raw JSON elsewhere.
type duplicateProbe struct {
	Name   string            `json:"name"`
	A, B   json.RawMessage   // matched by their Go names, as encoding/json does
	C      []json.RawMessage `json:"c"`
	D      map[string]int    `json:"d"`
	S      string            `json:"s"`
	Grants []struct {
		Action   string   `json:"action"`
		Patterns []string `json:"patterns"`
	} `json:"grants"`
}

// A key given twice in one JSON object is found at any depth. In an object
// that decodes into a struct (the top here, and each grant) two keys are
// the same when encoding/json would fill one field with both: under
// Unicode case folding ("ſ" is "s"), reported by
// the field's name; elsewhere (raw JSON, a map) only exactly.
func TestFindDuplicateKey(t *testing.T) {
	cases := map[string]string{
		`{"name":"a","name":"b"}`:                                 "name",
		`{"name":"a","NAME":"b"}`:                                 "name",
		`{"naMe":"a","ſ":"b","nAme":"c"}`:                         "name",
		`{"s":"a","ſ":"b"}`:                                       "s",
		`{"a":{"x":1,"y":{"z":1,"z":2}}}`:                         "z",
		`{"a":[{"x":1},{"x":1,"x":2}]}`:                           "x",
		`{"a":{"X":1,"x":2}}`:                                     "",
		`{"a":[1,{"b":2},[3,{"b":4}]],"b":{"a":1}}`:               "",
		`{"a":{"b":1},"c":[{"b":1},{"b":1}],"d":{}}`:              "",
		`{"d":{"k":1,"K":2}}`:                                     "",
		`{"d":{"k":1,"k":2}}`:                                     "k",
		`{"grants":[{"action":"a","patterns":[],"Patterns":[]}]}`: "patterns",
		`{"grants":[{"action":"a","ACTION":"b"}]}`:                "action",
		`[{"a":1},{"a":1}]`:                                       "",
		`{"a":1,`:                                                 "",
		`{"s":"\"a\":1","a":1}`:                                   "",
	}
	for document, want := range cases {
		require.Equal(t, want, findDuplicateKey([]byte(document), reflect.TypeFor[duplicateProbe]()), "%s", document)
	}
}

// Duplicate keys in a JSON body and duplicate query parameters are 400 on
// every route, not "the last (or first) one wins".
func TestDuplicatesAreRejectedEverywhere(t *testing.T) {
	const handle = "0:5:1:0123456789abcdef"
	runDecodeCases(t, []decodeCase{
		{name: "create: duplicate field", method: "POST", target: "/v1/topics", contentType: "application/json",
			body: `{"name":"a","partitions":3,"partitions":4}`, wantStatus: 400, wantMessage: `invalid json: duplicate field "partitions"`},
		{name: "create: duplicate field in another case", method: "POST", target: "/v1/topics", contentType: "application/json",
			body: `{"name":"a","Name":"b"}`, wantStatus: 400, wantMessage: `invalid json: duplicate field "name"`},
		{name: "alter: duplicate field", method: "PATCH", target: "/v1/topics/a", contentType: "application/json",
			body: `{"retention_ms":3600000,"retention_ms":7200000}`, wantStatus: 400, wantMessage: `invalid json: duplicate field "retention_ms"`},
		{name: "create: duplicate field in the schema", method: "POST", target: "/v1/topics", contentType: "application/json",
			body: `{"name":"a","schema":{"type":"object","type":"string"}}`, wantStatus: 400, wantMessage: `invalid json: schema: duplicate field "type"`},
		{name: "alter: duplicate field deep in the schema", method: "PATCH", target: "/v1/topics/a", contentType: "application/json",
			body: `{"schema":{"properties":{"a":{"type":"string","type":"integer"}}}}`, wantStatus: 400, wantMessage: `invalid json: schema: duplicate field "type"`},
		{name: "alter: the schema given twice", method: "PATCH", target: "/v1/topics/a", contentType: "application/json",
			body: `{"schema":{"type":"object"},"schema":true}`, wantStatus: 400, wantMessage: `invalid json: duplicate field "schema"`},
		{name: "batch ack: duplicate field", method: "POST", target: "/v1/topics/a/ack", contentType: "application/json",
			body: `{"receipt_handles":["` + handle + `"],"receipt_handles":[]}`, wantStatus: 400, wantMessage: `invalid json: duplicate field "receipt_handles"`},
		{name: "consume: duplicate wait", method: "GET", target: "/v1/topics/a/consume?wait=1s&wait=2s",
			wantStatus: 400, wantMessage: `duplicate query parameter "wait"`},
		{name: "consume: duplicate partition", method: "GET", target: "/v1/topics/a/consume?partition=0&partition=1",
			wantStatus: 400, wantMessage: `duplicate query parameter "partition"`},
		{name: "ack: duplicate handle", method: "POST", target: "/v1/topics/a/ack?receipt_handle=" + handle + "&receipt_handle=" + handle,
			wantStatus: 400, wantMessage: `duplicate query parameter "receipt_handle"`},
		{name: "ack: duplicate extend", method: "POST", target: "/v1/topics/a/ack?receipt_handle=" + handle + "&extend=0&extend=true",
			wantStatus: 400, wantMessage: `duplicate query parameter "extend"`},
		{name: "list: duplicate limit", method: "GET", target: "/v1/topics?limit=1&limit=2",
			wantStatus: 400, wantMessage: `duplicate query parameter "limit"`},
		{name: "describe: duplicate partition", method: "GET", target: "/v1/topics/a?partition=1&partition=1",
			wantStatus: 400, wantMessage: `duplicate query parameter "partition"`},
	})
}

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// A failed body read says what happened without the connection's
// addresses.
func TestReadFailureNamesNoAddress(t *testing.T) {
	address := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 7942}
	peer := &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 50000}
	timedOut := &net.OpError{Op: "read", Net: "tcp", Source: address, Addr: peer, Err: timeoutError{}}
	reset := &net.OpError{Op: "read", Net: "tcp", Source: address, Addr: peer, Err: errors.New("connection reset by peer")}
	for err, want := range map[error]string{
		timedOut:              "could not read request body: timed out",
		reset:                 "could not read request body",
		io.ErrUnexpectedEOF:   "could not read request body: it ended before its announced length",
		errBodyBudgetFull:     errBodyBudget.Message,
		&http.MaxBytesError{}: ErrBodyTooLarge.Message,
	} {
		failed := readFailure(err)
		require.Equal(t, want, failed.Err.Message)
		require.NotContains(t, string(failed.Response.Body), "10.")
	}
}

// Every 503 carries Retry-After; other statuses do not.
func TestEvery503CarriesRetryAfter(t *testing.T) {
	unavailable := errorResponse(msg.Unavailable("the node is busy"))
	require.Equal(t, http.StatusServiceUnavailable, unavailable.Status)
	require.Equal(t, "1", unavailable.Header.Get("Retry-After"))
	shuttingDown := (&apiHandler{backend: &tableBackend{shuttingDown: true}}).health()
	require.Equal(t, "1", shuttingDown.Header.Get("Retry-After"))
	notReady := (&apiHandler{backend: &tableBackend{readyErr: errors.New("not a member")}}).readiness()
	require.Equal(t, "1", notReady.Header.Get("Retry-After"))
	require.Empty(t, errorResponse(msg.Invalid("bad")).Header.Get("Retry-After"))
}

// TestADeepJSONBodyCostsAboutItsSize: a JSON body is held to 1 MiB and
// charged to the body budget by its bytes, and encoding/json refuses any
// document nested deeper than 10,000 levels. But the duplicate-key scan
// that runs first (findDuplicateKey) walks every level with
// json.Decoder.Token, allocating a jsonObject and a map per object: a
// 1 MiB body of `{"a":` repeated, which any authenticated user may send
// to POST /v1/topics (decoded before authorization), makes the server
// allocate about 95 MiB (some 55 MiB live at once) and spend a third of
// a second of CPU before the decoder says "exceeded max depth". The
// body budget bounds the bytes, not this.
func TestADeepJSONBodyCostsAboutItsSize(t *testing.T) {
	codec := newTestCodec()
	body := strings.Repeat(`{"a":`, int(codec.config.JSONBodyBytesMax)/5)
	request, err := http.NewRequest(http.MethodPost, "/v1/topics", strings.NewReader(body))
	require.NoError(t, err)
	request.Header.Set("Content-Type", "application/json")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, failed := codec.Decode(request)
	runtime.ReadMemStats(&after)

	require.NotNil(t, failed)
	require.Equal(t, http.StatusBadRequest, failed.Status())
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(16<<20),
		"decoding a %d-byte JSON body allocated %d MiB", len(body), allocated>>20)
}

// TestDuplicateStructFieldsAreRejectedUnderFolding: docs/api.md#conventions says a JSON
// body with a key given twice in one object is 400, and findDuplicateKey
// means to catch two keys that fill the same struct field. encoding/json
// matches a key to a field under Unicode case folding ("ſ" is "s", the
// Kelvin sign "K" is "k"), in every object it decodes into a struct, not
// only the top-level one; findDuplicateKey folds with strings.ToLower and
// only at the top level. So two keys for one field pass, and the last one
// silently wins.
func TestDuplicateStructFieldsAreRejectedUnderFolding(t *testing.T) {
	// Top level: "partitionſ" fills Partitions exactly as "partitions" does.
	request, err := http.NewRequest(http.MethodPost, "/v1/topics",
		strings.NewReader(`{"name":"orders","partitions":3,"partitionſ":100}`))
	require.NoError(t, err)
	request.Header.Set("Content-Type", "application/json")
	decoded, failed := newTestCodec().Decode(request)
	if failed == nil {
		t.Errorf("create with partitions given twice was accepted as %+v, want 400", decoded.Request.(msg.CreateTopic))
	} else {
		require.Equal(t, http.StatusBadRequest, failed.Status())
		require.Contains(t, failed.Err.Message, "duplicate field")
	}

	// Nested: a grant object of the users API decodes into meta.Grant, where
	// "Patterns" fills the same field as "patterns".
	var body createUserBody
	err = decodeStrictJSON([]byte(`{"username":"u","password":"pw","grants":[{"action":"consume","patterns":["orders"],"Patterns":["*"]}]}`), &body)
	require.Error(t, err, "a grant with patterns given twice was accepted as %+v", body.Grants)
	require.Contains(t, err.Error(), "duplicate field")
}
