package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// A key given twice in one JSON object is found at any depth; at the top
// level regardless of case (struct fields match that way), deeper only
// exactly.
func TestFindDuplicateKey(t *testing.T) {
	cases := map[string]string{
		`{"name":"a","name":"b"}`:                    "name",
		`{"name":"a","NAME":"b"}`:                    "name",
		`{"a":{"x":1,"y":{"z":1,"z":2}}}`:            "z",
		`{"a":[{"x":1},{"x":1,"x":2}]}`:              "x",
		`{"a":{"X":1,"x":2}}`:                        "",
		`{"a":[1,{"b":2},[3,{"b":4}]],"b":{"a":1}}`:  "",
		`{"a":{"b":1},"c":[{"b":1},{"b":1}],"d":[]}`: "",
		`[{"a":1},{"a":1}]`:                          "",
		`{"a":1,`:                                    "",
		`{"s":"\"a\":1","a":1}`:                      "",
	}
	for document, want := range cases {
		require.Equal(t, want, findDuplicateKey([]byte(document)), "%s", document)
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
