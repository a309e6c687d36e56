package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
)

// personSchema is the base of the evolution table: two typed properties,
// one required, and an object with a nested property.
const personSchema = `{"type":"object","required":["name"],"properties":{
	"name":{"type":"string"},"age":{"type":["integer","null"]},
	"address":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}},
	"tags":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"}}}}}}`

// Property: each rule of additive evolution accepts what it allows and
// refuses what it forbids, naming itself and the property.
func TestSchemaEvolutionRules(t *testing.T) {
	requireEvolutions(t, personSchema, []evolutionCase{
		{name: "identical", next: personSchema},
		{name: "property added", next: strings.Replace(personSchema, `"name":{"type":"string"},`, `"name":{"type":"string"},"email":{"type":"string"},`, 1)},
		{name: "nested property added", next: strings.Replace(personSchema, `"city":{"type":"string"}`, `"city":{"type":"string"},"zip":{"type":"string"}`, 1)},
		{name: "type union reordered", next: strings.Replace(personSchema, `["integer","null"]`, `["null","integer"]`, 1)},
		{name: "constraint added", next: strings.Replace(personSchema, `"name":{"type":"string"}`, `"name":{"type":"string","maxLength":9}`, 1)},
		{name: "property removed", next: strings.Replace(personSchema, `"age":{"type":["integer","null"]},`, ``, 1),
			wantRule: RuleNoPropertyRemoved, wantProperty: "age"},
		{name: "nested property removed", next: strings.Replace(personSchema, `"label":{"type":"string"}`, ``, 1),
			wantRule: RuleNoPropertyRemoved, wantProperty: "tags[].label"},
		{name: "type changed", next: strings.Replace(personSchema, `"name":{"type":"string"}`, `"name":{"type":"integer"}`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "name"},
		{name: "type widened", next: strings.Replace(personSchema, `["integer","null"]`, `["integer","null","string"]`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "age"},
		{name: "type dropped", next: strings.Replace(personSchema, `"name":{"type":"string"}`, `"name":{}`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "name"},
		{name: "root type changed", next: strings.Replace(personSchema, `{"type":"object",`, `{"type":"array",`, 1),
			wantRule: RuleNoTypeChange, wantProperty: ""},
		{name: "nested type changed", next: strings.Replace(personSchema, `"city":{"type":"string"}`, `"city":{"type":"number"}`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "address.city"},
		{name: "required dropped", next: strings.Replace(personSchema, `"required":["name"],`, ``, 1),
			wantRule: RuleNoRequiredDropped, wantProperty: "name"},
		{name: "nested required dropped", next: strings.Replace(personSchema, `"required":["city"],`, `"required":[],`, 1),
			wantRule: RuleNoRequiredDropped, wantProperty: "address.city"},
		{name: "required added", next: strings.Replace(personSchema, `"required":["name"]`, `"required":["name","age"]`, 1),
			wantRule: RuleNoRequiredAdded, wantProperty: "age"},
		{name: "every record refused by a constraint", next: strings.Replace(personSchema, `{"type":"object",`, `{"type":"object","not":{},`, 1)},
		// false accepts nothing, but the next version would be compared
		// with it alone, and could no longer declare the root's type.
		{name: "the schema false", next: `false`, wantRule: RuleNoTypeChange, wantProperty: ""},
		{name: "the schema true", next: `true`, wantRule: RuleNoTypeChange, wantProperty: ""},
		{name: "the empty schema", next: ` {} `, wantRule: RuleNoTypeChange, wantProperty: ""},
		{name: "required added with a new property", next: strings.Replace(personSchema, `"required":["name"],"properties":{`,
			`"required":["name","id"],"properties":{"id":{"type":"string"},`, 1),
			wantRule: RuleNoRequiredAdded, wantProperty: "id"},
	})
}

// evolutionCase is a next version of a schema and the rule it breaks
// (none: it evolves the schema additively), naming the property.
type evolutionCase struct {
	name         string
	next         string
	wantRule     string
	wantProperty string
}

// requireEvolutions checks each case's next version against previous.
func requireEvolutions(t *testing.T, previous string, cases []evolutionCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.True(t, json.Valid([]byte(c.next)), "the case's schema is JSON")
			err := CheckSchemaEvolution([]byte(previous), []byte(c.next))
			if c.wantRule == "" {
				require.NoError(t, err)
				return
			}
			var refusal *SchemaEvolutionError
			require.True(t, errors.As(err, &refusal), "got %v", err)
			require.Equal(t, c.wantRule, refusal.Rule)
			require.Equal(t, c.wantProperty, refusal.Property)
			require.ErrorIs(t, err, ErrInvalidCommand)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", c.wantRule))
		})
	}
}

func TestCheckSchemaDocument(t *testing.T) {
	require.NoError(t, CheckSchemaDocument([]byte(personSchema)))
	require.NoError(t, CheckSchemaDocument([]byte(` true`)))
	deep := strings.Repeat(`{"items":`, SchemaNestingMax) + `{}` + strings.Repeat(`}`, SchemaNestingMax)
	for name, document := range map[string]string{
		"empty": "", "not json": "{", "array": "[]", "number": "7", "string": `"x"`,
		"too deep": deep, "too large": `{"description":"` + strings.Repeat("x", SchemaBytesMax) + `"}`,
	} {
		require.ErrorIs(t, CheckSchemaDocument([]byte(document)), ErrInvalidCommand, name)
	}
	require.Equal(t, 3, JSONNesting([]byte(`{"a":[{"b":"[[[{{"}]}`)), "brackets in strings do not count")
}

// schemaWith returns personSchema with one more string property.
func schemaWith(property string) json.RawMessage {
	return json.RawMessage(strings.Replace(personSchema, `"properties":{`, `"properties":{"`+property+`":{"type":"string"},`, 1))
}

// Property: create gives version 1, each alter the next version under its
// guard; a refused change (evolution, guard) changes nothing; old versions
// beyond the bound are dropped; ids are never reused, even by a topic
// re-created under the same name.
func TestSchemaCommands(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100))
	create := createTopic("p", "m1")
	create.Schema = json.RawMessage(personSchema)
	epoch := s.SchemaEpoch()
	require.NoError(t, create.apply(s))
	require.Greater(t, s.SchemaEpoch(), epoch)
	record, _ := s.Topic("p")
	require.Equal(t, []SchemaVersion{{Version: 1, ID: 1, Document: json.RawMessage(personSchema)}}, record.Schemas)

	requireRejected(t, s, AlterTopic{Name: "p", Schema: schemaWith("x"), SchemaAfterVersion: 0}, ErrGuardFailed)
	requireRejected(t, s, AlterTopic{Name: "p", Schema: json.RawMessage(`{"type":"object"}`), SchemaAfterVersion: 1}, ErrInvalidCommand)
	requireRejected(t, s, AlterTopic{Name: "p", Schema: json.RawMessage(`[1]`), SchemaAfterVersion: 1}, ErrInvalidCommand)
	for i := range SchemaVersionsKept + 2 {
		property := fmt.Sprintf("extra%d", i)
		document := json.RawMessage(strings.Replace(string(schemaWith(property)), `"properties":{`, `"properties":{`+extraProperties(i), 1))
		require.NoError(t, AlterTopic{Name: "p", Schema: document, SchemaAfterVersion: i + 1}.apply(s), "version %d", i+2)
	}
	record, _ = s.Topic("p")
	require.Len(t, record.Schemas, SchemaVersionsKept)
	latest, _ := record.LatestSchema()
	require.Equal(t, SchemaVersionsKept+3, latest.Version)
	_, kept := record.SchemaAt(1)
	require.False(t, kept, "version 1 is beyond the bound")
	_, kept = record.SchemaAt(latest.Version - SchemaVersionsKept + 1)
	require.True(t, kept)

	epoch = s.SchemaEpoch()
	require.NoError(t, DeleteTopic{Name: "p"}.apply(s))
	require.Greater(t, s.SchemaEpoch(), epoch, "a deleted topic's schema is gone from the view")
	require.NoError(t, create.apply(s))
	record, _ = s.Topic("p")
	require.Equal(t, 1, record.Schemas[0].Version)
	require.Equal(t, uint64(SchemaVersionsKept+4), record.Schemas[0].ID, "ids are never reused")
	latest, _ = record.LatestSchema()
	require.Equal(t, record.Schemas[0], latest)
}

// extraProperties returns the properties extra0..extra(n-1) added before.
func extraProperties(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"extra%d":{"type":"string"},`, i)
	}
	return b.String()
}

// Property: the schemas of all topics together stay under their bound.
func TestSchemaSpaceIsBounded(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100))
	document := json.RawMessage(`{"description":"` + strings.Repeat("x", SchemaBytesMax-100) + `"}`)
	topics := SchemaBytesTotalMax / len(document)
	for i := range topics {
		create := createTopic(fmt.Sprintf("t%d", i), "m1")
		create.Schema = document
		require.NoError(t, create.apply(s))
	}
	create := createTopic("one-too-many", "m1")
	create.Schema = document
	requireRejected(t, s, create, ErrSchemaSpace)
}

// Property: snapshot data carries the schemas and the schema sequence; an
// image whose schemas break the invariants is refused.
func TestStateImageCarriesSchemas(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100))
	create := createTopic("p", "m1")
	create.Schema = compacted(t, personSchema) // as every command carries it once encoded
	require.NoError(t, create.apply(s))
	require.NoError(t, AlterTopic{Name: "p", Schema: compacted(t, string(schemaWith("email"))), SchemaAfterVersion: 1}.apply(s))
	decoded, err := decodeImage(s.encodeImage())
	require.NoError(t, err)
	before, _ := s.Topic("p")
	after, _ := decoded.Topic("p")
	require.Equal(t, before.Schemas, after.Schemas)
	require.Equal(t, s.schemaSequence, decoded.schemaSequence)
	record, _ := decoded.Topic("p")
	require.Len(t, record.Schemas, 2)

	replaced := stateWith(t)
	epoch := replaced.SchemaEpoch()
	replaced.replaceWith(decoded)
	require.Greater(t, replaced.SchemaEpoch(), epoch, "installing a snapshot changes the schema epoch")

	topic := `{"name":"a","partitions":1,"assignments":[{"owner":"m"}],"schemas":%s}`
	for _, schemas := range []string{
		`[{"version":2,"id":1,"document":{}},{"version":2,"id":2,"document":{}}]`,
		`[{"version":1,"id":2,"document":{}},{"version":2,"id":1,"document":{}}]`,
		`[{"version":1,"id":1,"document":[]}]`,
		`[{"version":1,"id":9,"document":{}}]`, // past the sequence
	} {
		data := fmt.Sprintf(`{"topics":[`+topic+`],"cluster":{"conf_state":{"voters":[]},"peers":[],"schema_sequence":2}}`, schemas)
		_, err := decodeImage(append([]byte{imageFormatVersion}, data...))
		require.ErrorIs(t, err, ErrMalformedSnapshot, "schemas %s", schemas)
	}
}

func compacted(t *testing.T, document string) json.RawMessage {
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, []byte(document)))
	return b.Bytes()
}

// Property: a follower that catches up through a snapshot has every kept
// schema version of every topic, the schema sequence (the next version's
// id is the same on every replica) and a new schema epoch.
func TestSnapshotInstalledReplicaHasTheSchemas(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 23)
	const snapshotEntries, tailEntries = 20, 5
	c := newTestCluster(t, 3, 23, true, func(config *Config) {
		config.SnapshotEntries, config.SnapshotTailEntries = snapshotEntries, tailEntries
	})
	leader := c.waitLeader()
	c.heartbeatAll(leader, 10)
	lagging := otherThan(c.ids, leader)[0]
	c.crash(lagging)
	create := createTopic("typed", leader)
	create.Schema = compacted(t, personSchema)
	c.requireApplied(c.propose(leader, create), nil)
	c.requireApplied(c.propose(leader, AlterTopic{Name: "typed", Schema: compacted(t, string(schemaWith("email"))), SchemaAfterVersion: 1,
		ExpectedCreation: c.creation(leader, "typed")}), nil)
	for i := range 60 {
		c.requireApplied(c.propose(leader, MemberHeartbeat{ID: leader, HTTPAddr: leader + ":7942", ClusterAddr: leader + ":7943", NowMs: int64(100 + i)}), nil)
	}
	c.start(lagging)
	epoch := c.meta(lagging).State().SchemaEpoch()
	c.tick(5)
	require.Positive(t, c.snapshotsDelivered, "the lagging follower got a snapshot")
	c.requireConverged()
	want, _ := c.meta(leader).State().Topic("typed")
	got, found := c.meta(lagging).State().Topic("typed")
	require.True(t, found)
	require.Len(t, got.Schemas, 2)
	require.Equal(t, want.Schemas, got.Schemas)
	require.Greater(t, c.meta(lagging).State().SchemaEpoch(), epoch, "the installed snapshot changed the schema epoch")
	third := strings.Replace(string(schemaWith("email")), `"properties":{`, `"properties":{"phone":{"type":"string"},`, 1)
	c.requireApplied(c.propose(leader, AlterTopic{Name: "typed", Schema: compacted(t, third), SchemaAfterVersion: 2,
		ExpectedCreation: c.creation(leader, "typed")}), nil)
	c.requireConverged()
	want, _ = c.meta(leader).State().Topic("typed")
	got, _ = c.meta(lagging).State().Topic("typed")
	require.Equal(t, want.Schemas, got.Schemas, "the next version has the same id everywhere")
}

// tupleSchema declares its array's elements by position: "items" as an
// array of schemas (drafts before 2020-12).
const tupleSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array",
	"items":[{"type":"object","required":["x"],"properties":{"x":{"type":"string"}}},{"type":"integer"}]}`

// Property: the rules compare under "items" in its array form too, each
// position with the same position of the next version (or with the one
// schema the next version gives every element).
func TestSchemaEvolutionTupleItems(t *testing.T) {
	requireEvolutions(t, tupleSchema, []evolutionCase{
		{name: "identical", next: tupleSchema},
		{name: "position added", next: strings.Replace(tupleSchema, `{"type":"integer"}]`, `{"type":"integer"},{"type":"string"}]`, 1)},
		{name: "property added", next: strings.Replace(tupleSchema, `"x":{"type":"string"}`, `"x":{"type":"string"},"y":{}`, 1)},
		{name: "property removed", next: strings.Replace(tupleSchema, `"x":{"type":"string"}`, ``, 1),
			wantRule: RuleNoPropertyRemoved, wantProperty: "[0].x"},
		{name: "property and its requirement removed", next: strings.Replace(strings.Replace(tupleSchema, `"x":{"type":"string"}`, ``, 1), `"required":["x"],`, ``, 1),
			wantRule: RuleNoRequiredDropped, wantProperty: "[0].x"},
		{name: "property type changed", next: strings.Replace(tupleSchema, `"x":{"type":"string"}`, `"x":{"type":"number"}`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "[0].x"},
		{name: "requirement dropped", next: strings.Replace(tupleSchema, `"required":["x"],`, ``, 1),
			wantRule: RuleNoRequiredDropped, wantProperty: "[0].x"},
		{name: "position type changed", next: strings.Replace(tupleSchema, `{"type":"integer"}]`, `{"type":"string"}]`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "[1]"},
		{name: "one schema for every element", next: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":{"type":"object"}}`,
			wantRule: RuleNoRequiredDropped, wantProperty: "[0].x"},
	})
}

// An alter of this release (TupleItemsCompared, PrefixItemsCompared) is
// refused at apply when it breaks the rules under an "items" array or
// under "prefixItems"; one of an earlier release, which did not compare
// there, applies as it did on every replica.
func TestSchemaAlterComparesTuplesWhenItSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		// says sets the alter's flag of the comparison under test.
		says func(alter *AlterTopic, compared bool)
	}{
		{"items array", tupleSchema, func(a *AlterTopic, compared bool) { a.TupleItemsCompared = compared }},
		{"prefixItems", prefixSchema, func(a *AlterTopic, compared bool) { a.TupleItemsCompared, a.PrefixItemsCompared = true, compared }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stateWith(t, heartbeat("m1", 100))
			create := createTopic("tuple", "m1")
			create.Schema = json.RawMessage(tc.schema)
			require.NoError(t, create.apply(s))
			removed := json.RawMessage(strings.Replace(tc.schema, `"x":{"type":"string"}`, ``, 1))

			alter := AlterTopic{Name: "tuple", Schema: removed, SchemaAfterVersion: 1}
			tc.says(&alter, true)
			requireRejected(t, s, alter, ErrInvalidCommand)
			tc.says(&alter, false)
			require.NoError(t, alter.apply(s), "an alter of an earlier release applies as it did")
			record, _ := s.Topic("tuple")
			latest, _ := record.LatestSchema()
			require.Equal(t, 2, latest.Version)
		})
	}
}

// prefixSchema declares an array property's first elements by position
// with "prefixItems" (the tuple form of 2020-12), the audit's example.
const prefixSchema = `{"type":"object","properties":{"a":{"type":"array","prefixItems":[{"type":"integer"},
	{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}]}}}`

// Property: the rules compare under "prefixItems" as under an "items"
// array: each position with the same position of the next version (or,
// past its prefixItems, with the one schema its "items" gives the
// elements after them), a position named "[i]".
func TestSchemaEvolutionPrefixItems(t *testing.T) {
	requireEvolutions(t, prefixSchema, []evolutionCase{
		{name: "identical", next: prefixSchema},
		{name: "position added", next: strings.Replace(prefixSchema, `"required":["x"]}]`, `"required":["x"]},{"type":"string"}]`, 1)},
		{name: "property added", next: strings.Replace(prefixSchema, `"x":{"type":"string"}`, `"x":{"type":"string"},"y":{}`, 1)},
		{name: "constraint added", next: strings.Replace(prefixSchema, `{"type":"integer"}`, `{"type":"integer","minimum":0}`, 1)},
		{name: "the audit's change", next: strings.Replace(strings.Replace(prefixSchema, `{"type":"integer"}`, `{"type":"string"}`, 1),
			`"properties":{"x":{"type":"string"}},"required":["x"]`, `"properties":{},"required":[]`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "a[0]"},
		{name: "position type changed", next: strings.Replace(prefixSchema, `{"type":"integer"}`, `{"type":"string"}`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "a[0]"},
		{name: "property removed", next: strings.Replace(prefixSchema, `"x":{"type":"string"}`, ``, 1),
			wantRule: RuleNoPropertyRemoved, wantProperty: "a[1].x"},
		{name: "property type changed", next: strings.Replace(prefixSchema, `"x":{"type":"string"}`, `"x":{"type":"number"}`, 1),
			wantRule: RuleNoTypeChange, wantProperty: "a[1].x"},
		{name: "requirement dropped", next: strings.Replace(prefixSchema, `"required":["x"]`, `"required":[]`, 1),
			wantRule: RuleNoRequiredDropped, wantProperty: "a[1].x"},
		{name: "position removed", next: strings.Replace(prefixSchema, `,
	{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`, ``, 1),
			wantRule: RuleNoTypeChange, wantProperty: "a[1]"},
		{name: "position moved to items", next: strings.Replace(prefixSchema, `,
	{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}]`, `],"items":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`, 1)},
		{name: "prefixItems replaced by one items schema", next: `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object"}}}}`,
			wantRule: RuleNoTypeChange, wantProperty: "a[0]"},
	})
}
