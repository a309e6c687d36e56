package meta

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Property: SameSchema is equality of the decoded documents: whitespace,
// key order and string escapes aside, numbers as written.
func TestSameSchema(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"type":"object"}`, `{"type":"object"}`, true},
		{`{"type":"object","required":["a"]}`, " {\n\t\"required\" : [ \"a\" ],\"type\":\"object\"}\n", true},
		{`{"properties":{"a":{"type":"string","maxLength":3}}}`, `{"properties":{"a":{"maxLength":3,"type":"string"}}}`, true},
		{`{"const":"A"}`, `{"const":"\u0041"}`, true},
		{`true`, ` true `, true},
		{`{"maximum":1}`, `{"maximum":1.0}`, false},
		{`{"maximum":100}`, `{"maximum":1e2}`, false},
		{`{"required":["a","b"]}`, `{"required":["b","a"]}`, false}, // arrays keep their order
		{`{"type":"object"}`, `{"type":"object","title":"x"}`, false},
		{`{"const":"a"}`, `{"const":"A"}`, false},
		{`true`, `false`, false},
		{`{}`, `{`, false},
		{`{`, `{`, false},
		// lone surrogates decode alike (U+FFFD): only the same bytes are the same
		{`{"const":"\ud800"}`, `{"const":"\udbff"}`, false},
		{`{"const":"\ud800"}`, `{"const": "\ud800"}`, false},
		{`{"\ud800":1}`, `{"\udbff":1}`, false},
		{`{"const":"\ufffd"}`, `{"const":"\ud800"}`, false},
	} {
		require.Equal(t, tc.same, SameSchema([]byte(tc.a), []byte(tc.b)), "%s vs %s", tc.a, tc.b)
		require.Equal(t, tc.same, SameSchema([]byte(tc.b), []byte(tc.a)), "%s vs %s", tc.b, tc.a)
	}
}

// reordered is personSchema with its root keys in another order and other
// whitespace: the same schema.
const reordered = `{ "properties": { "tags": {"items": {"properties": {"label": {"type": "string"}}, "type": "object"}, "type": "array"},
	"address": {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"},
	"age": {"type": ["integer", "null"]}, "name": {"type": "string"} },
	"required": ["name"], "type": "object" }`

// Property: an alter of this release whose schema is the latest version's
// (byte for byte, or only in whitespace and key order) makes no version,
// even under a stale guard (a retry, or a twin racing it), while its
// other fields apply; a real change still makes the next version; any
// number of such alters keeps the older versions; an entry of an earlier
// release makes a version as it did.
func TestSchemaAlterOfTheSameSchemaKeepsTheVersion(t *testing.T) {
	s := stateWith(t, heartbeat("m1", 100))
	create := createTopic("p", "m1")
	create.Schema = json.RawMessage(personSchema)
	require.NoError(t, create.apply(s))
	v2 := schemaWith("x")
	require.NoError(t, AlterTopic{Name: "p", Schema: v2, SchemaAfterVersion: 1, SameSchemaKept: true}.apply(s))
	before := topicOf(t, s, "p").Schemas
	require.Len(t, before, 2)
	epoch := s.SchemaEpoch()

	variant := json.RawMessage(strings.Replace(reordered, `"age":`, `"x": {"type": "string"}, "age":`, 1))
	require.True(t, SameSchema(v2, variant))
	for i := range SchemaVersionsKept + 1 {
		document := []json.RawMessage{v2, variant}[i%2]
		require.NoError(t, AlterTopic{Name: "p", Schema: document, SchemaAfterVersion: 2, SameSchemaKept: true}.apply(s), "alter %d", i)
	}
	require.NoError(t, AlterTopic{Name: "p", Schema: v2, SchemaAfterVersion: 1, SameSchemaKept: true}.apply(s),
		"a twin checked against version 1 finds what it asks for")
	retention := int64(7_200_000)
	require.NoError(t, AlterTopic{Name: "p", Schema: variant, SchemaAfterVersion: 1, RetentionMs: &retention, SameSchemaKept: true}.apply(s))
	record := topicOf(t, s, "p")
	require.Equal(t, before, record.Schemas, "no version made, none dropped, the stored bytes as they were")
	require.Equal(t, retention, record.RetentionMs, "the rest of the alter applies")
	require.Equal(t, epoch, s.SchemaEpoch(), "the latest schema did not change")

	v3 := json.RawMessage(strings.Replace(string(v2), `"properties":{`, `"properties":{"y":{"type":"string"},`, 1))
	requireRejected(t, s, AlterTopic{Name: "p", Schema: v3, SchemaAfterVersion: 1, SameSchemaKept: true}, ErrGuardFailed)
	require.NoError(t, AlterTopic{Name: "p", Schema: v3, SchemaAfterVersion: 2, SameSchemaKept: true}.apply(s))
	latest, _ := topicOf(t, s, "p").LatestSchema()
	require.Equal(t, 3, latest.Version, "a real change makes the next version")
	require.Greater(t, s.SchemaEpoch(), epoch)
	requireRejected(t, s, AlterTopic{Name: "p", Schema: v2, SchemaAfterVersion: 3, SameSchemaKept: true}, ErrInvalidCommand)

	require.NoError(t, AlterTopic{Name: "p", Schema: v3, SchemaAfterVersion: 3}.apply(s))
	latest, _ = topicOf(t, s, "p").LatestSchema()
	require.Equal(t, 4, latest.Version, "an entry of an earlier release makes a version as it did")
	require.NoError(t, s.checkImage(s.image()))
}

// Property: a parent's alter to its latest schema adds no version to its
// children either, and is not refused for schema space it does not take.
func TestSchemaAlterOfTheSameSchemaOfAParent(t *testing.T) {
	document := json.RawMessage(`{"description":"` + strings.Repeat("x", SchemaBytesMax-100) + `"}`)
	withSchema := func(name string) CreateTopic {
		c := createTopic(name, "m1")
		c.Schema = document
		return c
	}
	s := stateWith(t, heartbeat("m1", 100), withSchema("p"), createTopic("c", "m1"), AttachChild{Parent: "p", Child: "c"})
	for i := 0; s.schemaBytes()+2*len(document) <= SchemaBytesTotalMax; i++ {
		require.NoError(t, withSchema(fmt.Sprintf("t%d", i)).apply(s))
	}
	requireRejected(t, s, AlterTopic{Name: "p", Schema: document, SchemaAfterVersion: 1}, ErrSchemaSpace)
	require.NoError(t, AlterTopic{Name: "p", Schema: document, SchemaAfterVersion: 1, SameSchemaKept: true}.apply(s))
	for _, name := range []string{"p", "c"} {
		require.Len(t, topicOf(t, s, name).Schemas, 1, "topic %s", name)
	}
	requireRejected(t, s, AlterTopic{Name: "c", Schema: document, SchemaAfterVersion: 1, SameSchemaKept: true}, ErrFanoutSchema)
}
