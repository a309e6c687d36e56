package httpapi

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"narad/msg"
)

const (
	// twoRecursiveBranches evaluates a record nested d deep 2^d times: both
	// branches of its oneOf recurse into every item.
	twoRecursiveBranches = `{"$defs":{"n":{"oneOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},` +
		`{"type":"array","items":{"$ref":"#/$defs/n"},"minItems":0}]}},"$ref":"#/$defs/n"}`
	// binaryTree recurses through two named members: one path per node.
	binaryTree = `{"type":"object","properties":{"value":{"type":"integer"},` +
		`"left":{"$ref":"#"},"right":{"$ref":"#"}},"additionalProperties":false}`
	// reconverging reaches the root again through two different schemas
	// under different names: still one path per node of a record.
	reconverging = `{"$defs":{"a":{"type":"object","properties":{"x":{"$ref":"#"}}},` +
		`"b":{"type":"object","properties":{"x":{"$ref":"#"}}}},` +
		`"type":"object","properties":{"a":{"$ref":"#/$defs/a"},"b":{"$ref":"#/$defs/b"}}}`
)

// nested returns a JSON value nested depth deep: arrays, or objects
// under the member names given in turn.
func nested(depth int, names ...string) string {
	if len(names) == 0 {
		return strings.Repeat("[", depth) + strings.Repeat("]", depth)
	}
	var text strings.Builder
	for i := range depth {
		text.WriteString(`{"` + names[i%len(names)] + `":`)
	}
	text.WriteString(`{}`)
	text.WriteString(strings.Repeat("}", depth))
	return text.String()
}

// diamondChain is a schema whose $defs each apply the next twice (allOf):
// a flat record is evaluated 2^links times.
func diamondChain(links int) string {
	var defs []string
	for i := range links {
		next := `{"type":"string"}`
		if i+1 < links {
			next = `{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"}`
		}
		defs = append(defs, `"d`+strconv.Itoa(i)+`":{"allOf":[`+next+`,`+next+`]}`)
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`
}

func countWork(t *testing.T, schema, record string, budget uint64) (uint64, bool) {
	t.Helper()
	compiled, err := compileDocument([]byte(schema))
	require.NoError(t, err)
	instance, problem := parseInstance([]byte(record))
	require.Empty(t, problem)
	work := &schemaWork{graph: newSchemaGraph(compiled), budget: budget}
	ok := work.record(instance)
	return work.spent, ok
}

// Property: the count grows with the paths the library takes. A schema
// whose two oneOf branches recurse doubles it at each level of nesting,
// and a chain of $defs listing the next twice doubles it at each link;
// schemas that recurse along one path per record node (by member name,
// even through different schemas) count linearly in the record's size.
func TestSchemaWorkCountsEvaluationPaths(t *testing.T) {
	unbounded := ^uint64(0)
	shallow, ok := countWork(t, twoRecursiveBranches, nested(8), unbounded)
	require.True(t, ok)
	deeper, ok := countWork(t, twoRecursiveBranches, nested(12), unbounded)
	require.True(t, ok)
	require.Greater(t, deeper, 8*shallow, "four more levels under two recursive branches: 2^4 times the work")

	short, ok := countWork(t, diamondChain(6), `"x"`, unbounded)
	require.True(t, ok)
	long, ok := countWork(t, diamondChain(10), `"x"`, unbounded)
	require.True(t, ok)
	require.Greater(t, long, 8*short, "four more links of a diamond chain: 2^4 times the work")

	for name, schema := range map[string]string{"binary tree": binaryTree, "reconverging": reconverging} {
		names := map[string][]string{"binary tree": {"left", "right"}, "reconverging": {"a", "x", "b", "x"}}[name]
		at100, ok := countWork(t, schema, nested(100, names...), unbounded)
		require.True(t, ok)
		at200, ok := countWork(t, schema, nested(200, names...), unbounded)
		require.True(t, ok)
		require.Less(t, at200, 3*at100, "%s: twice the nesting, about twice the work (%d, %d)", name, at100, at200)
	}
}

// Property: a produce whose validation would exceed the request's budget
// is refused with 400 before the library runs (the old code never
// returned from the 40-deep record), counted as a schema_work rejection;
// records of the same schema nested within the budget are validated as
// before, and deep records of a linear schema pass.
func TestProduceRefusesValidationPastItsWorkBudget(t *testing.T) {
	registry := newTestSchemaRegistry()
	exponential := msg.SchemaVersion{Version: 1, ID: 41, Document: []byte(twoRecursiveBranches)}
	deep := []msg.ProduceRecord{{Payload: []byte(nested(40)), Partition: msg.PartitionNone}}
	failed := registry.validate(context.Background(), "trees", exponential, deep, nil)
	require.NotNil(t, failed)
	require.Equal(t, 400, failed.Status())
	require.Contains(t, failed.Err.Message, "schema evaluations allowed to this request")
	require.Equal(t, 1.0, collectorValue(registry.metrics.rejections.WithLabelValues("trees", "schema_work")))

	shallow := []msg.ProduceRecord{{Payload: []byte(nested(4)), Partition: msg.PartitionNone}}
	failed = registry.validate(context.Background(), "trees", exponential, shallow, nil)
	require.NotNil(t, failed, "the library still judges a record within the budget")
	require.Contains(t, failed.Err.Message, "does not match the schema")

	chain := msg.SchemaVersion{Version: 1, ID: 42, Document: []byte(diamondChain(40))}
	failed = registry.validate(context.Background(), "chains", chain, []msg.ProduceRecord{{Payload: []byte(`"x"`)}}, nil)
	require.NotNil(t, failed)
	require.Contains(t, failed.Err.Message, "schema evaluations allowed to this request")

	tree := msg.SchemaVersion{Version: 1, ID: 43, Document: []byte(binaryTree)}
	records := []msg.ProduceRecord{{Payload: []byte(nested(500, "left", "right"))}, {Payload: []byte(`{"value":1}`)}}
	require.Nil(t, registry.validate(context.Background(), "trees", tree, records, []int{1, 2}))
}

// Property: every schema the library reaches is in the graph, whatever
// applicator leads to it (the walk would panic on one outside it).
func TestSchemaGraphIndexesEveryApplicator(t *testing.T) {
	schema := `{"$defs":{"s":{"type":"string"},"d":{"$dynamicRef":"#top"}},"allOf":[{"$ref":"#/$defs/s"}],"anyOf":[true,{"$ref":"#/$defs/d"}],"oneOf":[{}],"not":false,` +
		`"if":{},"then":{},"else":{},"dependentSchemas":{"a":{}},"propertyNames":{"maxLength":9},` +
		`"properties":{"p":{}},"patternProperties":{"^q":{}},"additionalProperties":{},"unevaluatedProperties":{},` +
		`"prefixItems":[{}],"items":{},"contains":{},"unevaluatedItems":{},"$dynamicAnchor":"top","$comment":"x"}`
	compiled, err := compileDocument([]byte(schema))
	require.NoError(t, err)
	graph := newSchemaGraph(compiled)
	for _, s := range graph.schemas {
		for _, child := range childSchemas(s) {
			_, indexed := graph.index[child]
			require.True(t, indexed, "%s", child.Location)
		}
	}
	var dynamic *jsonschema.Schema
	for _, s := range graph.schemas {
		if s.DynamicAnchor == "top" {
			dynamic = s
		}
	}
	require.NotNil(t, dynamic)
	hubs := 0
	for i, s := range graph.schemas {
		if s.Location == "" { // a hub: an edge to every schema with the anchor
			hubs++
			require.Equal(t, []int32{graph.index[dynamic]}, graph.inPlace[i])
		}
	}
	require.Equal(t, 1, hubs, "the $dynamicRef reaches the anchor's schemas through one hub")
	for _, record := range []string{`{"p":1,"q":[1,2],"r":"s"}`, `[1,[2],{"a":3}]`, `"s"`} {
		_, ok := countWork(t, schema, record, ^uint64(0))
		require.True(t, ok)
	}
}
