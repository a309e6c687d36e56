package host

import (
	"strconv"
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
			`max_deliveries must be between 0 (off) and 1000, got -1`},
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

// Property: through the real handler and node, a record nacked at its
// last delivery is consumed from the dead-letter topic with its origin,
// is not delivered from its topic again, and is counted.
func TestDeadLetterRoundTrip(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create the dead-letter topic", postJSON("/v1/topics", `{"name":"dead"}`), 201, ""},
		{"create the topic", postJSON("/v1/topics", `{"name":"orders","max_deliveries":1,"dead_letter_topic":"dead"}`), 201, ""},
		{"produce", post("/v1/topics/orders/produce?key=k1&partition=2", "application/json", `{"id":1}`), 202, `"offset":0`},
	})
	status, body := call(t, h, get("/v1/topics/orders/consume?wait=2s"))
	if status != 200 || !strings.Contains(body, `"delivery_count":1`) {
		t.Fatalf("consume: %d %s", status, body)
	}
	handle := between(t, body, `"receipt_handle":"`, `"`)
	runSteps(t, h, []step{
		{"nack its only delivery", post("/v1/topics/orders/ack?receipt_handle="+handle+"&extend=0", "", ""), 204, ""},
		{"the copy arrives with its origin", get("/v1/topics/dead/consume?wait=5s"), 200,
			`"key":"k1","payload":{"id":1}`},
		{"not delivered from its topic again", get("/v1/topics/orders/consume?wait=200ms"), 204, ""},
		{"counted", get("/metrics"), 200, `narad_dead_letters_total{topic="orders"} 1`},
	})
	_, body = call(t, h, get("/v1/topics/dead/consume?partition=0&offset=0"))
	for partition := 1; !strings.Contains(body, "dead_letter") && partition < 3; partition++ {
		_, body = call(t, h, get("/v1/topics/dead/consume?partition="+strconv.Itoa(partition)+"&offset=0"))
	}
	if !strings.Contains(body, `"dead_letter":{"topic":"orders","partition":2,"offset":0,"delivery_count":1}`) {
		t.Fatalf("replayed dead letter lacks its origin: %s", body)
	}
}

// between returns the text of s between the first prefix and the next
// suffix after it.
func between(t *testing.T, s, prefix, suffix string) string {
	t.Helper()
	start := strings.Index(s, prefix)
	if start < 0 {
		t.Fatalf("%q not in %s", prefix, s)
	}
	rest := s[start+len(prefix):]
	return rest[:strings.Index(rest, suffix)]
}
