package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIntegerParametersNameTheirRange: a query integer is refused with
// the range it must lie in, and the refusal stays true for a value past
// every integer type (an offset past 2^64-1 was told to be "an integer >=
// 0", which it is).
func TestIntegerParametersNameTheirRange(t *testing.T) {
	const (
		offsetRange    = "invalid offset: want an integer from 0 to 18446744073709551615"
		partitionRange = "invalid partition: want an integer from 0 to 9223372036854775807"
	)
	runDecodeCases(t, []decodeCase{
		{name: "offset past 2^64-1", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=18446744073709551616",
			wantStatus: 400, wantMessage: offsetRange},
		{name: "offset far past 2^64", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=99999999999999999999999",
			wantStatus: 400, wantMessage: offsetRange},
		{name: "negative offset", method: "GET", target: "/v1/topics/orders/consume?partition=0&offset=-1",
			wantStatus: 400, wantMessage: offsetRange},
		{name: "consume partition past 2^63-1", method: "GET", target: "/v1/topics/orders/consume?partition=9223372036854775808",
			wantStatus: 400, wantMessage: partitionRange},
		{name: "produce partition past 2^64", method: "POST", target: "/v1/topics/orders/produce?partition=18446744073709551616", body: "x",
			wantStatus: 400, wantMessage: partitionRange},
		{name: "describe partition past 2^63-1", method: "GET", target: "/v1/topics/orders?partition=9223372036854775808",
			wantStatus: 400, wantMessage: partitionRange},
		{name: "negative partition", method: "GET", target: "/v1/topics/orders?partition=-1",
			wantStatus: 400, wantMessage: partitionRange},
		{name: "limit past 2^64", method: "GET", target: "/v1/topics?limit=18446744073709551616",
			wantStatus: 400, wantMessage: "invalid limit: want an integer from 1 to 1000"},
		{name: "max past 2^64", method: "GET", target: "/v1/topics/orders/consume?max=18446744073709551616",
			wantStatus: 400, wantMessage: "invalid max: want an integer from 1 to 100"},
	})
	for _, version := range []string{"0", "-1", "9223372036854775808", "18446744073709551616", "v2"} {
		_, failed := schemaVersionParam(httptest.NewRequest("GET", "/v1/topics/orders/schema?version="+version, nil))
		requireFailure(t, failed, 400, "invalid version \""+version+"\": want an integer from 1 to 9223372036854775807")
	}
	version, failed := schemaVersionParam(httptest.NewRequest("GET", "/v1/topics/orders/schema?version=9223372036854775807", nil))
	require.Nil(t, failed)
	require.Equal(t, 9223372036854775807, version, "the largest version in the range is taken")
}
