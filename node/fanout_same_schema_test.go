package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Property: a topic whose schema is its parent's latest with the keys in
// another order attaches, and so does a create with that parent and that
// schema (the proposer sets meta's SameSchemaAttached): they were refused
// 409, the documents compared byte for byte, though an alter sending the
// same schema so keeps it.
func TestAttachTakesTheParentsSchemaInAnotherKeyOrder(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) {
		r.RetentionMs = 24 * 3_600_000
		r.Schema = []byte(`{"type":"object","properties":{"id":{"type":"integer"}}}`)
	})
	reordered := []byte(`{"properties":{"id":{"type":"integer"}},"type":"object"}`)
	h.createTopic("audit", func(r *msg.CreateTopic) { r.Schema = reordered })
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.createTopic("billing", func(r *msg.CreateTopic) { r.Schema, r.Parent = reordered, "orders" })
	h.createTopic("other", func(r *msg.CreateTopic) { r.Schema = []byte(`{"type":"object","properties":{"id":{"type":"string"}}}`) })
	reply := h.do(msg.AttachChild{Parent: "orders", Child: "other"})
	require.Error(t, reply.Err, "a child of another schema is still refused")
	require.Equal(t, msg.CodeConflict, msg.CodeOf(reply.Err))
}
