package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// validateOne validates records (payloads) against a schema document
// with a fresh registry; id names the version in its cache.
func validateOne(t *testing.T, schema string, payloads ...string) (*ErrorResponse, *schemaRegistry) {
	t.Helper()
	registry := newTestSchemaRegistry()
	records := make([]msg.ProduceRecord, len(payloads))
	for i, payload := range payloads {
		records[i] = msg.ProduceRecord{Payload: []byte(payload), Partition: msg.PartitionNone}
	}
	version := msg.SchemaVersion{Version: 1, ID: 7, Document: []byte(schema)}
	return registry.validate(context.Background(), "t", version, records, nil), registry
}

func jsonString(text string) string {
	encoded, err := json.Marshal(text)
	if err != nil {
		panic(err)
	}
	return string(encoded)
}

// Property: reading a number is counted in the validation work. The
// library reads every number a schema compares (type integer, the
// numeric keywords, const and enum) into a big.Rat, whose cost grows
// with the exponent: before, ten 8-byte numbers 1e999999 against
// {"type":"integer"} items took a third of a second of CPU and were
// accepted (a 1 MiB record of them, over an hour of a core); now the
// request is refused before the library runs. Ordinary numbers, many of
// them, still pass.
func TestSchemaWorkCountsReadingNumbers(t *testing.T) {
	integers := `{"type":"array","items":{"type":"integer"}}`
	huge := "[" + strings.TrimSuffix(strings.Repeat("1e999999,", 10), ",") + "]"
	failed, registry := validateOne(t, integers, huge)
	require.NotNil(t, failed)
	require.Equal(t, 400, failed.Status())
	require.Contains(t, failed.Err.Message, "schema evaluations allowed to this request")
	require.Equal(t, 1.0, collectorValue(registry.metrics.rejections.WithLabelValues("t", "schema_work")))

	for _, schema := range []string{`{"items":{"minimum":0}}`, `{"items":{"enum":["a",1]}}`, `{"items":{"const":2}}`, `{"uniqueItems":true}`} {
		failed, _ = validateOne(t, schema, huge)
		require.NotNil(t, failed, schema)
		require.Contains(t, failed.Err.Message, "schema evaluations allowed to this request", schema)
	}

	ordinary := make([]string, 10_000)
	for i := range ordinary {
		ordinary[i] = "12345"
	}
	failed, _ = validateOne(t, integers, "["+strings.Join(ordinary, ",")+"]", "[1.5e3, -7, 0]")
	require.Nil(t, failed)
	failed, _ = validateOne(t, integers, "[1.5]")
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "does not match the schema")
}

// Property: matching a pattern is counted in the validation work as the
// text's length times the pattern's size. Before, a 20,000-byte string
// against "[a-z]{1000}!" (a thousand instructions, every one alive at
// every byte) was matched, and a 1 MiB one took a core for seconds; now
// it is refused first. A member name matched by patternProperties counts
// the same, before it is matched. A small pattern on a long string
// passes.
func TestSchemaWorkCountsPatternMatches(t *testing.T) {
	long := strings.Repeat("a", 20_000)
	failed, registry := validateOne(t, `{"type":"string","pattern":"[a-z]{1000}!"}`, jsonString(long))
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "schema evaluations allowed to this request")
	require.Equal(t, 1.0, collectorValue(registry.metrics.rejections.WithLabelValues("t", "schema_work")))

	failed, _ = validateOne(t, `{"patternProperties":{"[a-z]{1000}[a-z]{1000}!":{}}}`, `{`+jsonString(long)+`:1}`)
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "schema evaluations allowed to this request")

	failed, _ = validateOne(t, `{"type":"string","pattern":"^[a-z]+$"}`, jsonString(strings.Repeat("a", 100_000)))
	require.Nil(t, failed)
	failed, _ = validateOne(t, `{"type":"string","pattern":"^[a-z]{1,64}$"}`, jsonString(long))
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "does not match the schema")
}

// Property: a schema's regexps are bounded in size, one by one and
// together, so that compiling and caching one cannot take hundreds of
// MiB (before, an 11 KB pattern compiled to a million instructions, 41
// MiB, and a schema of 800 "[a-z]{1000}" was accepted and cached as 9
// KB); format "regex" refuses a payload string over the same bound. A
// schema within the bounds compiles, and the cache counts its regexps.
func TestSchemaRegexpsAreBounded(t *testing.T) {
	registry := newTestSchemaRegistry()
	ctx := context.Background()
	tooLarge := `{"type":"string","pattern":"` + strings.Repeat("[a-z]{1000}", 20) + `"}`
	failed := registry.checkDocument(ctx, []byte(tooLarge))
	require.NotNil(t, failed)
	require.Equal(t, 400, failed.Status())
	require.Contains(t, failed.Err.Message, "regular expression too large")

	var properties []string
	for i := range 15 {
		properties = append(properties, `"p`+string(rune('a'+i))+`":{"pattern":"[a-z]{1000}[a-z]{1000}[a-z]{1000}"}`)
	}
	together := `{"properties":{` + strings.Join(properties, ",") + `}}`
	failed = registry.checkDocument(ctx, []byte(together))
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "too large together")

	within := `{"properties":{` + strings.Join(properties[:10], ",") + `}}`
	require.Nil(t, registry.checkDocument(ctx, []byte(within)))
	entry, err := registry.compiled(ctx, "t", msg.SchemaVersion{Version: 1, ID: 9, Document: []byte(within)})
	require.Nil(t, err)
	require.NotNil(t, entry.schema)
	cached := collectorValue(registry.metrics.cacheBytes)
	require.Greater(t, cached, float64(10*9000*schemaBytesPerRegexpInst), "the cache counts the regexps' memory")

	draft7 := `{"$schema":"http://json-schema.org/draft-07/schema#","format":"regex"}`
	failed, _ = validateOne(t, draft7, jsonString(strings.Repeat("[a-z]{1000}", 20)))
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "does not match the schema")
	failed, _ = validateOne(t, draft7, jsonString("^[a-z]{1,64}$"))
	require.Nil(t, failed)
}

// Property: a long array of ordinary numbers with uniqueItems stays
// within the work its bytes allow: its numbers are read once each (the
// library hashes the items of an array over 20 long).
func TestSchemaWorkUniqueItemsOfOrdinaryNumbers(t *testing.T) {
	items := make([]string, 200_000)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	failed, _ := validateOne(t, `{"type":"array","uniqueItems":true,"items":{"type":"integer"}}`, "["+strings.Join(items, ",")+"]")
	require.Nil(t, failed)
}

// Property: a schema whose numbers are costly to read is refused before
// it is compiled (before, 200 numbers 1e999999 in 4.7 KB compiled for
// seconds, past the timeout, holding a compile slot; 256 KiB of them
// would hold one for minutes); a schema with ordinary numbers compiles.
func TestSchemaWithCostlyNumbersIsRefused(t *testing.T) {
	registry := newTestSchemaRegistry()
	var bounds []string
	for range 10 {
		bounds = append(bounds, `{"minimum":1e999999}`)
	}
	failed := registry.checkDocument(context.Background(), []byte(`{"allOf":[`+strings.Join(bounds, ",")+`]}`))
	require.NotNil(t, failed)
	require.Equal(t, 400, failed.Status())
	require.Contains(t, failed.Err.Message, "its numbers would take more than")
	require.Zero(t, collectorValue(registry.metrics.compiles.WithLabelValues("ok"))+collectorValue(registry.metrics.compiles.WithLabelValues("timeout")), "refused before it compiled")

	require.Nil(t, registry.checkDocument(context.Background(), []byte(`{"type":"number","minimum":-1.5e10,"maximum":1e300,"multipleOf":0.25,"enum":[1,2,3]}`)))
}
