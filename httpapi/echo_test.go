package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An error message quotes at most echoBytesMax bytes of the client's
// text: a name, key or number that fills a body came back whole, each
// byte escaped (a 14 MB batch line made a 49 MB answer, outside every
// budget).
func TestErrorsQuoteClientTextClipped(t *testing.T) {
	long := strings.Repeat("\u0080", 100_000) // 2 bytes each, 6 once quoted
	cases := []decodeCase{
		{name: "parent", method: "POST", target: "/v1/topics", body: `{"name":"a","parent":"` + long + `"}`},
		{name: "child", method: "POST", target: "/v1/topics/orders/children", body: `{"child":"` + long + `"}`},
		{name: "json unknown field", method: "POST", target: "/v1/topics", body: `{"` + long + `":1}`},
		{name: "json duplicate field", method: "POST", target: "/v1/topics", body: `{"` + long + `":1,"` + long + `":1}`},
		{name: "json number", method: "POST", target: "/v1/topics", body: `{"partitions":1` + strings.Repeat("0", 200_000) + `}`},
		{name: "batch unknown field", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body: `{"payload":1,"` + long + `":1}`},
		{name: "batch partition", method: "POST", target: batchTarget, contentType: "application/x-ndjson",
			body: `{"payload":1,"partition":1` + strings.Repeat("0", 200_000) + `}`},
		{name: "query parameter", method: "GET", target: "/v1/topics?" + strings.Repeat("p", 20_000) + "=1&" + strings.Repeat("p", 20_000) + "=2"},
	}
	codec := newTestCodec()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, failed := codec.Decode(tc.request())
			require.NotNil(t, failed)
			require.Equal(t, 400, failed.Status())
			require.Less(t, len(failed.Response.Body), 1024, "the answer: %.200s...", failed.Response.Body)
		})
	}
}

// A text within the bound is quoted whole, as %q does; a longer one is
// cut at a character's start and says its length.
func TestQuoteClipped(t *testing.T) {
	require.Equal(t, `"p q"`, quoteClipped("p q"))
	long := strings.Repeat("a", echoBytesMax-1) + "é" + "z"
	require.Equal(t, `"`+strings.Repeat("a", echoBytesMax-1)+`"... (130 bytes)`, quoteClipped(long))
	require.Equal(t, quoteClipped(long), quoteClipped([]byte(long)))
}
