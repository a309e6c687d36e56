package msg

// SchemaVersion is one version of a topic's JSON Schema, as the metastore
// keeps it; the node hands the versions to its driver, which validates the
// records of a produce against the latest before it submits them.
type SchemaVersion struct {
	// Version counts the topic's schemas from 1; each change adds one.
	Version int
	// ID is unique over the life of the cluster: a topic deleted and
	// re-created under its name never reuses one. Produce.SchemaID names
	// the version the records were validated against by its ID.
	ID uint64
	// Document is the schema as JSON. It is shared and never changed.
	Document []byte
}

// ErrSchemaChanged refuses a client's produce whose records were validated
// against a schema version that is not the topic's latest applied one
// (Produce.SchemaID). It is retryable; the HTTP layer recognizes this very
// value, validates again with the latest version and resubmits.
var ErrSchemaChanged = Unavailable("the topic's schema changed while the records were validated; retry")
