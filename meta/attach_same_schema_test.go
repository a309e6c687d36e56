package meta

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// personReordered is personSchema with the keys of every object in
// another order and whitespace between them: the same schema (SameSchema),
// other bytes. The stored bytes keep a sender's key order.
const personReordered = `{ "properties": {
	"tags": {"items": {"properties": {"label": {"type": "string"}}, "type": "object"}, "type": "array"},
	"address": {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"},
	"age": {"type": ["integer", "null"]}, "name": {"type": "string"}},
  "required": ["name"], "type": "object" }`

// Property: an attach of this release (SameSchemaAttached) takes a child
// whose schema is its parent's latest once parsed (key order and
// whitespace aside), as an alter keeps such a schema (SameSchemaKept);
// it was refused, the documents compared byte for byte. A schema that
// differs is still refused, and an entry of an earlier release applies as
// it did on every replica. The child keeps its own versions and follows
// its parent's later ones.
func TestAttachTakesTheSameSchemaInAnotherKeyOrder(t *testing.T) {
	require.True(t, SameSchema([]byte(personSchema), []byte(personReordered)))
	require.NotEqual(t, personSchema, personReordered)
	withSchema := func(name, document string) CreateTopic {
		c := createTopic(name, "m1")
		c.Schema = json.RawMessage(document)
		return c
	}
	s := stateWith(t, heartbeat("m1", 100), withSchema("p", personSchema), withSchema("reordered", personReordered),
		withSchema("other", string(schemaWith("x"))))

	requireRejected(t, s, AttachChild{Parent: "p", Child: "reordered"}, ErrFanoutSchema)
	requireRejected(t, s, AttachChild{Parent: "p", Child: "other", SameSchemaAttached: true}, ErrFanoutSchema)
	require.NoError(t, AttachChild{Parent: "p", Child: "reordered", SameSchemaAttached: true}.apply(s))
	own := topicOf(t, s, "reordered").Schemas
	require.Len(t, own, 1)
	require.Equal(t, personReordered, string(own[0].Document), "the child keeps its own version")

	require.NoError(t, AlterTopic{Name: "p", Schema: schemaWith("y"), SchemaAfterVersion: 1}.apply(s))
	latest, _ := topicOf(t, s, "reordered").LatestSchema()
	require.Equal(t, string(schemaWith("y")), string(latest.Document), "the child follows its parent's next version")

	require.NoError(t, withSchema("q", personSchema).apply(s))
	created := withSchema("made", personReordered)
	created.Parent = "q"
	requireRejected(t, s, created, ErrFanoutSchema)
	created.SameSchemaAttached = true
	require.NoError(t, created.apply(s), "a create with a parent compares as an attach does")
	require.Equal(t, "q", topicOf(t, s, "made").Parent)
	require.NoError(t, s.checkFanoutLinks())
	require.NoError(t, s.checkImage(s.image()))
}
