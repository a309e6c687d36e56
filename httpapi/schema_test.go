package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

var (
	anyObject   = msg.SchemaVersion{Version: 1, ID: 11, Document: []byte(`{"type":"object"}`)}
	idRequired  = msg.SchemaVersion{Version: 2, ID: 12, Document: []byte(`{"type":"object","required":["id"]}`)}
	produceJSON = func(body string) (string, string, string) { return "POST", "/v1/topics/orders/produce", body }
)

// Property: when the node refuses a produce because a newer schema
// version applied after the handler validated, the handler validates
// again with the newer version: a record the newer version refuses is
// refused (400), one it accepts is resubmitted naming it. The node is
// never handed records validated against an older version than the one
// it says is applied.
func TestProduceRevalidatesWhenTheSchemaChanged(t *testing.T) {
	for _, c := range []struct {
		body       string
		wantStatus int
		wantIDs    []uint64
	}{
		{body: `{}`, wantStatus: 400, wantIDs: []uint64{11}},
		{body: `{"id":"a"}`, wantStatus: 202, wantIDs: []uint64{11, 12}},
	} {
		fixture := newHandlerFixture(t)
		backend := fixture.backend
		backend.schemas = map[string][]msg.SchemaVersion{"orders": {anyObject}}
		var submitted []uint64
		backend.onProduce = func(r msg.Produce) msg.Reply {
			submitted = append(submitted, r.SchemaID)
			if r.SchemaID != idRequired.ID {
				backend.schemas["orders"] = []msg.SchemaVersion{anyObject, idRequired} // applied meanwhile
				return msg.Reply{Err: msg.ErrSchemaChanged}
			}
			return tableReply(r)
		}
		method, path, body := produceJSON(c.body)
		status, _, answer := fixture.call(t, method, path, body)
		require.Equal(t, c.wantStatus, status, answer)
		require.Equal(t, c.wantIDs, submitted)
		if c.wantStatus == 400 {
			require.Contains(t, answer, "(version 2): at the root: missing property 'id'")
		}
	}
}

// Property: revalidation is bounded: a node that keeps refusing gets the
// retryable 503 after schemaRevalidationsMax resubmissions.
func TestProduceRevalidationIsBounded(t *testing.T) {
	fixture := newHandlerFixture(t)
	fixture.backend.schemas = map[string][]msg.SchemaVersion{"orders": {anyObject}}
	attempts := 0
	fixture.backend.onProduce = func(msg.Produce) msg.Reply {
		attempts++
		return msg.Reply{Err: msg.ErrSchemaChanged}
	}
	method, path, body := produceJSON(`{}`)
	status, _, answer := fixture.call(t, method, path, body)
	require.Equal(t, http.StatusServiceUnavailable, status, answer)
	require.Equal(t, schemaRevalidationsMax+1, attempts)
}

// Property: a topic without a schema in the view is submitted as such
// (SchemaID 0), whatever its payload.
func TestProduceWithoutSchemaIsNotValidated(t *testing.T) {
	fixture := newHandlerFixture(t)
	var ids []uint64
	fixture.backend.onProduce = func(r msg.Produce) msg.Reply {
		ids = append(ids, r.SchemaID)
		return tableReply(r)
	}
	status, _, answer := fixture.call(t, "POST", "/v1/topics/orders/produce", "\xff")
	require.Equal(t, 202, status, answer)
	require.Equal(t, []uint64{0}, ids)
}

func newTestSchemaRegistry() *schemaRegistry {
	return newSchemaRegistry(newSchemaMetrics(prometheus.NewRegistry()))
}

// Property: a compile that outlasts its timeout is refused with 400 while
// it keeps its slot until it ends; with every slot held, a compile waits
// for its timeout and gets 503.
func TestSchemaCompileIsBounded(t *testing.T) {
	registry := newTestSchemaRegistry()
	registry.timeout = 50 * time.Millisecond
	release := make(chan struct{})
	registry.compileFunc = func(document []byte) (*jsonschema.Schema, error) {
		<-release
		return compileDocument(document)
	}
	for range schemaCompilesMax {
		_, final, err := registry.compile(context.Background(), []byte(`{}`))
		require.NotNil(t, err)
		require.Equal(t, msg.CodeInvalid, err.Code)
		require.Contains(t, err.Message, "did not compile within")
		require.False(t, final, "a timeout is not the schema's fault")
	}
	require.Equal(t, float64(schemaCompilesMax), collectorValue(registry.metrics.compiling))
	require.Equal(t, float64(schemaCompilesMax), collectorValue(registry.metrics.abandoned), "each holds its slot, answered")
	_, _, err := registry.compile(context.Background(), []byte(`{}`))
	require.NotNil(t, err)
	require.Equal(t, msg.CodeUnavailable, err.Code, "every slot is held by a timed-out compile")
	version := msg.SchemaVersion{Version: 3, ID: 7, Document: []byte(`{}`)}
	_, err = registry.compiled(context.Background(), "t", version)
	require.NotNil(t, err)
	require.Equal(t, msg.CodeUnavailable, err.Code, "an applied version that cannot compile now is retryable")
	require.Empty(t, registry.cache, "and not cached")
	close(release)
	require.Eventually(t, func() bool { return collectorValue(registry.metrics.compiling) == 0 }, 10*time.Second, time.Millisecond)
	require.Zero(t, collectorValue(registry.metrics.abandoned))
	registry.compileFunc = compileDocument
	_, err = registry.compiled(context.Background(), "t", version)
	require.Nil(t, err)
	require.Equal(t, 1.0, collectorValue(registry.metrics.compiles.WithLabelValues("ok")))
	require.Equal(t, float64(schemaCompilesMax), collectorValue(registry.metrics.compiles.WithLabelValues("timeout")))
	require.Equal(t, 2.0, collectorValue(registry.metrics.compiles.WithLabelValues("busy")))
}

// Property: compiled versions are cached by id, at most
// schemaCacheEntriesMax of them; one compile serves every lookup of a
// version.
func TestSchemaCacheIsBounded(t *testing.T) {
	registry := newTestSchemaRegistry()
	compiles := 0
	registry.compileFunc = func(document []byte) (*jsonschema.Schema, error) {
		compiles++
		return compileDocument(document)
	}
	for id := range uint64(schemaCacheEntriesMax + 10) {
		version := msg.SchemaVersion{Version: 1, ID: id + 1, Document: []byte(fmt.Sprintf(`{"maxLength":%d}`, id))}
		_, err := registry.compiled(context.Background(), "t", version)
		require.Nil(t, err)
		_, err = registry.compiled(context.Background(), "t", version)
		require.Nil(t, err)
	}
	require.Equal(t, schemaCacheEntriesMax+10, compiles, "each version compiled once")
	require.Len(t, registry.cache, schemaCacheEntriesMax)
	require.Equal(t, float64(schemaCacheEntriesMax), collectorValue(registry.metrics.cacheEntries))
	_, kept := registry.cache[1]
	require.False(t, kept, "the least recently used version was dropped")
}

// Property: the cached versions' estimated bytes stay within
// schemaCacheBytesMax, least recently used dropped first, the newest kept
// even alone past it; the gauge follows.
func TestSchemaCacheBytesAreBounded(t *testing.T) {
	registry := newTestSchemaRegistry()
	registry.compileFunc = func([]byte) (*jsonschema.Schema, error) { // the bookkeeping is under test, not the library
		return compileDocument([]byte(`{}`))
	}
	large := func(id uint64) msg.SchemaVersion {
		document := fmt.Sprintf(`{"anyOf":[%s{"maxLength":%d}]}`, strings.Repeat(`{},`, SchemaContainersMax-3), id)
		return msg.SchemaVersion{Version: 1, ID: id, Document: []byte(document)}
	}
	entryBytes := schemaEntryBytes(large(1).Document)
	require.Greater(t, entryBytes, int64(SchemaContainersMax-1)*schemaBytesPerContainer)
	fits := int(schemaCacheBytesMax / entryBytes)
	for id := range uint64(fits + 3) {
		_, err := registry.compiled(context.Background(), "t", large(id+1))
		require.Nil(t, err)
	}
	require.Len(t, registry.cache, fits)
	require.LessOrEqual(t, registry.cacheBytes, int64(schemaCacheBytesMax))
	require.Equal(t, float64(registry.cacheBytes), collectorValue(registry.metrics.cacheBytes))
	_, kept := registry.cache[3]
	require.False(t, kept, "the least recently used were dropped")
	_, kept = registry.cache[uint64(fits+3)]
	require.True(t, kept)

	huge := msg.SchemaVersion{Version: 1, ID: 1 << 40, Document: []byte(fmt.Sprintf(`{"anyOf":[%s{}]}`, strings.Repeat(`{},`, schemaCacheBytesMax/schemaBytesPerContainer)))}
	_, err := registry.compiled(context.Background(), "t", huge)
	require.Nil(t, err)
	require.Len(t, registry.cache, 1, "alone past the bound")
}

// Property: the compiled versions of a topic the node dropped (deleted or
// re-created) leave the cache when the host tells the handler, and the
// other topics' stay: a node whose schema topics are all gone holds none.
func TestSchemaCacheForgetsADroppedTopic(t *testing.T) {
	backend := &tableBackend{schemas: map[string][]msg.SchemaVersion{"orders": {anyObject}, "audit": {idRequired}}}
	registry := prometheus.NewRegistry()
	handler := NewHandler(backend, newTestCodec(), registry, slog.New(slog.DiscardHandler))
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	for _, topic := range []string{"orders", "audit"} {
		response, err := server.Client().Post(server.URL+"/v1/topics/"+topic+"/produce", "application/json", strings.NewReader(`{"id":1}`))
		require.NoError(t, err)
		response.Body.Close()
		require.Equal(t, http.StatusAccepted, response.StatusCode, topic)
	}
	require.Equal(t, 2.0, series(t, registry, "narad_schema_cache_entries")[""])
	handler.(TopicForgetter).ForgetTopic("orders")
	require.Equal(t, 1.0, series(t, registry, "narad_schema_cache_entries")[""], "the dropped topic's version went")
	require.Equal(t, float64(schemaEntryBytes(idRequired.Document)), series(t, registry, "narad_schema_cache_bytes")[""], "and its bytes")
	handler.(TopicForgetter).ForgetTopic("audit")
	require.Zero(t, series(t, registry, "narad_schema_cache_entries")[""])
	require.Zero(t, series(t, registry, "narad_schema_cache_bytes")[""])
}

// Property: a schema sent to create or alter a topic with more objects
// and arrays than SchemaContainersMax is refused before it is compiled;
// one at the bound compiles.
func TestSchemaContainersAreBounded(t *testing.T) {
	registry := newTestSchemaRegistry()
	compiles := 0
	registry.compileFunc = func(document []byte) (*jsonschema.Schema, error) {
		compiles++
		return compileDocument(document)
	}
	atBound := fmt.Sprintf(`{"anyOf":[%s{"type":["string","null"]}]}`, strings.Repeat(`{"minLength":1},`, SchemaContainersMax-4))
	require.Equal(t, SchemaContainersMax, meta.SchemaContainers([]byte(atBound)))
	require.Nil(t, registry.checkDocument(context.Background(), []byte(atBound)))
	require.Equal(t, 1, compiles)
	past := strings.Replace(atBound, `{"minLength":1}`, `{"minLength":1,"not":{}}`, 1)
	failed := registry.checkDocument(context.Background(), []byte(past))
	require.NotNil(t, failed)
	require.Equal(t, http.StatusBadRequest, failed.Status())
	require.Contains(t, failed.Err.Message, fmt.Sprintf("%d objects and arrays, at most %d", SchemaContainersMax+1, SchemaContainersMax))
	require.Equal(t, 1, compiles, "refused before compiling")
	require.Equal(t, 2, meta.SchemaContainers([]byte(`{"a":"{[\"{","b":[]}`)), "brackets inside strings are not counted")
}

// collectorValue reads a gauge or a counter.
func collectorValue(metric prometheus.Metric) float64 {
	var m dto.Metric
	if err := metric.Write(&m); err != nil {
		panic(err)
	}
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

// typicalSchema is an object of 8 typed properties, 2 required, and
// typicalPayload a 255-byte record that matches it.
const (
	typicalSchema = `{"type":"object","required":["id","amount"],"properties":{
 "id":{"type":"string","maxLength":64},"amount":{"type":"number","minimum":0},
 "currency":{"type":"string","enum":["EUR","USD","GBP","INR"]},"customer":{"type":"string"},
 "quantity":{"type":"integer","minimum":1},"express":{"type":"boolean"},
 "tags":{"type":"array","items":{"type":"string"}},"note":{"type":"string","maxLength":200}}}`
	typicalPayload = `{"id":"ord-000000000042","amount":1234.5,"currency":"EUR","customer":"customer-00000017","quantity":3,` +
		`"express":true,"tags":["priority","web","returning"],"note":"leave at the front desk, ring twice; fragile glassware inside, handle with care please ok"}`
)

// BenchmarkSchemaValidate measures the validation of one typical record,
// the cost a schema adds to each produced record.
func BenchmarkSchemaValidate(b *testing.B) {
	registry := newTestSchemaRegistry()
	version := msg.SchemaVersion{Version: 1, ID: 1, Document: []byte(typicalSchema)}
	records := []msg.ProduceRecord{{Payload: []byte(typicalPayload), Partition: msg.PartitionNone}}
	b.ReportAllocs()
	for b.Loop() {
		if failed := registry.validate(context.Background(), "orders", version, records, nil); failed != nil {
			b.Fatal(failed.Err)
		}
	}
}

// TestASchemaTopicRefusesAKeyGivenTwice: the schema judges the last of a
// key given twice in one object (the parse keeps it), a reader may keep
// the first: {"id":"x","id":1} passed a schema asking for an integer id,
// and a reader keeping the first value got a string. Such a payload is
// refused at any depth, naming the key; keys that only look alike
// (escaped or in another object) are not duplicates.
func TestASchemaTopicRefusesAKeyGivenTwice(t *testing.T) {
	registry := newTestSchemaRegistry()
	version := msg.SchemaVersion{Version: 1, ID: 1, Document: []byte(`{"properties":{"id":{"type":"integer"}}}`)}
	check := func(payload string) *ErrorResponse {
		records := []msg.ProduceRecord{{Payload: []byte(payload), Partition: msg.PartitionNone}}
		return registry.validate(context.Background(), "orders", version, records, nil)
	}
	for payload, key := range map[string]string{
		`{"id":"x","id":1}`:                       "id",
		`{"id":1,"a":{"b":1,"b":2}}`:              "b",
		`{"id":1,"list":[{"c":1},{"c":1,"c":2}]}`: "c",
		`{"id":1,"\u0069d":2}`:                    "id",
	} {
		failed := check(payload)
		require.NotNil(t, failed, payload)
		require.Contains(t, failed.Err.Error(), fmt.Sprintf("the key %q twice", key), payload)
	}
	for _, payload := range []string{
		`{"id":1,"a":{"id":2},"b":[{"id":3},{"id":4}]}`,
		`{"id":1,"text":"a:b \"c\":d \\"}`,
		`{"id":1,"\u0069x":2}`,
		`[1,2,{"id":1}]`,
	} {
		require.Nil(t, check(payload), payload)
	}
}

// A payload nested deeper than the JSON parser's bound (10,000 levels of
// arrays and objects) was refused as "not JSON ... exceeded max depth";
// it is refused naming the bound, while one at the bound is taken, and a
// payload malformed before that depth (or only inside a string) is still
// "not JSON".
func TestASchemaTopicNamesThePayloadNestingBound(t *testing.T) {
	registry := newTestSchemaRegistry()
	version := msg.SchemaVersion{Version: 1, ID: 1, Document: []byte(`true`)}
	check := func(payload string) *ErrorResponse {
		records := []msg.ProduceRecord{{Payload: []byte(payload), Partition: msg.PartitionNone}}
		return registry.validate(context.Background(), "orders", version, records, nil)
	}
	nested := func(depth int) string { return strings.Repeat(`[`, depth) + strings.Repeat(`]`, depth) }

	require.Nil(t, check(nested(jsonNestingDepthMax)), "at the bound")
	for _, payload := range []string{nested(jsonNestingDepthMax + 1), `{"a":` + nested(jsonNestingDepthMax) + `}`} {
		failed := check(payload)
		require.NotNil(t, failed)
		require.Contains(t, failed.Err.Error(), "nests its arrays and objects more than 10000 levels deep")
		require.NotContains(t, failed.Err.Error(), "not JSON")
	}
	for _, payload := range []string{`[x` + nested(jsonNestingDepthMax+1), `"` + strings.Repeat(`[`, jsonNestingDepthMax+1) + `" x`} {
		failed := check(payload)
		require.NotNil(t, failed)
		require.Contains(t, failed.Err.Error(), "the payload is not JSON")
	}
}
