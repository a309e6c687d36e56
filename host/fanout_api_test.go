package host

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every fan-out route and its error codes (docs/api.md#fan-out-children),
// on one node.
func TestFanoutRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create parent", postJSON("/v1/topics", `{"name":"orders","retention_ms":86400000}`), 201, ""},
		{"create other", postJSON("/v1/topics", `{"name":"audit"}`), 201, `"name":"audit"`},
		{"attach", postJSON("/v1/topics/orders/children", `{"child":"audit"}`), 200, `"role":"parent","children":["audit"]`},
		{"child shows its link", get("/v1/topics/audit"), 200, `"role":"child","parent":"orders","attach_epoch":"`},
		{"attach again", postJSON("/v1/topics/orders/children", `{"child":"audit"}`), 409, `already a child`},
		{"attach parent as child", postJSON("/v1/topics/audit/children", `{"child":"orders"}`), 409, `depth 1`},
		{"attach itself", postJSON("/v1/topics/orders/children", `{"child":"orders"}`), 409, `its own child`},
		{"attach missing child", postJSON("/v1/topics/orders/children", `{"child":"nope"}`), 404, `nope`},
		{"attach to missing parent", postJSON("/v1/topics/nope/children", `{"child":"audit"}`), 404, `"error"`},
		{"attach without child", postJSON("/v1/topics/orders/children", `{}`), 400, `child is required`},
		{"attach negative delay", postJSON("/v1/topics/orders/children", `{"child":"x","delay_ms":-1}`), 400, `delay_ms`},
		{"attach delay over a year", postJSON("/v1/topics/orders/children", `{"child":"x","delay_ms":31536000001}`), 400, `one year`},
		{"create delay child", postJSON("/v1/topics", `{"name":"later","parent":"orders","fanout_delay_ms":60000}`), 201,
			`"partitions":3,"retention_ms":`},
		{"delay child info", get("/v1/topics/later"), 200, `"fanout_delay_ms":60000`},
		{"create delay past retention", postJSON("/v1/topics", `{"name":"late2","parent":"orders","fanout_delay_ms":82800001}`), 400, `needs at least`},
		{"create with missing parent", postJSON("/v1/topics", `{"name":"late3","parent":"nope"}`), 404, `"error"`},
		{"create delay without parent", postJSON("/v1/topics", `{"name":"late4","fanout_delay_ms":5}`), 400, `requires parent`},
		{"created nothing on failure", get("/v1/topics/late2"), 404, `"error"`},
		{"list children", get("/v1/topics/orders/children"), 200,
			`{"parent":"orders","children":[{"name":"audit","delay_ms":0,"lag_messages":0,`},
		{"list children of missing", get("/v1/topics/nope/children"), 404, `"error"`},
		{"produce to delay child", post("/v1/topics/later/produce", "text/plain", "x"), 409, `direct produce to a delayed child topic is not allowed`},
		{"produce to plain child", post("/v1/topics/audit/produce", "text/plain", "x"), 202, `"offset":0`},
		{"retention below delay cover", patch("/v1/topics/orders", `{"retention_ms":3600000}`), 400, `needs at least`},
		{"detach", del("/v1/topics/orders/children/audit"), 204, ""},
		{"detach again", del("/v1/topics/orders/children/audit"), 404, `not a child`},
		{"detach from missing parent", del("/v1/topics/nope/children/audit"), 404, `"error"`},
		{"detached is standalone", get("/v1/topics/audit"), 200, `"name":"audit","partitions":3`},
		{"delete parent", del("/v1/topics/orders"), 204, ""},
		{"orphaned child is standalone", get("/v1/topics/later"), 200, `"created_at"`},
	})
	_, body := call(t, h, get("/v1/topics/later"))
	if strings.Contains(body, `"parent"`) || strings.Contains(body, `"role"`) {
		t.Fatalf("a child whose parent was deleted still names a link: %s", body)
	}
}

// A parent has at most 108 children: the 109th attach is a 409.
func TestFanoutChildLimitOverHTTP(t *testing.T) {
	h := testHost(t)
	steps := []step{{"create parent", postJSON("/v1/topics", `{"name":"p"}`), 201, ""}}
	for i := range 109 {
		steps = append(steps, step{fmt.Sprintf("create c%d", i), postJSON("/v1/topics", fmt.Sprintf(`{"name":"c%d"}`, i)), 201, ""})
	}
	for i := range 108 {
		steps = append(steps, step{fmt.Sprintf("attach c%d", i), postJSON("/v1/topics/p/children", fmt.Sprintf(`{"child":"c%d"}`, i)), 200, ""})
	}
	steps = append(steps, step{"attach the 109th", postJSON("/v1/topics/p/children", `{"child":"c108"}`), 409, `limit of 108 children`})
	runSteps(t, h, steps)
}

// A record produced to a parent over HTTP reaches its child, and the lag
// and the copy metric show it (bounded wait: the copy runs on the node's
// ticks, in real time here).
func TestFanoutCopiesOverHTTP(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create parent", postJSON("/v1/topics", `{"name":"orders"}`), 201, ""},
		{"create child", postJSON("/v1/topics", `{"name":"audit","parent":"orders"}`), 201, `"parent":"orders"`},
	})
	require.Eventually(t, func() bool {
		_, body := call(t, h, get("/v1/topics/orders/children"))
		return strings.Contains(body, `"lag_complete":true`)
	}, 5*time.Second, 10*time.Millisecond, "every cursor of the parent reports")
	runSteps(t, h, []step{
		{"produce", post("/v1/topics/orders/produce?partition=2&key=k", "text/plain", "hello"), 202, `{"partition":2,"offset":0}`},
	})
	require.Eventually(t, func() bool {
		status, body := call(t, h, get("/v1/topics/audit/consume?partition=2&offset=0"))
		return status == 200 && strings.Contains(body, `"key":"k"`) && strings.Contains(body, `hello`)
	}, 5*time.Second, 10*time.Millisecond, "the record reached the child's partition 2 with its key")
	runSteps(t, h, []step{
		{"lag drained", get("/v1/topics/orders/children"), 200, `"lag_messages":0,"lag_complete":true`},
		{"copy counted", get("/metrics"), 200, `narad_fanout_committed_total{child="audit",parent="orders"} 1`},
	})
	// A detach drops the link's series, as a deletion does (metrics audit
	// finding 5: they stayed until a topic was deleted).
	runSteps(t, h, []step{{"detach", del("/v1/topics/orders/children/audit"), 204, ""}})
	require.Eventually(t, func() bool {
		_, body := call(t, h, get("/metrics"))
		return !strings.Contains(body, `narad_fanout_committed_total{child="audit"`)
	}, 5*time.Second, 10*time.Millisecond, "the detached link's series are gone")
}

// A child's schema must be absent (it takes its parent's) or identical,
// and only the parent changes it.
func TestFanoutSchemaRulesOverHTTP(t *testing.T) {
	h := testHost(t)
	schema := `{"type":"object","properties":{"id":{"type":"integer"}}}`
	other := `{"type":"object","properties":{"name":{"type":"string"}}}`
	runSteps(t, h, []step{
		{"create parent", postJSON("/v1/topics", `{"name":"typed","schema":`+schema+`}`), 201, `"schema_version":1`},
		{"create child with another schema", postJSON("/v1/topics", `{"name":"c1","parent":"typed","schema":`+other+`}`), 409, `schema`},
		{"create child without a schema", postJSON("/v1/topics", `{"name":"c2","parent":"typed"}`), 201, `"schema_version":1`},
		{"the child took the parent's schema", get("/v1/topics/c2/schema"), 200, `"id"`},
		{"alter the child's schema", patch("/v1/topics/c2", `{"schema":`+schema+`}`), 409, `manages its schema`},
		{"an incompatible one is refused as a child's, not as incompatible", patch("/v1/topics/c2", `{"schema":`+other+`}`), 409, `manages its schema`},
		{"alter the parent's schema", patch("/v1/topics/typed", `{"schema":{"type":"object","properties":{"id":{"type":"integer"},"note":{"type":"string"}}}}`), 200, `"schema_version":2`},
		{"the child follows", get("/v1/topics/c2"), 200, `"schema_version":2`},
		{"the child validates against it", post("/v1/topics/c2/produce", "application/json", `{"id":"x"}`), 400, `"error"`},
	})
}

// The lag of a fan-out child is one series per parent and child, summed
// over the parent partitions this node owns. A series per partition made
// the scrape, and the loop's poll that rebuilds it, grow with a parent's
// partitions times its children: 11,664 series for one parent of 108
// partitions, and about half a million on a node within its topic and
// partition limits (ten such parents already held the loop 170 ms at
// every poll).
func TestFanoutLagIsOneSeriesPerChild(t *testing.T) {
	h := testHost(t)
	steps := []step{
		{"create parent", postJSON("/v1/topics", `{"name":"orders","partitions":12,"retention_ms":86400000}`), 201, ""},
		{"create a delay child", postJSON("/v1/topics", `{"name":"later","parent":"orders","fanout_delay_ms":3600000}`), 201, ""},
	}
	for i := range 3 {
		steps = append(steps, step{fmt.Sprintf("create child c%d", i), postJSON("/v1/topics", fmt.Sprintf(`{"name":"c%d","parent":"orders"}`, i)), 201, ""})
	}
	runSteps(t, h, steps)
	require.Eventually(t, func() bool {
		_, body := call(t, h, get("/v1/topics/orders/children"))
		return strings.Count(body, `"lag_complete":true`) == 4
	}, 5*time.Second, 10*time.Millisecond, "every cursor of the parent is loaded")
	for partition := range 5 {
		runSteps(t, h, []step{{"produce", post(fmt.Sprintf("/v1/topics/orders/produce?partition=%d", 2*partition), "text/plain", "x"), 202, ""}})
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	// Publish the gauges now; a read through the loop is answered after
	// the stats the poll asked for.
	h.pollInventory(stopped)
	runSteps(t, h, []step{{"a read after the poll", get("/v1/topics"), 200, ""}})
	_, scrape := call(t, h, get("/metrics"))
	var series []string
	for line := range strings.Lines(scrape) {
		if strings.HasPrefix(line, "narad_fanout_lag_messages{") {
			series = append(series, strings.TrimSuffix(line, "\n"))
		}
	}
	require.Len(t, series, 4, "one lag series per child, not per child and partition: %q", series)
	require.Contains(t, series, `narad_fanout_lag_messages{child="later",parent="orders"} 5`,
		"the delay child's lag is its five records due in an hour, summed over the partitions")
}
