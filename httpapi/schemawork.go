package httpapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The work of validating a record is not bounded by the sizes of the
// record and the schema: the library evaluates every branch of a oneOf
// or anyOf, so a schema whose branches recurse into the same child (two
// branches of {"type":"array","items":{"$ref":"#"}}) evaluates a record
// nested d deep 2^d times, and a chain of $defs each listing the next
// twice does the same on a flat record. One 80-byte produce would hold a
// core for ever, and the library takes no context.
//
// So before the library runs, a count bounds its work: a walk of the
// record that carries, for each node of the record, how many evaluation
// paths reach each schema applied to it (saturating), and adds them up,
// with the items hashed by each uniqueItems and the patterns matched
// against each member's name. A request whose records would together
// take more than schemaWorkBudget is refused (400) at the first record
// that passes it, before the library validates that record. The count is an upper bound: it follows every
// in-place applicator (allOf, anyOf, oneOf, not, if/then/else, $ref,
// dependent schemas) and every applicator of a child that may apply
// (properties by name, patternProperties by match, additionalProperties,
// items by index, contains, unevaluated*), whatever the outcome of the
// others. Its own cost is at most the work it counts, so it is bounded by
// the same budget.

const (
	// schemaWorkFloor is the work (schema evaluations, of the order of a
	// microsecond each) any produce request may spend on validation.
	schemaWorkFloor = 1 << 18
	// schemaWorkPerPayloadByte is the work allowed per byte of the
	// request's payloads on top of the floor: a linear schema costs a few
	// evaluations per node of a record, and a node takes a few bytes.
	schemaWorkPerPayloadByte = 8
	// numberDigitsPerWork, numberDigitsSquaredPerWork and
	// numberExponentPerWork price the reading of a number (numberWork),
	// about twice what it took on a two-core VM.
	numberDigitsPerWork        = 64
	numberDigitsSquaredPerWork = 1 << 16
	numberExponentPerWork      = 16
	// uniqueItemsPairwiseMax is the longest array whose uniqueItems the
	// library checks by comparing every pair (each comparison reads the
	// numbers of both items); it hashes each item of a longer one once.
	uniqueItemsPairwiseMax = 20
	// ratBitsPerWork prices comparing a number with a bound of the
	// schema, read once at compile: linear in the bound's bits.
	ratBitsPerWork = 1024
)

// schemaDocumentNumbersWork is the work of reading the numbers of a
// schema document, as the compiler does with every number of a numeric
// keyword (1e999999 took 33 ms: a 4.7 KB schema of 200 of them held a
// compile slot for seconds past its timeout, and 256 KiB of them would
// for minutes). Saturates past the floor; the document is valid JSON.
func schemaDocumentNumbersWork(document []byte) uint64 {
	decoder := json.NewDecoder(bytes.NewReader(document))
	decoder.UseNumber()
	var work uint64
	for work <= schemaWorkFloor {
		token, err := decoder.Token()
		if err != nil {
			return work
		}
		if number, ok := token.(json.Number); ok {
			work = addSaturating(work, numberWork(string(number)))
		}
	}
	return work
}

// schemaWorkBudget is the validation work allowed to a request whose
// records' payloads total payloadBytes.
func schemaWorkBudget(payloadBytes int) uint64 {
	return schemaWorkFloor + schemaWorkPerPayloadByte*uint64(payloadBytes)
}

// schemaGraph is a compiled schema seen as a graph: each schema reachable
// from the root gets an index; inPlace lists, with repetitions, the
// schemas that apply to the same instance; position orders the in-place
// edges (an edge to a schema at an earlier position closes a cycle, which
// the library refuses while validating, and is not followed).
// Immutable once built.
type schemaGraph struct {
	schemas  []*jsonschema.Schema
	index    map[*jsonschema.Schema]int32
	inPlace  [][]int32
	position []int32
	// cycle is the first cycle of in-place edges the ordering walk met:
	// each schema applies the next to the same instance, and the last
	// applies the first; nil when there is none. A schema sent to create
	// or alter a topic is refused with one (versions stored before that
	// check may still have one).
	cycle []int32
	// numbers[id] is what schema id costs a number instance beyond its
	// evaluation (numberCost).
	numbers []numberCost
}

// numberCost is the work a schema adds to the evaluation of a number:
// the library reads the number into a big.Rat for each of conversions
// (type integer, the numeric keywords, each number of const and enum),
// and each number of const and enum of the schema's own (literalWork).
type numberCost struct {
	conversions uint64
	literalWork uint64
}

// newSchemaGraph indexes every schema reachable from root.
func newSchemaGraph(root *jsonschema.Schema) *schemaGraph {
	g := &schemaGraph{index: map[*jsonschema.Schema]int32{}}
	g.add(root)
	for i := 0; i < len(g.schemas); i++ {
		for _, child := range childSchemas(g.schemas[i]) {
			g.add(child)
		}
	}
	dynamic := map[string][]*jsonschema.Schema{}
	var recursive []*jsonschema.Schema
	for _, s := range g.schemas {
		if s.DynamicAnchor != "" {
			dynamic[s.DynamicAnchor] = append(dynamic[s.DynamicAnchor], s)
		}
		if s.RecursiveAnchor {
			recursive = append(recursive, s)
		}
	}
	g.inPlace = make([][]int32, len(g.schemas))
	hubs := map[string]int32{}
	for i, s := range g.schemas { // the hubs appended meanwhile have their edges already
		for _, target := range inPlaceSchemas(s) {
			g.inPlace[i] = append(g.inPlace[i], g.index[target])
		}
		if s.RecursiveRef != nil {
			g.inPlace[i] = append(g.inPlace[i], g.hub(hubs, "", recursive))
		}
		if s.DynamicRef != nil && s.DynamicRef.Anchor != "" {
			g.inPlace[i] = append(g.inPlace[i], g.hub(hubs, "#"+s.DynamicRef.Anchor, dynamic[s.DynamicRef.Anchor]))
		}
	}
	g.order()
	g.numbers = make([]numberCost, len(g.schemas))
	for i, s := range g.schemas {
		g.numbers[i] = schemaNumberCost(s)
	}
	return g
}

// schemaNumberCost counts what s does with a number instance
// (validator.go of the library: the type check of "integer", numValidate,
// and equals for const and enum).
func schemaNumberCost(s *jsonschema.Schema) numberCost {
	var cost numberCost
	if s.Types != nil && slices.Contains(s.Types.ToStrings(), "integer") {
		cost.conversions++
	}
	compared := false
	for _, bound := range []*big.Rat{s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum, s.MultipleOf} {
		if bound != nil {
			// compared (or divided) at each evaluation: linear in its size
			compared = true
			cost.literalWork = addSaturating(cost.literalWork, 1+uint64(bound.Num().BitLen()+bound.Denom().BitLen())/ratBitsPerWork)
		}
	}
	if compared {
		cost.conversions++
	}
	literal := func(value any) {
		if number, ok := value.(json.Number); ok {
			cost.conversions++
			cost.literalWork = addSaturating(cost.literalWork, numberWork(string(number)))
		}
	}
	if s.Const != nil {
		literal(*s.Const)
	}
	if s.Enum != nil {
		for _, value := range s.Enum.Values {
			literal(value)
		}
	}
	return cost
}

// numberWork is the work of reading a JSON number into a big.Rat, as the
// library does to compare it: it grows with the exponent (1e999999 took
// 33 ms) and with the square of the digits (a million digits took 2.7 s),
// so an 8-byte number could hold a core for tens of milliseconds per
// evaluation where the count charges one unit (about a microsecond).
func numberWork(text string) uint64 {
	mantissa, exponent := text, ""
	if at := strings.IndexAny(text, "eE"); at >= 0 {
		mantissa, exponent = text[:at], text[at+1:]
	}
	var digits, magnitude uint64
	for i := 0; i < len(mantissa); i++ {
		if mantissa[i] >= '0' && mantissa[i] <= '9' {
			digits++
		}
	}
	for i := 0; i < len(exponent); i++ {
		if c := exponent[i]; c >= '0' && c <= '9' {
			magnitude = min(magnitude*10+uint64(c-'0'), 1<<40)
		}
	}
	return 1 + digits/numberDigitsPerWork + digits*digits/numberDigitsSquaredPerWork + magnitude/numberExponentPerWork
}

// hub returns the node standing for every schema a dynamic or recursive
// reference may resolve to (key names the anchor): an empty schema with
// an edge to each, so that the graph holds one edge per reference and one
// per anchor, not their product.
func (g *schemaGraph) hub(hubs map[string]int32, key string, targets []*jsonschema.Schema) int32 {
	if id, ok := hubs[key]; ok {
		return id
	}
	id := g.add(&jsonschema.Schema{})
	hubs[key] = id
	g.inPlace = append(g.inPlace, nil)
	for _, target := range targets {
		g.inPlace[id] = append(g.inPlace[id], g.index[target])
	}
	return id
}

func (g *schemaGraph) add(s *jsonschema.Schema) int32 {
	if id, ok := g.index[s]; ok {
		return id
	}
	id := int32(len(g.schemas))
	g.index[s] = id
	g.schemas = append(g.schemas, s)
	return id
}

// order sets position to a topological order of the in-place edges:
// reverse post-order of a depth-first walk, iterative so that a deep
// schema cannot exhaust the stack. An edge back to a schema still open
// on the walk's stack closes a cycle: the first one sets cycle.
func (g *schemaGraph) order() {
	const unvisited, open, done = 0, 1, 2
	state := make([]uint8, len(g.schemas))
	postOrder := make([]int32, 0, len(g.schemas))
	type frame struct{ id, next int32 }
	for start := range g.schemas {
		if state[start] != unvisited {
			continue
		}
		stack := []frame{{id: int32(start)}}
		state[start] = open
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if int(top.next) < len(g.inPlace[top.id]) {
				target := g.inPlace[top.id][top.next]
				top.next++
				if state[target] == unvisited {
					state[target] = open
					stack = append(stack, frame{id: target})
				} else if state[target] == open && g.cycle == nil {
					// the open schemas are those on the stack, a path of edges
					from := slices.IndexFunc(stack, func(f frame) bool { return f.id == target })
					for _, f := range stack[from:] {
						g.cycle = append(g.cycle, f.id)
					}
				}
				continue
			}
			state[top.id] = done
			postOrder = append(postOrder, top.id)
			stack = stack[:len(stack)-1]
		}
	}
	g.position = make([]int32, len(g.schemas))
	for i, id := range postOrder {
		g.position[id] = int32(len(postOrder) - 1 - i)
	}
}

// inPlaceApplicator is a keyword of a schema with the schemas it applies
// to the schema's own instance.
type inPlaceApplicator struct {
	keyword string
	schemas []*jsonschema.Schema
}

// inPlaceApplicators lists s's keywords that apply schemas to the
// instance s applies to, in the order inPlaceSchemas walks them; a
// keyword s does not use holds nil. A dynamic or recursive reference
// lists its static target only: it may resolve to any schema with its
// anchor besides (the graph's hubs).
func inPlaceApplicators(s *jsonschema.Schema) []inPlaceApplicator {
	var dynamic *jsonschema.Schema
	if s.DynamicRef != nil {
		dynamic = s.DynamicRef.Ref
	}
	var dependents, dependencies []*jsonschema.Schema
	for _, name := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		dependents = append(dependents, s.DependentSchemas[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if dependency, ok := s.Dependencies[name].(*jsonschema.Schema); ok {
			dependencies = append(dependencies, dependency)
		}
	}
	return []inPlaceApplicator{
		{"$ref", []*jsonschema.Schema{s.Ref}}, {"not", []*jsonschema.Schema{s.Not}},
		{"if", []*jsonschema.Schema{s.If}}, {"then", []*jsonschema.Schema{s.Then}}, {"else", []*jsonschema.Schema{s.Else}},
		{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf},
		{"$recursiveRef", []*jsonschema.Schema{s.RecursiveRef}}, {"$dynamicRef", []*jsonschema.Schema{dynamic}},
		{"dependentSchemas", dependents}, {"dependencies", dependencies},
	}
}

// inPlaceSchemas lists the schemas that apply to the instance s applies
// to (inPlaceApplicators), but for those a dynamic or recursive
// reference may resolve to besides its static target.
func inPlaceSchemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var targets []*jsonschema.Schema
	for _, applicator := range inPlaceApplicators(s) {
		for _, target := range applicator.schemas {
			if target != nil {
				targets = append(targets, target)
			}
		}
	}
	return targets
}

// childSchemas lists every schema s refers to, in place or to a child,
// for indexing.
func childSchemas(s *jsonschema.Schema) []*jsonschema.Schema {
	children := inPlaceSchemas(s)
	add := func(schemas ...*jsonschema.Schema) {
		for _, child := range schemas {
			if child != nil {
				children = append(children, child)
			}
		}
	}
	add(s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema)
	add(s.PrefixItems...)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		add(s.Properties[name])
	}
	patterns := slices.SortedFunc(maps.Keys(s.PatternProperties), func(a, b jsonschema.Regexp) int { return strings.Compare(a.String(), b.String()) })
	for _, pattern := range patterns { // sorted: the graph's order decides which cycle a refusal names
		add(s.PatternProperties[pattern])
	}
	for _, maybe := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch value := maybe.(type) {
		case *jsonschema.Schema:
			add(value)
		case []*jsonschema.Schema:
			add(value...)
		}
	}
	return children
}

// path is a schema and the number of evaluation paths that reach it at
// one node of the record (saturating at math.MaxUint64).
type path struct {
	id    int32
	count uint64
}

func addSaturating(a, b uint64) uint64 {
	sum, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return sum
}

func mulSaturating(a, b uint64) uint64 {
	high, low := bits.Mul64(a, b)
	if high != 0 {
		return math.MaxUint64
	}
	return low
}

// schemaWork counts the validation work of a request's records against
// one schema graph, up to budget.
type schemaWork struct {
	graph  *schemaGraph
	budget uint64
	// spent is the work counted so far; over budget, the count stops.
	spent uint64
	// slot[id] is 1 + the index of schema id in the list being built,
	// 0 when absent; every slot is 0 between two uses.
	slot []int32
}

// record adds the work of one record (its parsed JSON) and reports
// whether the request is still within its budget.
func (w *schemaWork) record(instance any) bool {
	if w.slot == nil {
		w.slot = make([]int32, len(w.graph.schemas))
	}
	_, _, ok := w.node(instance, []path{{id: 0, count: 1}})
	return ok
}

func (w *schemaWork) charge(work uint64) bool {
	w.spent = addSaturating(w.spent, work)
	return w.spent <= w.budget
}

// node counts the work at one node of the record reached by entry, then
// at its children; it returns the number of nodes of its subtree and the
// work of reading its numbers once (numberWork). The order of an
// object's members does not matter: the count is a sum.
func (w *schemaWork) node(instance any, entry []path) (size, numbers uint64, ok bool) {
	reached, ok := w.closure(entry)
	if !ok || !w.value(instance, reached) {
		return 0, 0, false
	}
	size = 1
	switch value := instance.(type) {
	case json.Number:
		numbers = numberWork(string(value))
	case map[string]any:
		for name, member := range value {
			if !w.propertyNames(name, reached) {
				return 0, 0, false
			}
			childSize, childNumbers, ok := w.node(member, w.property(name, reached))
			if !ok {
				return 0, 0, false
			}
			size, numbers = size+childSize, addSaturating(numbers, childNumbers)
		}
	case []any:
		for i, item := range value {
			childSize, childNumbers, ok := w.node(item, w.item(i, reached))
			if !ok {
				return 0, 0, false
			}
			size, numbers = size+childSize, addSaturating(numbers, childNumbers)
		}
		reads := uint64(1)
		if len(value) <= uniqueItemsPairwiseMax {
			reads = 2 * uint64(len(value))
		}
		hashing := addSaturating(size, mulSaturating(numbers, reads))
		for _, p := range reached {
			if w.graph.schemas[p.id].UniqueItems && !w.charge(mulSaturating(p.count, hashing)) {
				return 0, 0, false
			}
		}
	}
	return size, numbers, true
}

// value counts the work the schemas reached at a node do with its value
// beyond their evaluation: matching a string against a pattern, or
// compiling it for format "regex"; reading a number, for each schema
// that compares it.
func (w *schemaWork) value(instance any, reached []path) bool {
	switch value := instance.(type) {
	case string:
		for _, p := range reached {
			s := w.graph.schemas[p.id]
			if s.Pattern != nil && !w.charge(mulSaturating(p.count, regexpWork(s.Pattern, len(value)))) {
				return false
			}
			if s.Format != nil && s.Format.Name == "regex" && !w.charge(mulSaturating(p.count, regexpCompileWork(value))) {
				return false
			}
		}
	case json.Number:
		read := numberWork(string(value))
		for _, p := range reached {
			cost := w.graph.numbers[p.id]
			if cost.conversions == 0 {
				continue
			}
			work := addSaturating(mulSaturating(cost.conversions, read), cost.literalWork)
			if !w.charge(mulSaturating(p.count, work)) {
				return false
			}
		}
	}
	return true
}

// regexpCompileWork is the work of checking a string with format
// "regex": parsing it, and compiling it when its size is within the
// engine's bound (an instruction took about a microsecond).
func regexpCompileWork(text string) uint64 {
	work := 1 + uint64(len(text))
	if insts, err := regexpInsts(text); err == nil && insts <= schemaRegexpInstsMax {
		work += uint64(insts)
	}
	return work
}

// closure follows the in-place edges from entry in topological order,
// charging one unit of work per schema it reaches and one per evaluation
// path of each.
func (w *schemaWork) closure(entry []path) ([]path, bool) {
	reached := entry
	for i := 0; i < len(reached); i++ {
		w.slot[reached[i].id] = int32(i + 1)
	}
	for i := 0; i < len(reached); i++ {
		for _, target := range w.graph.inPlace[reached[i].id] {
			if w.slot[target] == 0 {
				reached = append(reached, path{id: target})
				w.slot[target] = int32(len(reached))
			}
		}
	}
	defer w.clearSlots(reached)
	if !w.charge(uint64(len(reached))) {
		return nil, false
	}
	if len(reached) > 1 {
		position := w.graph.position
		slices.SortFunc(reached, func(a, b path) int { return int(position[a.id] - position[b.id]) })
		for i, p := range reached {
			w.slot[p.id] = int32(i + 1)
		}
	}
	for i := range reached {
		p := reached[i]
		if !w.charge(p.count) {
			return nil, false
		}
		for _, target := range w.graph.inPlace[p.id] {
			if w.graph.position[target] > w.graph.position[p.id] {
				at := &reached[w.slot[target]-1]
				at.count = addSaturating(at.count, p.count)
			}
		}
	}
	return reached, true
}

func (w *schemaWork) clearSlots(list []path) {
	for _, p := range list {
		w.slot[p.id] = 0
	}
}

// property is the entry of the member name of an object reached as
// given: the schemas of properties, matching patternProperties,
// additionalProperties when neither applies, and unevaluatedProperties.
func (w *schemaWork) property(name string, reached []path) []path {
	var entry []path
	for _, p := range reached {
		s := w.graph.schemas[p.id]
		named := false
		if child, ok := s.Properties[name]; ok {
			entry = w.add(entry, child, p.count)
			named = true
		}
		for pattern, child := range s.PatternProperties {
			// each pattern is matched: the work is checked at the member's
			// closure, and no match runs once it is past the budget
			if !w.charge(mulSaturating(p.count, regexpWork(pattern, len(name)))) {
				break
			}
			if pattern.MatchString(name) {
				entry = w.add(entry, child, p.count)
				named = true
			}
		}
		if additional, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !named {
			entry = w.add(entry, additional, p.count)
		}
		entry = w.add(entry, s.UnevaluatedProperties, p.count)
	}
	w.clearSlots(entry)
	return entry
}

// propertyNames counts the evaluation of a member's name by the
// propertyNames schemas of the object.
func (w *schemaWork) propertyNames(name string, reached []path) bool {
	var entry []path
	for _, p := range reached {
		entry = w.add(entry, w.graph.schemas[p.id].PropertyNames, p.count)
	}
	w.clearSlots(entry)
	if len(entry) == 0 {
		return true
	}
	_, _, ok := w.node(name, entry)
	return ok
}

// item is the entry of item index of an array reached as given.
func (w *schemaWork) item(index int, reached []path) []path {
	var entry []path
	for _, p := range reached {
		s := w.graph.schemas[p.id]
		if index < len(s.PrefixItems) {
			entry = w.add(entry, s.PrefixItems[index], p.count)
		} else {
			entry = w.add(entry, s.Items2020, p.count)
		}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			entry = w.add(entry, items, p.count)
		case []*jsonschema.Schema:
			if index < len(items) {
				entry = w.add(entry, items[index], p.count)
			} else if additional, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				entry = w.add(entry, additional, p.count)
			}
		}
		entry = w.add(entry, s.Contains, p.count)
		entry = w.add(entry, s.UnevaluatedItems, p.count)
	}
	w.clearSlots(entry)
	return entry
}

// add adds count paths to s in entry (slots mark entry's schemas; the
// caller clears them).
func (w *schemaWork) add(entry []path, s *jsonschema.Schema, count uint64) []path {
	if s == nil {
		return entry
	}
	id, ok := w.graph.index[s]
	if !ok { // every schema reachable from the root was indexed
		panic("httpapi: a schema outside the graph of its root")
	}
	if at := w.slot[id]; at != 0 {
		entry[at-1].count = addSaturating(entry[at-1].count, count)
		return entry
	}
	entry = append(entry, path{id: id, count: count})
	w.slot[id] = int32(len(entry))
	return entry
}
