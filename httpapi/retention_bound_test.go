package httpapi

import (
	"testing"

	"narad/msg"
)

// TestRetentionHasAnUpperBound: retention_ms was bounded below only; a
// create or an alter past msg.RetentionMsMax (100 years) is now 400
// naming the field and the bound, and the bound itself is taken.
func TestRetentionHasAnUpperBound(t *testing.T) {
	const refusal = "retention_ms must be at most 3153600000000 (100 years), got 3153600000001"
	longest := int64(msg.RetentionMsMax)
	runDecodeCases(t, []decodeCase{
		{name: "create past the bound", method: "POST", target: "/v1/topics", body: `{"name":"orders","retention_ms":3153600000001}`,
			wantStatus: 400, wantMessage: refusal},
		{name: "create far past the bound", method: "POST", target: "/v1/topics", body: `{"name":"orders","retention_ms":9223372036854775807}`,
			wantStatus: 400, wantMessage: "retention_ms must be at most 3153600000000 (100 years), got 9223372036854775807"},
		{name: "alter past the bound", method: "PATCH", target: "/v1/topics/orders", body: `{"retention_ms":3153600000001}`,
			wantStatus: 400, wantMessage: refusal},
		{name: "create at the bound", method: "POST", target: "/v1/topics", body: `{"name":"orders","retention_ms":3153600000000}`,
			wantRoute: RouteCreateTopic, want: msg.CreateTopic{Name: "orders", RetentionMs: longest}},
		{name: "alter at the bound", method: "PATCH", target: "/v1/topics/orders", body: `{"retention_ms":3153600000000}`,
			wantRoute: RouteAlterTopic, want: msg.AlterTopic{Name: "orders", RetentionMs: &longest}},
		{name: "negative still says so", method: "PATCH", target: "/v1/topics/orders", body: `{"retention_ms":-1}`,
			wantStatus: 400, wantMessage: "retention_ms must be 0 (the default) or from 3600000 to 3153600000000 (100 years), got -1"},
	})
}
