package httpapi

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkQuery fails exactly when parseQuery does, with the same answer.
func TestCheckQueryAgreesWithParseQuery(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const alphabet = "ab=&%2+;x1"
	for range 50_000 {
		b := make([]byte, rng.IntN(14))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		r := &http.Request{URL: &url.URL{Path: "/v1/topics", RawQuery: string(b)}}
		_, want := parseQuery(r)
		require.Equal(t, want, checkQuery(r), "query %q", b)
	}
}
