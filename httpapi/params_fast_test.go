package httpapi

import (
	"mime"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHasMediaTypeMatchesParse checks the parameterless fast path against
// mime.ParseMediaType on the shapes a client may send.
func TestHasMediaTypeMatchesParse(t *testing.T) {
	values := []string{"", "application/x-ndjson", "Application/X-NDJSON", " application/x-ndjson ",
		"application/x-ndjson; charset=utf-8", "application/x-ndjsonx", "application/x-ndjſon",
		"application/json", "application/octet-stream", "application/x-ndjson;", "text/plain; ;"}
	for _, value := range values {
		for _, mediaType := range []string{mediaTypeNDJSON, "application/json"} {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Header.Set("Content-Type", value)
			parsed, _, err := mime.ParseMediaType(value)
			require.Equal(t, err == nil && parsed == mediaType, hasMediaType(r, mediaType), "%q against %q", value, mediaType)
		}
	}
}

// TestParseQueryEmpty: a request without a query reads as no parameters,
// and a malformed or repeated one still fails.
func TestParseQueryEmpty(t *testing.T) {
	values, failed := parseQuery(httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce", nil))
	require.Nil(t, failed)
	require.Empty(t, values.Get("key"))
	require.False(t, values.Has("partition"))
	_, failed = parseQuery(httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce?key=a&key=b", nil))
	require.NotNil(t, failed)
	_, failed = parseQuery(httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce?key=%zz", nil))
	require.NotNil(t, failed)
}
