package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recursiveTree recurses through the items of a member: each turn of the
// cycle reaches one level deeper into the record.
const recursiveTree = `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`

// Property: a schema whose references form a cycle through in-place
// applicators alone (each applying a schema to the same value) is
// refused at create and alter with 400 naming the cycle's references,
// before the node sees the request; the library compiled each of them,
// and then refused every record (the premise, checked here too). A
// cycle that goes through properties or items reaches into the record
// at each turn, and such a schema is taken.
func TestASchemaWhoseReferencesLoopInPlaceIsRefused(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		cycle        string
	}{
		{"itself", `{"$ref":"#"}`, "# --$ref--> #"},
		{"through allOf", `{"allOf":[{"$ref":"#"}]}`, "# --allOf--> #/allOf/0 --$ref--> #"},
		{"two definitions", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
			"#/$defs/a --$ref--> #/$defs/b --$ref--> #/$defs/a"},
	} {
		compiled, err := compileDocument([]byte(c.schema))
		require.NoError(t, err, "%s: the library compiles it", c.name)
		for _, record := range []string{`{}`, `[]`, `"x"`, `1`} {
			instance, _ := parseInstance([]byte(record))
			require.Contains(t, violation(compiled, instance), "reference cycle", "%s: and refuses every record, %s too", c.name, record)
		}
		for _, change := range []struct{ method, path, body string }{
			{"POST", "/v1/topics", `{"name":"loops","schema":` + c.schema + `}`},
			{"PATCH", "/v1/topics/loops", `{"schema":` + c.schema + `}`},
		} {
			fixture := newHandlerFixture(t)
			status, _, answer := fixture.call(t, change.method, change.path, change.body)
			require.Equal(t, http.StatusBadRequest, status, "%s: %s", c.name, answer)
			require.Contains(t, answer, c.cycle, "%s: the answer names the cycle", c.name)
			require.Empty(t, fixture.backend.received, "%s: refused before the node sees it", c.name)
		}
	}
	fixture := newHandlerFixture(t)
	status, _, answer := fixture.call(t, "POST", "/v1/topics", `{"name":"trees","schema":`+recursiveTree+`}`)
	require.Equal(t, http.StatusCreated, status, "a cycle through properties and items: %s", answer)
}

// Property: every in-place applicator closes a cycle (not, if, then,
// else, anyOf, oneOf, dependentSchemas, $dynamicRef), and a schema that
// reaches one schema twice without a cycle (a diamond), or recurses only
// through members and items, has none.
func TestSchemaGraphFindsEveryInPlaceCycle(t *testing.T) {
	cyclic := map[string]string{
		"not":              `{"not":{"$ref":"#"}}`,
		"if":               `{"if":{"$ref":"#"}}`,
		"then":             `{"if":true,"then":{"$ref":"#"}}`,
		"else":             `{"if":false,"else":{"$ref":"#"}}`,
		"anyOf":            `{"anyOf":[{"type":"string"},{"$ref":"#"}]}`,
		"oneOf":            `{"oneOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"allOf":[{"$ref":"#"}]}}}`,
		"dependentSchemas": `{"dependentSchemas":{"x":{"$ref":"#"}}}`,
		"$dynamicRef":      `{"$dynamicAnchor":"node","allOf":[{"$dynamicRef":"#node"}]}`,
	}
	for name, schema := range cyclic {
		compiled, err := compileDocument([]byte(schema))
		require.NoError(t, err, name)
		require.NotEmpty(t, newSchemaGraph(compiled).inPlaceCycle(), "%s closes a cycle", name)
	}
	for name, schema := range map[string]string{
		"tree": recursiveTree, "binary tree": binaryTree, "reconverging": reconverging,
		"two recursive branches": twoRecursiveBranches, "diamond chain": diamondChain(8),
		"dynamic tree": `{"$dynamicAnchor":"node","type":"object","properties":{"next":{"$dynamicRef":"#node"}}}`,
	} {
		compiled, err := compileDocument([]byte(schema))
		require.NoError(t, err, name)
		require.Empty(t, newSchemaGraph(compiled).inPlaceCycle(), "%s has no in-place cycle", name)
		require.Nil(t, newTestSchemaRegistry().checkDocument(context.Background(), []byte(schema)), name)
	}
}

// Property: a schema with an in-place cycle under each of several
// patternProperties is refused naming the same cycle every time (the
// first pattern's, in the patterns' sorted order), not one that depends
// on the order a map of patterns is walked in.
func TestTheCycleNamedDoesNotDependOnMapOrder(t *testing.T) {
	var patterns, defs []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		patterns = append(patterns, fmt.Sprintf(`"^%s":{"$ref":"#/$defs/%s"}`, name, name))
		defs = append(defs, fmt.Sprintf(`"%s":{"allOf":[{"$ref":"#/$defs/%s"}]}`, name, name))
	}
	schema := `{"type":"object","patternProperties":{` + strings.Join(patterns, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`
	for range 30 {
		compiled, err := compileDocument([]byte(schema))
		require.NoError(t, err)
		require.Equal(t, "#/$defs/a --allOf--> #/$defs/a/allOf/0 --$ref--> #/$defs/a", newSchemaGraph(compiled).inPlaceCycle())
	}
}
