package host

import (
	"strings"
	"testing"
)

// Property: through the real handler and node, a topic's dead-letter
// setting is taken at create and by PATCH, shown in the topic JSON, and
// every bad value is refused with a clear error that changes nothing;
// deleting the dead-letter topic turns the setting off in the same
// metastore entry.
func TestDeadLetterSettingRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create the dead-letter topic", postJSON("/v1/topics", `{"name":"dead"}`), 201, `"name":"dead"`},
		{"plain topic shows no setting", get("/v1/topics/dead"), 200, `"name":"dead"`},
		{"create with the setting", postJSON("/v1/topics", `{"name":"orders","max_deliveries":3,"dead_letter_topic":"dead"}`), 201,
			`"max_deliveries":3,"dead_letter_topic":"dead"`},
		{"get shows it", get("/v1/topics/orders"), 200, `"max_deliveries":3,"dead_letter_topic":"dead"`},
		{"list shows it", get("/v1/topics"), 200, `"max_deliveries":3,"dead_letter_topic":"dead"`},
		{"create: missing dead-letter topic", postJSON("/v1/topics", `{"name":"a","max_deliveries":3,"dead_letter_topic":"nope"}`), 404,
			`dead_letter_topic \"nope\" not found`},
		{"create: itself", postJSON("/v1/topics", `{"name":"a","max_deliveries":3,"dead_letter_topic":"a"}`), 400,
			`cannot be its own dead_letter_topic`},
		{"create: max without topic", postJSON("/v1/topics", `{"name":"a","max_deliveries":3}`), 400,
			`max_deliveries needs a dead_letter_topic`},
		{"create: over the bound", postJSON("/v1/topics", `{"name":"a","max_deliveries":1001,"dead_letter_topic":"dead"}`), 400,
			`max_deliveries must be between 0 (off) and 1000, got 1001`},
		{"create: negative", postJSON("/v1/topics", `{"name":"a","max_deliveries":-1,"dead_letter_topic":"dead"}`), 400,
			`max_deliveries must be >= 0`},
		{"create: bad name", postJSON("/v1/topics", `{"name":"a","max_deliveries":1,"dead_letter_topic":"a/b"}`), 400,
			`invalid dead_letter_topic`},
		{"create: wrong type", postJSON("/v1/topics", `{"name":"a","max_deliveries":"3"}`), 400, `invalid json`},
		{"no refused create made a topic", get("/v1/topics/a"), 404, ""},
		{"patch max only", patch("/v1/topics/orders", `{"max_deliveries":1000}`), 200, `"max_deliveries":1000,"dead_letter_topic":"dead"`},
		{"patch: over the bound", patch("/v1/topics/orders", `{"max_deliveries":1001}`), 400, `got 1001`},
		{"patch: itself", patch("/v1/topics/orders", `{"dead_letter_topic":"orders"}`), 400, `cannot be its own dead_letter_topic`},
		{"patch: missing topic", patch("/v1/topics/orders", `{"dead_letter_topic":"nope"}`), 404, `dead_letter_topic \"nope\" not found`},
		{"patch: clearing the topic alone", patch("/v1/topics/orders", `{"dead_letter_topic":""}`), 400, `max_deliveries needs a dead_letter_topic`},
		{"refused patches changed nothing", get("/v1/topics/orders"), 200, `"max_deliveries":1000,"dead_letter_topic":"dead"`},
		{"create a second dead-letter topic", postJSON("/v1/topics", `{"name":"dead2"}`), 201, ""},
		{"patch the topic", patch("/v1/topics/orders", `{"dead_letter_topic":"dead2"}`), 200, `"max_deliveries":1000,"dead_letter_topic":"dead2"`},
		{"patch off", patch("/v1/topics/orders", `{"max_deliveries":0,"dead_letter_topic":""}`), 200, `"name":"orders"`},
		{"patch on again", patch("/v1/topics/orders", `{"max_deliveries":2,"dead_letter_topic":"dead"}`), 200, `"max_deliveries":2,"dead_letter_topic":"dead"`},
		{"delete the dead-letter topic", del("/v1/topics/dead"), 204, ""},
		{"the source's setting is off", get("/v1/topics/orders"), 200, `"name":"orders"`},
	})
	for _, path := range []string{"/v1/topics/orders", "/v1/topics/dead2"} {
		_, body := call(t, h, get(path))
		if strings.Contains(body, "max_deliveries") || strings.Contains(body, "dead_letter_topic") {
			t.Fatalf("%s shows a dead-letter setting it does not have: %s", path, body)
		}
	}
}
