package httpapi

import (
	"strings"
	"testing"
)

// nestedArrays is a JSON value of depth arrays nested in one another.
func nestedArrays(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// TestABodyNestedPastTheParsersBoundIsNamedSo: a JSON body or a batch
// line that nests its arrays and objects past the parser's bound (10,000
// levels, the object of the body included) is 400 naming that bound. It
// was answered with encoding/json's own words ("invalid character '['
// exceeded max depth"), which named neither the bound nor how deep the
// body may go. One level less is read, and refused for what it holds.
func TestABodyNestedPastTheParsersBoundIsNamedSo(t *testing.T) {
	tooDeep := "the body nests its arrays and objects more than 10000 levels deep (at most 10000)"
	runDecodeCases(t, []decodeCase{
		{name: "create at the bound", method: "POST", target: "/v1/topics",
			body:       `{"name":"orders","owner":` + nestedArrays(jsonNestingDepthMax-1) + `}`,
			wantStatus: 400, wantMessage: `invalid json: field "owner" must be a string, not a JSON array`},
		{name: "create past the bound", method: "POST", target: "/v1/topics",
			body:       `{"name":"orders","owner":` + nestedArrays(jsonNestingDepthMax) + `}`,
			wantStatus: 400, wantMessage: "invalid json: " + tooDeep},
		{name: "batch ack past the bound", method: "POST", target: "/v1/topics/orders/ack", contentType: "application/json",
			body:       `{"receipt_handles":` + nestedArrays(jsonNestingDepthMax) + `}`,
			wantStatus: 400, wantMessage: "invalid json: " + tooDeep},
		{name: "batch line past the bound", method: "POST", target: "/v1/topics/orders/produce", contentType: "application/x-ndjson",
			body:       `{"payload":1}` + "\n" + `{"payload":` + nestedArrays(jsonNestingDepthMax) + `}`,
			wantStatus: 400, wantMessage: "invalid ndjson line 2: the line nests its arrays and objects more than 10000 levels deep (at most 10000)"},
	})
}
