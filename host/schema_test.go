package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// orderSchema: an object with a required string id and an optional
// non-negative integer quantity.
const orderSchema = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"qty":{"type":"integer","minimum":0}}}`

// orderSchemaV2 adds an optional note: an additive change.
const orderSchemaV2 = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"qty":{"type":"integer","minimum":0},"note":{"type":"string","maxLength":3}}}`

// Property: through the real handler and node, a topic's schema is
// compiled at create, enforced on every record of single and batch
// produces (a batch all or nothing, naming the line), refuses non-JSON
// payloads, evolves only additively (each refusal naming its rule and
// property) and reads back by version.
func TestSchemaRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create with schema", postJSON("/v1/topics", `{"name":"orders","schema":`+orderSchema+`}`), 201, `"schema_version":1`},
		{"create plain", postJSON("/v1/topics", `{"name":"plain"}`), 201, `"name":"plain"`},
		{"get shows version", get("/v1/topics/orders"), 200, `"schema_version":1`},
		{"produce valid", post("/v1/topics/orders/produce", "application/json", `{"id":"a","qty":2}`), 202, `"offset":0`},
		{"produce missing required", post("/v1/topics/orders/produce", "application/json", `{"qty":2}`), 400,
			`the message does not match the schema of topic orders (version 1): at the root: missing property 'id'`},
		{"produce wrong type", post("/v1/topics/orders/produce", "application/json", `{"id":7}`), 400, `at /id:`},
		{"produce binary", post("/v1/topics/orders/produce", "application/octet-stream", "\xff\xfe"), 400,
			`the payload is not JSON, and a topic with a schema accepts only JSON payloads`},
		{"produce text", post("/v1/topics/orders/produce", "text/plain", "hello"), 400, `not JSON`},
		{"batch valid", post("/v1/topics/orders/produce", "application/x-ndjson",
			`{"payload":{"id":"b"}}`+"\n"+`{"payload_base64":"eyJpZCI6ImMifQ=="}`+"\n"), 202, `"accepted":2`},
		{"batch with a bad line", post("/v1/topics/orders/produce", "application/x-ndjson",
			`{"payload":{"id":"d"}}`+"\n\n"+`{"payload":{"id":"e","qty":-1}}`+"\n"), 400,
			`record 2 (ndjson line 3) does not match the schema of topic orders (version 1): at /qty:`},
		{"batch with a binary line", post("/v1/topics/orders/produce", "application/x-ndjson",
			`{"payload":{"id":"f"}}`+"\n"+`{"payload_base64":"//4="}`+"\n"), 400, `record 2 (ndjson line 2)`},
		{"nothing of the refused batches landed", get("/v1/topics/orders"), 200, `"high_watermark"`},
		{"plain topic takes anything", post("/v1/topics/plain/produce", "application/octet-stream", "\xff"), 202, ""},
		{"read back", get("/v1/topics/orders/schema"), 200, `{"version":1,"schema":` + orderSchema + `}`},
		{"read back plain", get("/v1/topics/plain/schema"), 404, `topic plain has no schema`},
		{"read back missing", get("/v1/topics/nope/schema"), 404, `not found`},
		{"read back bad version", get("/v1/topics/orders/schema?version=0"), 400, `invalid version`},
		{"read back unknown version", get("/v1/topics/orders/schema?version=5"), 404, `no schema version 5`},
		{"evolve: remove property", patch("/v1/topics/orders", `{"schema":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}}`),
			400, `rule \"no property removed\"): property \"qty\"`},
		{"evolve: change type", patch("/v1/topics/orders", `{"schema":`+strings.Replace(orderSchema, `"id":{"type":"string"}`, `"id":{"type":"integer"}`, 1)+`}`),
			400, `rule \"no type change\"): property \"id\"`},
		{"evolve: add required", patch("/v1/topics/orders", `{"schema":`+strings.Replace(orderSchema, `["id"]`, `["id","qty"]`, 1)+`}`),
			400, `rule \"no required field added\"): property \"qty\"`},
		{"evolve: drop required", patch("/v1/topics/orders", `{"schema":`+strings.Replace(orderSchema, `"required":["id"],`, ``, 1)+`}`),
			400, `rule \"no required field dropped\"): property \"id\"`},
		{"evolve: does not compile", patch("/v1/topics/orders", `{"schema":{"type":"object","properties":{"id":{"type":"string"},"qty":{"type":"integer"}},"required":["id"],"minProperties":"x"}}`),
			400, `invalid schema`},
		{"still version 1", get("/v1/topics/orders"), 200, `"schema_version":1`},
		{"evolve: add property", patch("/v1/topics/orders", `{"schema":`+orderSchemaV2+`}`), 200, `"schema_version":2`},
		{"new version enforced at once", post("/v1/topics/orders/produce", "application/json", `{"id":"g","note":"long"}`), 400,
			`(version 2): at /note:`},
		{"read back latest", get("/v1/topics/orders/schema"), 200, `{"version":2,"schema":` + orderSchemaV2 + `}`},
		{"read back version 1", get("/v1/topics/orders/schema?version=1"), 200, `{"version":1,"schema":` + orderSchema + `}`},
		{"schema added to a plain topic", patch("/v1/topics/plain", `{"schema":{"type":"object"}}`), 200, `"schema_version":1`},
		{"and enforced", post("/v1/topics/plain/produce", "application/octet-stream", "\xff"), 400, `not JSON`},
		{"rejections counted", get("/metrics"), 200, `narad_produce_rejections_total{reason="schema",topic="orders"} 7`},
	})
	status, body := call(t, h, get("/v1/topics/orders"))
	require.Equal(t, 200, status)
	var detail struct {
		PartitionStats []struct {
			HighWatermark int `json:"high_watermark"`
		} `json:"partition_stats"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &detail))
	landed := 0
	for _, stats := range detail.PartitionStats {
		landed += stats.HighWatermark
	}
	require.Equal(t, 3, landed, "the accepted single and batch of two landed; no record of a refused batch did")
}

// orderSchemaV2Reordered is orderSchemaV2 with its keys in another order
// and whitespace between them: the same schema.
const orderSchemaV2Reordered = `{ "properties": { "note": {"maxLength": 3, "type": "string"},
	"qty": {"minimum": 0, "type": "integer"}, "id": {"type": "string"} }, "required": ["id"], "type": "object" }`

// Property: an alter sending the topic's latest schema again (a retry),
// as sent or only reordered and spaced out, makes no version: it answers
// 200 with the version unchanged, applies its other fields, and keeps
// the older versions and the stored bytes; a real change still makes the
// next version.
func TestSchemaAlterOfTheLatestSchemaMakesNoVersion(t *testing.T) {
	h := testHost(t)
	steps := []step{
		{"create with schema", postJSON("/v1/topics", `{"name":"orders","schema":`+orderSchema+`}`), 201, `"schema_version":1`},
		{"version 2", patch("/v1/topics/orders", `{"schema":`+orderSchemaV2+`}`), 200, `"schema_version":2`},
	}
	for i := range 9 {
		steps = append(steps, step{fmt.Sprintf("retry %d", i), patch("/v1/topics/orders", `{"schema":`+orderSchemaV2+`}`), 200, `"schema_version":2`})
	}
	steps = append(steps, []step{
		{"reordered, with a retention", patch("/v1/topics/orders", `{"retention_ms":7200000,"schema":`+orderSchemaV2Reordered+`}`), 200,
			`"retention_ms":7200000`},
		{"still version 2", get("/v1/topics/orders"), 200, `"schema_version":2`},
		{"read back latest as first sent", get("/v1/topics/orders/schema"), 200, `{"version":2,"schema":` + orderSchemaV2 + `}`},
		{"version 1 still kept", get("/v1/topics/orders/schema?version=1"), 200, `{"version":1,"schema":` + orderSchema + `}`},
		{"no version 3", get("/v1/topics/orders/schema?version=3"), 404, `no schema version 3`},
		{"a real change", patch("/v1/topics/orders", `{"schema":`+strings.Replace(orderSchemaV2, `"properties":{`, `"properties":{"extra":{"type":"string"},`, 1)+`}`),
			200, `"schema_version":3`},
	}...)
	runSteps(t, h, steps)
}

// Property: a schema that is not a self-contained, compilable JSON Schema
// is refused at create with 400 (413 when too large), and no topic is
// made. Nothing is ever fetched: remote and file references are refused.
// References that loop without reaching into the value are refused; a
// cycle through items compiles.
func TestSchemaCreateRefusals(t *testing.T) {
	h := testHost(t)
	cases := []struct{ name, schema, want string }{
		{"array", `[]`, `schema must be a JSON object or a boolean`},
		{"bad keyword value", `{"type":"nosuchtype"}`, `invalid schema`},
		{"bad regex", `{"type":"string","pattern":"(("}`, `invalid schema`},
		{"remote ref", `{"$ref":"https://example.com/schema.json"}`, `never loaded from a URL or a file`},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, `never loaded from a URL or a file`},
		{"relative ref", `{"$ref":"other.json"}`, `never loaded from a URL or a file`},
		{"dangling local ref", `{"$ref":"#/$defs/missing"}`, `invalid schema`},
		{"ref loop in place", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, `#/$defs/a --allOf--> #/$defs/a/allOf/0 --$ref--> #/$defs/a`},
		{"too deep", strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70), `nests 71 levels deep`},
	}
	for _, c := range cases {
		status, body := call(t, h, postJSON("/v1/topics", `{"name":"t","schema":`+c.schema+`}`))
		require.Equal(t, 400, status, "%s: %s", c.name, body)
		require.Contains(t, body, c.want, c.name)
	}
	big := `{"description":"` + strings.Repeat("x", 256<<10) + `"}`
	status, body := call(t, h, postJSON("/v1/topics", `{"name":"t","schema":`+big+`}`))
	require.Equal(t, 413, status, body)
	require.Contains(t, body, `at most 262144 (256 KiB)`)
	runSteps(t, h, []step{
		{"no topic was made", get("/v1/topics/t"), 404, ""},
		{"self-contained refs compile", postJSON("/v1/topics", `{"name":"t","schema":{"$defs":{"id":{"type":"string"}},"type":"object","properties":{"id":{"$ref":"#/$defs/id"}}}}`), 201, ""},
		{"and validate", post("/v1/topics/t/produce", "application/json", `{"id":1}`), 400, `at /id:`},
		{"cyclic refs compile", postJSON("/v1/topics", `{"name":"tree","schema":{"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}}`), 201, ""},
		{"and validate", post("/v1/topics/tree/produce", "application/json", `{"kids":[{"kids":[{"kids":7}]}]}`), 400, `kids`},
	})
}
