package node

import (
	"errors"
	"strings"

	"narad/meta"
	"narad/msg"
)

// latestSchemaVersion is the version of the topic's latest schema, 0 for
// none.
func latestSchemaVersion(record meta.TopicRecord) int {
	latest, _ := record.LatestSchema()
	return latest.Version
}

// CheckSchemaDocument checks a schema's size (413) and shape (400: one
// JSON object or boolean, nested at most meta.SchemaNestingMax deep); an
// empty one is no schema. It does not compile the schema.
func CheckSchemaDocument(document []byte) *msg.Error {
	if len(document) == 0 {
		return nil
	}
	if len(document) > msg.SchemaBytesMax {
		return msg.TooLarge("schema is %d bytes, at most %d", len(document), msg.SchemaBytesMax)
	}
	if err := meta.CheckSchemaDocument(document); err != nil {
		return msg.Invalid("invalid schema: %s", strings.TrimPrefix(err.Error(), meta.ErrInvalidCommand.Error()+": "))
	}
	return nil
}

// checkSchemaChange checks a new schema version against the topic's latest
// before it is proposed; the metastore checks again when it applies.
func (n *Node) checkSchemaChange(r msg.AlterTopic) error {
	if len(r.Schema) == 0 {
		return nil
	}
	if err := CheckSchemaDocument(r.Schema); err != nil {
		return err
	}
	record, _ := n.meta.State().Topic(r.Name)
	if record.Parent != "" { // the metastore refuses it too; said first, before a compatibility complaint
		return msg.Conflict("fan-out schema conflict: topic %q is a child of %q, which manages its schema", record.Name, record.Parent)
	}
	latest, found := record.LatestSchema()
	if !found {
		return nil
	}
	var refusal *meta.SchemaEvolutionError
	if err := meta.CheckSchemaEvolution(latest.Document, r.Schema); errors.As(err, &refusal) {
		return msg.Invalid("%s", refusal.Error())
	} else if err != nil {
		return msg.Invalid("invalid schema: %v", err)
	}
	return nil
}

// checkValidatedSchema refuses a client's produce whose records were not
// validated against the topic's latest applied schema version.
func checkValidatedSchema(t *topic, r msg.Produce) error {
	if r.SchemaID == t.schemaID {
		return nil
	}
	return msg.ErrSchemaChanged
}

// checkPlacedPart refuses a part a node placed (a forward, or a join's
// own part) for another topic of the name than t, one deleted and
// created again since; and a client's part validated against another
// schema version than t's latest (a node behind on the schema, or on a
// re-creation with one). A part without an identity (every part this
// release places carries one) is taken as before. Copies of a fan-out
// link (FanoutEpoch) and dead letters (Origin) are not validated: their
// writers decide what enters the topic.
func checkPlacedPart(t *topic, r msg.Produce) error {
	placedFor := meta.TopicIdentity{Incarnation: r.TopicIncarnation, CreatedAtMs: r.TopicCreatedAtMs}
	if placedFor == (meta.TopicIdentity{}) {
		return nil
	}
	if placedFor != t.identity {
		return topicRecreated(t.info.Name, "produce")
	}
	if r.SchemaID == t.schemaID || r.FanoutEpoch != 0 || !hasClientRecords(r) {
		return nil
	}
	return msg.ErrSchemaChanged
}

// hasClientRecords reports whether a part carries a record a client
// produced (one that is not a dead letter).
func hasClientRecords(r msg.Produce) bool {
	for i := range r.Records {
		if r.Records[i].Origin == nil {
			return true
		}
	}
	return false
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
func (n *Node) TopicSchemas() map[string][]msg.SchemaVersion {
	schemas := map[string][]msg.SchemaVersion{}
	for _, record := range n.meta.State().Topics() {
		if len(record.Schemas) > 0 {
			schemas[record.Name] = schemaVersions(record.Schemas)
		}
	}
	return schemas
}

// schemaVersions converts the metastore's schema versions to the
// message vocabulary's, sharing the documents.
func schemaVersions(versions []meta.SchemaVersion) []msg.SchemaVersion {
	converted := make([]msg.SchemaVersion, len(versions))
	for i, version := range versions {
		converted[i] = msg.SchemaVersion{Version: version.Version, ID: version.ID, Document: version.Document}
	}
	return converted
}
