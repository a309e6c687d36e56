package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"narad/meta"
	"narad/msg"
	"narad/node"
)

// Bounds of JSON Schema handling (docs/api.md#topic-schemas). Compiling
// happens here, on the HTTP goroutines, never on the node loop.
const (
	// SchemaCompileTimeout bounds the wait for one compile; a schema that
	// takes longer is refused (400) and its compile runs on to its end in
	// the background, holding its slot (counted in
	// narad_schema_compiles_abandoned). SchemaContainersMax keeps that
	// end near: a schema sent to create or alter a topic compiles in about
	// 0.1 s at the bound on a two-core VM (the library's time grows with
	// the square of the subschemas: 87,000 empty ones in 256 KiB took 63 s).
	SchemaCompileTimeout = 2 * time.Second
	// SchemaContainersMax bounds the objects and arrays of a schema sent to
	// create or alter a topic (checked by the node receiving it, before it
	// compiles it; versions stored before the bound compile as they are).
	SchemaContainersMax = 4096
	// schemaBytesPerContainer estimates what a compiled schema keeps per
	// object or array of its document (about 1 KB measured, with its
	// graph), for the cache's byte bound.
	schemaBytesPerContainer = 1 << 10
	// schemaCacheBytesMax bounds the estimated memory of the compiled
	// versions cached (document bytes plus schemaBytesPerContainer per
	// object or array); the least recently used are dropped beyond it. It
	// holds 64 schemas at SchemaContainersMax.
	schemaCacheBytesMax = 256 << 20
	// schemaCompilesMax bounds the compiles running at once (timed-out
	// ones included); one more waits for a slot until its own timeout,
	// then gets 503.
	schemaCompilesMax = 4
	// schemaCacheEntriesMax bounds the compiled schema versions kept; the
	// least recently used one is dropped beyond it.
	schemaCacheEntriesMax = 1024
	// schemaRevalidationsMax bounds how often a produce is validated again
	// because the topic's schema changed meanwhile; then it is answered
	// 503 (retry).
	schemaRevalidationsMax = 3
	// schemaResourceURL names a topic's schema inside the compiler, so
	// that relative references resolve under it (and are refused by the
	// loader, like every other URL). It is never fetched; .invalid is a
	// reserved top-level domain.
	schemaResourceURL = "https://narad.invalid/topic-schema.json"
)

var violationPrinter = message.NewPrinter(language.English)

// errRemoteSchemas is what the compiler's loader answers for every URL: a
// topic's schema must be self-contained, and nothing is ever fetched (no
// network, no files).
var errRemoteSchemas = errors.New("schemas are never loaded from a URL or a file: a topic's schema must be self-contained")

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) { return nil, errRemoteSchemas }

// schemaMetrics are the series of schema handling, registered once.
type schemaMetrics struct {
	rejections   *prometheus.CounterVec // topic, reason
	compiles     *prometheus.CounterVec // result
	compiling    prometheus.Gauge
	abandoned    prometheus.Gauge
	cacheEntries prometheus.Gauge
	cacheBytes   prometheus.Gauge
}

func newSchemaMetrics(reg prometheus.Registerer) *schemaMetrics {
	metrics := &schemaMetrics{
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "narad", Name: "produce_rejections_total",
			Help: "Produce requests refused by topic and reason (schema: a record broke the topic's JSON Schema; schema_work: validating it would pass the request's bound).",
		}, []string{"topic", "reason"}),
		compiles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "narad", Subsystem: "schema", Name: "compiles_total",
			Help: "JSON Schema compiles by result: ok, invalid, timeout, busy (no compile slot in time).",
		}, []string{"result"}),
		compiling: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "narad", Subsystem: "schema", Name: "compiles_running",
			Help: fmt.Sprintf("JSON Schema compiles running, timed-out ones included (at most %d).", schemaCompilesMax),
		}),
		abandoned: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "narad", Subsystem: "schema", Name: "compiles_abandoned",
			Help: "JSON Schema compiles still running after their request was answered (timed out); each holds one of the compile slots until it ends.",
		}),
		cacheEntries: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "narad", Subsystem: "schema", Name: "cache_entries",
			Help: fmt.Sprintf("Compiled schema versions cached (at most %d).", schemaCacheEntriesMax),
		}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "narad", Subsystem: "schema", Name: "cache_bytes",
			Help: fmt.Sprintf("Estimated memory of the compiled schema versions cached: document bytes plus %d per object or array (at most %d).", schemaBytesPerContainer, schemaCacheBytesMax),
		}),
	}
	reg.MustRegister(metrics.rejections, metrics.compiles, metrics.compiling, metrics.abandoned, metrics.cacheEntries, metrics.cacheBytes)
	return metrics
}

// schemaRegistry compiles schemas off the node loop and caches compiled
// versions. Safe for concurrent use.
type schemaRegistry struct {
	metrics *schemaMetrics
	// slots holds one token per running compile; its capacity is
	// schemaCompilesMax.
	slots chan struct{}
	// timeout bounds one compile; SchemaCompileTimeout but for tests.
	timeout time.Duration
	// compileFunc compiles one document: compileDocument but for tests.
	compileFunc func(document []byte) (*jsonschema.Schema, error)

	mu sync.Mutex
	// cache maps a version's id (unique to a topic and version over the
	// cluster's life) to its compile, until its topic is dropped
	// (forgetTopic); at most schemaCacheEntriesMax, and
	// cacheBytes (the sum of their bytes) at most schemaCacheBytesMax but
	// for the newest entry, which stays even alone past it.
	cache      map[uint64]*compiledSchema
	cacheBytes int64
	// uses counts cache lookups, to find the least recently used entry.
	uses uint64
}

// compiledSchema is one cached compile. ready is closed once schema (and
// its graph) or err is set; none changes afterwards.
type compiledSchema struct {
	ready    chan struct{}
	schema   *jsonschema.Schema
	graph    *schemaGraph
	err      *msg.Error
	lastUsed uint64 // guarded by the registry's mu
	// topic is the topic whose version this is, for forgetTopic.
	topic string
	// bytes estimates the entry's memory (schemaEntryBytes, plus its
	// regexps once compiled: addEntryBytes); guarded by the registry's mu.
	bytes int64
}

// schemaEntryBytes estimates the memory a compiled document keeps.
func schemaEntryBytes(document []byte) int64 {
	return int64(len(document)) + int64(meta.SchemaContainers(document))*schemaBytesPerContainer
}

func newSchemaRegistry(metrics *schemaMetrics) *schemaRegistry {
	return &schemaRegistry{metrics: metrics, slots: make(chan struct{}, schemaCompilesMax),
		timeout: SchemaCompileTimeout, compileFunc: compileDocument, cache: map[uint64]*compiledSchema{}}
}

// compile compiles document within the timeout: a 400 for a schema the
// library refuses or that takes too long, a 503 when no compile slot frees
// up in time. final reports an outcome that depends on the document alone
// (compiled, or refused by the library), which may be cached; a timeout
// or a busy registry depends on this node's load and is not final.
func (s *schemaRegistry) compile(ctx context.Context, document []byte) (schema *jsonschema.Schema, final bool, err *msg.Error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		s.metrics.compiles.WithLabelValues("busy").Inc()
		return nil, false, msg.Unavailable("too many schemas are being compiled; retry")
	}
	s.metrics.compiling.Inc()
	type outcome struct {
		schema *jsonschema.Schema
		err    error
	}
	done := make(chan outcome, 1)
	var state atomic.Int32 // compileRunning, then compileAbandoned (the request stopped waiting) and/or compileEnded
	go func() {
		defer func() {
			<-s.slots
			s.metrics.compiling.Dec()
			if state.Swap(compileEnded) == compileAbandoned {
				s.metrics.abandoned.Dec()
			}
		}()
		schema, err := s.compileFunc(document)
		done <- outcome{schema, err}
	}()
	select {
	case result := <-done:
		if result.err != nil {
			s.metrics.compiles.WithLabelValues("invalid").Inc()
			return nil, true, msg.Invalid("invalid schema: %s", oneLine(result.err.Error()))
		}
		s.metrics.compiles.WithLabelValues("ok").Inc()
		return result.schema, true, nil
	case <-ctx.Done():
		s.metrics.compiles.WithLabelValues("timeout").Inc()
		s.metrics.abandoned.Inc() // until the compile ends; at once if it just did
		if !state.CompareAndSwap(compileRunning, compileAbandoned) {
			s.metrics.abandoned.Dec()
		}
		return nil, false, msg.Invalid("invalid schema: it did not compile within %v", s.timeout)
	}
}

// The states of one compile, for narad_schema_compiles_abandoned.
const (
	compileRunning int32 = iota
	compileAbandoned
	compileEnded
)

// compileDocument compiles one self-contained schema; a panic of the
// library is a refusal, never a crash.
func compileDocument(document []byte) (schema *jsonschema.Schema, err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			schema, err = nil, fmt.Errorf("the schema compiler failed: %v", recovered)
		}
	}()
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(document))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(refusingLoader{})
	compiler.DefaultDraft(jsonschema.Draft2020)
	var compiled atomic.Bool
	defer compiled.Store(true) // from then on the engine serves format "regex" while validating
	compiler.UseRegexpEngine(newSchemaRegexpEngine(&compiled))
	if err := compiler.AddResource(schemaResourceURL, parsed); err != nil {
		return nil, err
	}
	return compiler.Compile(schemaResourceURL)
}

// compiled returns the compiled schema of a version of topic, compiling
// it on a miss; concurrent misses of one version share one compile.
func (s *schemaRegistry) compiled(ctx context.Context, topic string, version msg.SchemaVersion) (*compiledSchema, *msg.Error) {
	s.mu.Lock()
	s.uses++
	entry, found := s.cache[version.ID]
	if found {
		entry.lastUsed = s.uses
		s.mu.Unlock()
		<-entry.ready
		return entry, entry.err
	}
	entry = &compiledSchema{ready: make(chan struct{}), lastUsed: s.uses, topic: topic, bytes: schemaEntryBytes(version.Document)}
	s.cache[version.ID] = entry
	s.cacheBytes += entry.bytes
	s.evictBeyondBound()
	s.mu.Unlock()

	schema, final, err := s.compile(ctx, version.Document)
	if !final {
		// A busy or slow moment says nothing of the version: the waiters
		// of this entry get a retryable error, the next lookup compiles
		// again.
		s.forget(version.ID, entry)
		err = msg.Unavailable("schema version %d is still compiling on this node; retry", version.Version)
	}
	entry.schema, entry.err = schema, err
	if schema != nil {
		entry.graph = newSchemaGraph(schema)
		s.addEntryBytes(version.ID, entry, schemaRegexpBytes(entry.graph.schemas))
	}
	close(entry.ready)
	return entry, err
}

// addEntryBytes adds to a cached entry's estimate what its compile
// showed: the memory of its regexps, which its document does not tell.
func (s *schemaRegistry) addEntryBytes(id uint64, entry *compiledSchema, bytes int64) {
	if bytes == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache[id] != entry {
		return // forgotten or evicted meanwhile: counted nowhere
	}
	entry.bytes += bytes
	s.cacheBytes += bytes
	s.evictBeyondBound()
}

// evictBeyondBound drops the least recently used entries beyond the
// bounds (the newest one stays, even alone past the byte bound). Called
// with mu held.
func (s *schemaRegistry) evictBeyondBound() {
	for len(s.cache) > schemaCacheEntriesMax || (len(s.cache) > 1 && s.cacheBytes > schemaCacheBytesMax) {
		var oldestID uint64
		oldest := uint64(0)
		for id, entry := range s.cache {
			if oldest == 0 || entry.lastUsed < oldest {
				oldestID, oldest = id, entry.lastUsed
			}
		}
		s.cacheBytes -= s.cache[oldestID].bytes
		delete(s.cache, oldestID)
	}
	s.setCacheGauges()
}

// forgetTopic drops the cached versions of a topic the node dropped
// (deleted, or re-created under its name): their ids are never used
// again, and kept they would hold their memory until newer versions
// pushed them out, for good on a node whose schema topics all went. A
// validation of the old topic still running may cache one again; the
// bounds then drop it in time.
func (s *schemaRegistry) forgetTopic(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, entry := range s.cache {
		if entry.topic == topic {
			s.cacheBytes -= entry.bytes
			delete(s.cache, id)
		}
	}
	s.setCacheGauges()
}

func (s *schemaRegistry) forget(id uint64, entry *compiledSchema) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache[id] == entry {
		s.cacheBytes -= entry.bytes
		delete(s.cache, id)
	}
	s.setCacheGauges()
}

// setCacheGauges publishes the cache's size. Called with mu held.
func (s *schemaRegistry) setCacheGauges() {
	s.metrics.cacheEntries.Set(float64(len(s.cache)))
	s.metrics.cacheBytes.Set(float64(s.cacheBytes))
}

// checkDocument checks a schema sent to create or alter a topic: its
// size (413), its shape and nesting, that it compiles in time, and that
// its references do not loop in place (schemacycle.go).
func (s *schemaRegistry) checkDocument(ctx context.Context, document []byte) *ErrorResponse {
	if len(document) > msg.SchemaBytesMax {
		return failure(msg.TooLarge("schema is %d bytes, at most %d (256 KiB)", len(document), msg.SchemaBytesMax))
	}
	if err := node.CheckSchemaDocument(document); err != nil {
		return failure(err)
	}
	if containers := meta.SchemaContainers(document); containers > SchemaContainersMax {
		return failure(msg.Invalid("invalid schema: it has %d objects and arrays, at most %d", containers, SchemaContainersMax))
	}
	if schemaDocumentNumbersWork(document) > schemaWorkFloor {
		return failure(msg.Invalid("invalid schema: its numbers would take more than %d units of work to read (numbers with many digits or a large exponent, such as 1e999999, cost the compiler and every produce)", schemaWorkFloor))
	}
	schema, _, err := s.compile(ctx, document)
	if err != nil {
		return failure(err)
	}
	if cycle := newSchemaGraph(schema).inPlaceCycle(); cycle != "" {
		return failure(msg.Invalid("invalid schema: its references loop without reaching into the value (%s): "+
			"validating a record that reaches it would apply the same schema to the same value again and again (the validator refuses such a record); "+
			"a schema may refer to itself only through properties, items or another keyword that applies it to a member or an item", cycle))
	}
	return nil
}

// validate checks every record of a produce against a schema version:
// the first record that is not JSON or breaks the schema fails the whole
// request (400), naming the record (its line in a batch) and the first
// violation, and so does one whose validation would take the request's
// records past schemaWorkBudget (counted before the library runs).
// lines[i] is record i's line, nil for a single produce.
func (s *schemaRegistry) validate(ctx context.Context, topic string, version msg.SchemaVersion, records []msg.ProduceRecord, lines []int) *ErrorResponse {
	compiled, err := s.compiled(ctx, topic, version)
	if err != nil {
		if err.Code == msg.CodeInvalid { // an applied version that does not compile here
			return failure(msg.Internal("schema version %d of topic %s does not compile on this node: %s", version.Version, topic, err.Message))
		}
		return failure(err)
	}
	work := &schemaWork{graph: compiled.graph, budget: schemaWorkBudget(payloadBytes(records))}
	for i, record := range records {
		instance, problem := parseInstance(record.Payload)
		if problem == "" && !work.record(instance) {
			s.metrics.rejections.WithLabelValues(topic, "schema_work").Inc()
			return invalidf("validating %s against the schema of topic %s (version %d) could take more than the %d schema evaluations allowed to this request "+
				"(%d, plus %d per payload byte): nest it less deeply, send fewer records at once, or use a schema whose oneOf/anyOf branches do not both recurse "+
				"(long strings matched by large patterns, and numbers with many digits or a large exponent, count too)",
				recordName(i, lines), topic, version.Version, work.budget, schemaWorkFloor, schemaWorkPerPayloadByte)
		}
		if problem == "" {
			problem = violation(compiled.schema, instance)
		}
		if problem != "" {
			s.metrics.rejections.WithLabelValues(topic, "schema").Inc()
			return invalidf("%s does not match the schema of topic %s (version %d): %s", recordName(i, lines), topic, version.Version, problem)
		}
	}
	return nil
}

// recordName names record i of a produce: its line in a batch.
func recordName(i int, lines []int) string {
	if lines == nil {
		return "the message"
	}
	return fmt.Sprintf("record %d (ndjson line %d)", i+1, lines[i])
}

func payloadBytes(records []msg.ProduceRecord) int {
	total := 0
	for _, record := range records {
		total += len(record.Payload)
	}
	return total
}

// parseInstance parses a payload for validation; problem says why it is
// not JSON.
func parseInstance(payload []byte) (instance any, problem string) {
	if !utf8.Valid(payload) {
		// JSON text is UTF-8; the decoder would read invalid bytes as
		// U+FFFD and pass the record, which consumers then get as binary.
		return nil, "the payload is not JSON, and a topic with a schema accepts only JSON payloads (it is not valid UTF-8)"
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil && nestsTooDeep(payload, err) {
		return nil, fmt.Sprintf("the payload nests its arrays and objects more than %d levels deep, and a topic with a schema takes "+
			"at most %d levels (the bound of the JSON parser that reads it for the schema)", jsonNestingDepthMax, jsonNestingDepthMax)
	}
	if err != nil {
		return nil, "the payload is not JSON, and a topic with a schema accepts only JSON payloads (" + oneLine(err.Error()) + ")"
	}
	if rawKeyCount(payload) != parsedKeyCount(instance) {
		// The parse kept the last of a key given twice in one object and
		// the schema would judge that one, while a consumer's parser may
		// take the first: a record the schema passed could break it there.
		return nil, fmt.Sprintf("the payload gives the key %s twice in one object; a topic with a schema takes each key once, as its readers may keep either value",
			quoteClipped(findDuplicateKey(payload, nil)))
	}
	return instance, ""
}

// nestsTooDeep reports whether err, the parse error of payload, is the
// parser's refusal of arrays and objects nested past jsonNestingDepthMax
// (encoding/json's bound): the payload up to the error opens more than
// that many at once. Any other error comes before such a depth.
func nestsTooDeep(payload []byte, err error) bool {
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) || syntax.Offset < 0 {
		return false
	}
	return meta.JSONNesting(payload[:min(int64(len(payload)), syntax.Offset+1)]) > jsonNestingDepthMax
}

// rawKeyCount counts the keys of all the objects of a valid JSON text:
// each ':' outside a string is one.
func rawKeyCount(text []byte) int {
	count, inString, escaped := 0, false, false
	for _, c := range text {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == ':':
			count++
		}
	}
	return count
}

// parsedKeyCount counts the keys of all the objects of a parsed JSON
// value: fewer than its text's when an object gave a key twice.
func parsedKeyCount(value any) int {
	count := 0
	switch v := value.(type) {
	case map[string]any:
		count = len(v)
		for _, child := range v { //determinism:ok a sum
			count += parsedKeyCount(child)
		}
	case []any:
		for _, child := range v {
			count += parsedKeyCount(child)
		}
	}
	return count
}

// violation returns the first way a parsed record breaks schema, "" if
// it does not.
func violation(schema *jsonschema.Schema, instance any) string {
	err := schema.Validate(instance)
	if err == nil {
		return ""
	}
	var failed *jsonschema.ValidationError
	if !errors.As(err, &failed) {
		return oneLine(err.Error())
	}
	for len(failed.Causes) > 0 {
		failed = failed.Causes[0]
	}
	where := "at the root"
	if len(failed.InstanceLocation) > 0 {
		where = "at /" + strings.Join(failed.InstanceLocation, "/")
	}
	return where + ": " + failed.ErrorKind.LocalizedString(violationPrinter)
}

// oneLine joins a multi-line library message into one line.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
