package httpapi

import (
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema whose references loop through in-place applicators alone
// ({"$ref":"#"}, or two $defs referring to each other through an allOf)
// applies the same schema to the same value again at each turn, without
// end: the library compiles it, then fails every evaluation that reaches
// the loop ("reference cycle"; with {"$ref":"#"}, every record), and JSON
// Schema leaves its meaning undefined. So
// a schema sent to create or alter a topic is refused with such a cycle,
// named (docs/api.md#topic-schemas). A cycle through properties, items or
// any other applicator of a member or an item is a recursive schema, and
// taken: each turn reaches one level deeper into the record, which ends.
// A $dynamicRef or $recursiveRef counts as reaching every schema with its
// anchor, as the work count does (schemawork.go).

// inPlaceCycle describes the graph's in-place cycle as the chain of its
// schemas, each followed by the keyword that applies the next
// ("# --allOf--> #/allOf/0 --$ref--> #"); "" when there is none.
func (g *schemaGraph) inPlaceCycle() string {
	if len(g.cycle) == 0 {
		return ""
	}
	var steps []string
	for i, id := range g.cycle {
		s := g.schemas[id]
		if isHub(s) { // it stands for the reference that led to it
			continue
		}
		next := g.schemas[g.cycle[(i+1)%len(g.cycle)]]
		steps = append(steps, schemaPlace(s.Location), "--"+inPlaceKeyword(s, next)+"-->")
	}
	steps = append(steps, steps[0]) // a hub's edges lead to schemas: there is one
	return strings.Join(steps, " ")
}

// isHub reports whether s is a hub of the graph (schemaGraph.hub): the
// compiled schemas all have a location.
func isHub(s *jsonschema.Schema) bool {
	return s.Location == ""
}

// schemaPlace shortens a location inside the topic's schema to its
// fragment ("#/$defs/a"); one in a resource of its own ($id) stays whole.
func schemaPlace(location string) string {
	return strings.TrimPrefix(location, schemaResourceURL)
}

// inPlaceKeyword names the keyword by which s applies target to its own
// instance (one of inPlaceApplicators, or a hub of the graph): the first
// that does, when a $ref names a schema under another keyword of s.
func inPlaceKeyword(s, target *jsonschema.Schema) string {
	for _, applicator := range inPlaceApplicators(s) {
		if slices.Contains(applicator.schemas, target) {
			return applicator.keyword
		}
	}
	if s.DynamicRef != nil { // a hub stands for the schemas with its anchor
		return "$dynamicRef"
	}
	return "$recursiveRef"
}
