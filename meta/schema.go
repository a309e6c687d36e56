package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on the JSON Schemas of topics (docs/api.md#topic-schemas). The
// metastore checks them on every replica; the HTTP layer checks them first,
// so that a client learns of them before anything is proposed.
const (
	// SchemaBytesMax bounds one schema document.
	SchemaBytesMax = 256 << 10
	// SchemaNestingMax bounds how deeply the arrays and objects of a schema
	// document nest.
	SchemaNestingMax = 64
	// SchemaVersionsKept is how many versions of a topic's schema the
	// metastore keeps: the latest and those before it. An older version is
	// dropped when a newer one is added beyond the bound.
	SchemaVersionsKept = 8
	// SchemaBytesTotalMax bounds the schema bytes of all topics together,
	// so that the state machine (which travels in one snapshot message of
	// messageBytesMax) stays well within its bound.
	SchemaBytesTotalMax = 32 << 20
)

// SchemaVersion is one version of a topic's JSON Schema. Document bytes
// are never changed once applied: copies of a TopicRecord share them.
type SchemaVersion struct {
	// Version counts the topic's schemas from 1; each change adds one.
	Version int `json:"version"`
	// ID is unique over the life of the group (the schema sequence when
	// the version was applied): a topic deleted and re-created under its
	// name never reuses an ID, while it may reuse a Version.
	ID uint64 `json:"id"`
	// Document is the schema as JSON (compacted by the command encoding).
	Document json.RawMessage `json:"document"`
}

// The rules of additive-only evolution, named in every refusal.
const (
	RuleNoPropertyRemoved = "no property removed"
	RuleNoTypeChange      = "no type change"
	RuleNoRequiredDropped = "no required field dropped"
	RuleNoRequiredAdded   = "no required field added"
)

// SchemaEvolutionError is a schema change that is not additive: it names
// the rule it breaks and the property. It wraps ErrInvalidCommand.
type SchemaEvolutionError struct {
	// Rule is one of the Rule constants.
	Rule string
	// Property is the dotted path of the property ("address.city"; a "[]"
	// step enters array items, a "[i]" step position i of a tuple); empty
	// for the schema's root.
	Property string
	// Detail says what changed, for a person.
	Detail string
}

func (e *SchemaEvolutionError) Error() string {
	property := "the schema root"
	if e.Property != "" {
		property = fmt.Sprintf("property %q", e.Property)
	}
	return fmt.Sprintf("incompatible schema change (rule %q): %s %s", e.Rule, property, e.Detail)
}

// Unwrap makes errors.Is(err, ErrInvalidCommand) true.
func (e *SchemaEvolutionError) Unwrap() error { return ErrInvalidCommand }

// CheckSchemaDocument checks a schema document on its own: its size, that
// it is one JSON object or boolean, and its nesting. It does not compile
// the schema (the core never does; the HTTP layer compiles it).
func CheckSchemaDocument(document []byte) error {
	if len(document) == 0 || len(document) > SchemaBytesMax {
		return invalidf("schema is %d bytes, want 1 to %d", len(document), SchemaBytesMax)
	}
	if !json.Valid(document) {
		return invalidf("schema is not valid JSON")
	}
	first := strings.TrimLeft(string(document[:min(len(document), 64)]), " \t\r\n")
	if !strings.HasPrefix(first, "{") && !strings.HasPrefix(first, "true") && !strings.HasPrefix(first, "false") {
		return invalidf("schema must be a JSON object or a boolean")
	}
	if depth := JSONNesting(document); depth > SchemaNestingMax {
		return invalidf("schema nests %d levels deep, at most %d", depth, SchemaNestingMax)
	}
	return nil
}

// JSONNesting returns the deepest nesting of arrays and objects of JSON:
// of a valid document, or of the bytes of one up to where a parser
// stopped (the HTTP layer names the parser's depth bound so).
func JSONNesting(document []byte) int {
	deepest, _ := jsonShape(document)
	return deepest
}

// SchemaContainers counts the objects and arrays of a schema document (its
// subschemas, and the arrays inside it), valid JSON; the HTTP layer bounds
// it before it compiles a schema.
func SchemaContainers(document []byte) int {
	_, containers := jsonShape(document)
	return containers
}

// jsonShape returns the deepest nesting of arrays and objects of valid
// JSON, and how many there are.
func jsonShape(document []byte) (deepest, containers int) {
	depth, inString, escaped := 0, false, false
	for _, c := range document {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			containers++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest, containers
}

// CheckSchemaEvolution checks that next only adds to previous: no property
// of previous is missing from next, no property changes its type, and the
// required fields are the same. Properties are compared where both
// schemas declare them: under "properties" and "items", recursively (an
// "items" array, the tuple form of the drafts before 2020-12, position by
// position), and under "prefixItems" (the tuple form of 2020-12) position
// by position too. It returns nil or a *SchemaEvolutionError (an
// ErrInvalidCommand for documents that are not JSON).
func CheckSchemaEvolution(previous, next []byte) error {
	return schemaComparison{tupleItems: true, prefixItems: true}.check(previous, next)
}

// schemaComparison holds the rules of one evolution check. tupleItems
// compares under an "items" array, prefixItems under "prefixItems"; the
// alters of earlier releases did not (AlterTopic.TupleItemsCompared,
// AlterTopic.PrefixItemsCompared), and apply as they did.
type schemaComparison struct {
	tupleItems  bool
	prefixItems bool
}

func (c schemaComparison) check(previous, next []byte) error {
	var before, after any
	if err := errors.Join(json.Unmarshal(previous, &before), json.Unmarshal(next, &after)); err != nil {
		return invalidf("schema is not valid JSON: %v", err)
	}
	return c.compareNodes(before, after, "")
}

// compareNodes compares one schema node of the previous version with
// the node at the same place in the next one.
func (c schemaComparison) compareNodes(before, after any, path string) error {
	old, _ := before.(map[string]any)
	now, _ := after.(map[string]any)
	if oldType, newType := schemaTypes(old), schemaTypes(now); oldType != newType {
		return &SchemaEvolutionError{Rule: RuleNoTypeChange, Property: path,
			Detail: fmt.Sprintf("has type %s before and %s now", oldType, newType)}
	}
	if err := compareRequired(old, now, path); err != nil {
		return err
	}
	if err := c.compareProperties(old, now, path); err != nil {
		return err
	}
	if err := c.compareItems(old["items"], now["items"], path); err != nil {
		return err
	}
	if !c.prefixItems {
		return nil
	}
	return c.comparePositions(old["prefixItems"], now["prefixItems"], now["items"], path)
}

// compareItems compares the "items" of a node: one schema for every
// element or, with tupleItems, an array of schemas, one per position
// (drafts before 2020-12), whose element i is compared with the next
// version's schema for position i (its element i, or its one schema for
// every element).
func (c schemaComparison) compareItems(before, after any, path string) error {
	switch old := before.(type) {
	case map[string]any:
		return c.compareNodes(old, after, path+"[]")
	case []any:
		if !c.tupleItems {
			return nil
		}
		return c.comparePositions(old, after, after, path)
	}
	return nil
}

// comparePositions compares the schemas of a tuple, one per position (an
// "items" array, or "prefixItems"), with the next version's: its element
// i with the next version's schema for position i, which is element i of
// after when after is an array that long, else rest when it is one
// schema for the elements past the tuple (the next version's "items"),
// else none. Position i is named "[i]" in the path.
func (c schemaComparison) comparePositions(before, after, rest any, path string) error {
	old, _ := before.([]any)
	for i, element := range old {
		var next any
		switch now := after.(type) {
		case []any:
			if i < len(now) {
				next = now[i]
			}
		}
		if next == nil {
			if schema, isSchema := rest.(map[string]any); isSchema {
				next = schema
			}
		}
		if err := c.compareNodes(element, next, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// compareProperties checks that every property of old is in now, and
// compares each.
func (c schemaComparison) compareProperties(old, now map[string]any, path string) error {
	oldProperties, _ := old["properties"].(map[string]any)
	newProperties, _ := now["properties"].(map[string]any)
	for _, name := range sortedKeys(oldProperties) {
		child := joinPath(path, name)
		after, kept := newProperties[name]
		if !kept {
			return &SchemaEvolutionError{Rule: RuleNoPropertyRemoved, Property: child, Detail: "is missing from the new schema"}
		}
		if err := c.compareNodes(oldProperties[name], after, child); err != nil {
			return err
		}
	}
	return nil
}

// compareRequired checks that the required fields of a node are the same.
func compareRequired(old, now map[string]any, path string) error {
	before, after := requiredSet(old), requiredSet(now)
	for _, name := range sortedKeys(before) {
		if !after[name] {
			return &SchemaEvolutionError{Rule: RuleNoRequiredDropped, Property: joinPath(path, name),
				Detail: "was required and no longer is"}
		}
	}
	for _, name := range sortedKeys(after) {
		if !before[name] {
			return &SchemaEvolutionError{Rule: RuleNoRequiredAdded, Property: joinPath(path, name),
				Detail: "is required now and was not before"}
		}
	}
	return nil
}

// schemaTypes renders the "type" keyword of a node canonically: "any"
// when absent, else its types sorted.
func schemaTypes(node map[string]any) string {
	var types []string
	switch value := node["type"].(type) {
	case nil:
		return "any"
	case string:
		types = []string{value}
	case []any:
		for _, item := range value {
			types = append(types, fmt.Sprint(item))
		}
	default:
		types = []string{fmt.Sprint(value)}
	}
	slices.Sort(types)
	return "[" + strings.Join(types, ",") + "]"
}

// requiredSet returns the names listed by the "required" keyword.
func requiredSet(node map[string]any) map[string]bool {
	set := map[string]bool{}
	list, _ := node["required"].([]any)
	for _, item := range list {
		if name, ok := item.(string); ok {
			set[name] = true
		}
	}
	return set
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// sortedKeys returns the keys of m in order (nil for a nil map).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m { //determinism:ok sorted below
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// SameSchema reports whether two schema documents are the same schema,
// so that an alter sending the latest version again makes no new one
// (AlterTopic.SameSchemaKept). They are when they decode to the same
// value: whitespace and the order of an object's keys aside, strings
// compared as decoded (an escape such as \u0041 is the letter it
// names), numbers as written (1, 1.0 and 1e0 differ), and of a key given
// twice in one object the last (the HTTP layer refuses such a schema).
// Both are compared in one canonical form: decoded, numbers kept as
// their text, and encoded again with the keys of every object sorted.
// A document that is not JSON is the same as none.
func SameSchema(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return json.Valid(a)
	}
	canonicalA, errA := canonicalJSON(a)
	canonicalB, errB := canonicalJSON(b)
	return errA == nil && errB == nil && bytes.Equal(canonicalA, canonicalB)
}

// canonicalJSON is one JSON document decoded (its numbers kept as
// written) and encoded again, whose encoding sorts the keys of every
// object. A document with a string or key that decodes to U+FFFD has
// none: the decoder makes every lone surrogate escape (\ud800, \udbff)
// that character, so two different documents would compare the same
// (whole-change review); such a document is the same only as its own
// bytes.
func canonicalJSON(document []byte) ([]byte, error) {
	if !json.Valid(document) {
		return nil, invalidf("schema is not valid JSON")
	}
	decoder := json.NewDecoder(bytes.NewReader(document))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	if holdsReplacement(value) {
		return nil, invalidf("schema holds U+FFFD or a lone surrogate")
	}
	return json.Marshal(value)
}

// holdsReplacement reports whether a decoded JSON value has a string or
// an object key holding U+FFFD.
func holdsReplacement(value any) bool {
	switch v := value.(type) {
	case string:
		return strings.ContainsRune(v, utf8.RuneError)
	case []any:
		return slices.ContainsFunc(v, holdsReplacement)
	case map[string]any:
		for key, element := range v { //determinism:ok only a boolean leaves, the same whatever the order
			if strings.ContainsRune(key, utf8.RuneError) || holdsReplacement(element) {
				return true
			}
		}
	}
	return false
}

// LatestSchema returns the topic's newest schema version.
func (t TopicRecord) LatestSchema() (SchemaVersion, bool) {
	if len(t.Schemas) == 0 {
		return SchemaVersion{}, false
	}
	return t.Schemas[len(t.Schemas)-1], true
}

// SchemaAt returns the given version of the topic's schema, if kept.
func (t TopicRecord) SchemaAt(version int) (SchemaVersion, bool) {
	for _, schema := range t.Schemas {
		if schema.Version == version {
			return schema, true
		}
	}
	return SchemaVersion{}, false
}

// addSchema appends document as the topic's next schema version, checking
// evolution against the latest and the bound on all schema bytes, and
// drops the oldest version beyond SchemaVersionsKept. It changes nothing
// when it fails.
func (s *State) addSchema(record *TopicRecord, document json.RawMessage, rules schemaComparison) error {
	latest, found := record.LatestSchema()
	if found {
		if err := rules.check(latest.Document, document); err != nil {
			return err
		}
	}
	if total := s.schemaBytes() + len(document); total > SchemaBytesTotalMax {
		return rejectf(ErrSchemaSpace, "the schemas of all topics would hold %d bytes, at most %d", total, SchemaBytesTotalMax)
	}
	s.schemaSequence++
	s.schemaEpoch++
	s.markCluster()
	version := SchemaVersion{Version: latest.Version + 1, ID: s.schemaSequence, Document: document}
	schemas := append(slices.Clone(record.Schemas), version)
	record.Schemas = schemas[max(0, len(schemas)-SchemaVersionsKept):]
	return nil
}

// schemaBytes is the size of every kept schema version of every topic.
func (s *State) schemaBytes() int {
	total := 0
	for _, record := range s.topics { //determinism:ok a sum does not depend on order
		total += schemaBytesOf(record.Schemas)
	}
	return total
}

// SchemaEpoch changes whenever the latest schema of some topic may have
// changed (a schema added, a topic with a schema created or deleted, a
// snapshot installed), so that a view of the latest schemas built at one
// epoch is current while the epoch stays the same. It is not persisted.
func (s *State) SchemaEpoch() uint64 { return s.schemaEpoch }

// checkSchemas checks the invariants of a topic's schema versions:
// consecutive versions ending at the latest, increasing ids, at most
// SchemaVersionsKept of them, each a valid document.
func (t TopicRecord) checkSchemas() error {
	if len(t.Schemas) > SchemaVersionsKept {
		return fmt.Errorf("topic %q keeps %d schema versions, at most %d", t.Name, len(t.Schemas), SchemaVersionsKept)
	}
	for i, schema := range t.Schemas {
		if schema.Version < 1 || schema.ID < 1 || (i > 0 && (schema.Version != t.Schemas[i-1].Version+1 || schema.ID <= t.Schemas[i-1].ID)) {
			return fmt.Errorf("topic %q: schema %d (version %d, id %d) is out of order", t.Name, i, schema.Version, schema.ID)
		}
		if err := CheckSchemaDocument(schema.Document); err != nil {
			return fmt.Errorf("topic %q schema version %d: %v", t.Name, schema.Version, err)
		}
	}
	return nil
}
