package node

import (
	"errors"
	"strings"

	"narad/meta"
)

// latestSchemaVersion is the version of the topic's latest schema, 0 for
// none.
func latestSchemaVersion(record meta.TopicRecord) int {
	latest, _ := record.LatestSchema()
	return latest.Version
}

// SchemaVersion is one version of a topic's JSON Schema, as the metastore
// keeps it.
type SchemaVersion = meta.SchemaVersion

// CheckSchemaDocument checks a schema's size (413) and shape (400: one
// JSON object or boolean, nested at most meta.SchemaNestingMax deep); an
// empty one is no schema. It does not compile the schema.
func CheckSchemaDocument(document []byte) *Error {
	if len(document) == 0 {
		return nil
	}
	if len(document) > SchemaBytesMax {
		return TooLarge("schema is %d bytes, at most %d", len(document), SchemaBytesMax)
	}
	if err := meta.CheckSchemaDocument(document); err != nil {
		return Invalid("invalid schema: %s", strings.TrimPrefix(err.Error(), meta.ErrInvalidCommand.Error()+": "))
	}
	return nil
}

// checkSchemaChange checks a new schema version against the topic's latest
// before it is proposed; the metastore checks again when it applies.
func (n *Node) checkSchemaChange(r AlterTopic) error {
	if len(r.Schema) == 0 {
		return nil
	}
	if err := CheckSchemaDocument(r.Schema); err != nil {
		return err
	}
	record, _ := n.meta.State().Topic(r.Name)
	latest, found := record.LatestSchema()
	if !found {
		return nil
	}
	var refusal *meta.SchemaEvolutionError
	if err := meta.CheckSchemaEvolution(latest.Document, r.Schema); errors.As(err, &refusal) {
		return Invalid("%s", refusal.Error())
	} else if err != nil {
		return Invalid("invalid schema: %v", err)
	}
	return nil
}

// ErrSchemaChanged refuses a client's produce whose records were validated
// against a schema version that is not the topic's latest applied one
// (Produce.SchemaID). It is retryable; the HTTP layer recognizes this very
// value, validates again with the latest version and resubmits.
var ErrSchemaChanged = Unavailable("the topic's schema changed while the records were validated; retry")

// checkValidatedSchema refuses a client's produce whose records were not
// validated against the topic's latest applied schema version.
func checkValidatedSchema(t *topic, r Produce) error {
	if r.SchemaID == t.schemaID {
		return nil
	}
	return ErrSchemaChanged
}

// SchemaEpoch changes whenever the latest schema of a topic may have
// changed in the applied metadata (see meta.State.SchemaEpoch). A driver
// compares it after each persist to know when to rebuild its view of the
// schemas. Call it on the loop.
func (n *Node) SchemaEpoch() uint64 { return n.meta.State().SchemaEpoch() }

// TopicSchemas returns the kept schema versions of every topic that has
// one, oldest first, by topic name: the view a driver publishes to the
// HTTP layer. The documents are shared with the metastore and must not be
// changed. Call it on the loop.
func (n *Node) TopicSchemas() map[string][]SchemaVersion {
	schemas := map[string][]SchemaVersion{}
	for _, record := range n.meta.State().Topics() {
		if len(record.Schemas) > 0 {
			schemas[record.Name] = record.Schemas
		}
	}
	return schemas
}
