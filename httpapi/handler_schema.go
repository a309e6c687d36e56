package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

	"narad/msg"
)

// changeTopic compiles the schema of a create or an alter (off the node
// loop) before the node sees the request.
func (h *apiHandler) changeTopic(ctx context.Context, req msg.Request) Response {
	var schema []byte
	switch r := req.(type) {
	case msg.CreateTopic:
		schema = r.Schema
	case msg.AlterTopic:
		schema = r.Schema
	}
	if schema != nil {
		if failed := h.schemas.checkDocument(ctx, schema); failed != nil {
			return failed.Response
		}
	}
	return Encode(req, h.backend.Do(ctx, req))
}

// produce validates the records against the latest schema version the
// node published for the topic and submits them, naming that version. If
// the node applied a newer one meanwhile, it refuses, and the records are
// validated again with the newer one (at most schemaRevalidationsMax
// times), so no record is ever accepted on the strength of a version
// older than the one applied when the node takes it.
func (h *apiHandler) produce(ctx context.Context, req msg.Produce, lines []int) Response {
	for attempt := 0; ; attempt++ {
		req.SchemaID = 0
		if versions := h.backend.TopicSchemas(req.Topic); len(versions) > 0 {
			latest := versions[len(versions)-1]
			if failed := h.schemas.validate(ctx, req.Topic, latest, req.Records, lines); failed != nil {
				return failed.Response
			}
			req.SchemaID = latest.ID
		}
		var request msg.Request = req // boxed once for both calls
		reply := h.backend.Do(ctx, request)
		if reply.Err != msg.ErrSchemaChanged || attempt == schemaRevalidationsMax {
			return Encode(request, nameTheLine(reply, lines))
		}
	}
}

// nameTheLine turns the node's "record N: " refusal of a batch record
// into "record N (ndjson line L): ", so a 400 names the line
// (docs/api.md#batch-produce); other replies pass unchanged.
func nameTheLine(reply msg.Reply, lines []int) msg.Reply {
	var refusal *msg.Error
	if lines == nil || !errors.As(reply.Err, &refusal) || refusal.Code != msg.CodeInvalid {
		return reply
	}
	index, rest, ok := msg.ParseBatchRecordPrefix(refusal.Message)
	if !ok || index >= len(lines) {
		return reply
	}
	reply.Err = msg.Invalid("record %d (ndjson line %d): %s", index+1, lines[index], rest)
	return reply
}

// schemaBody is the answer of GET /v1/topics/{topic}/schema
// (docs/api.md#topic-schemas).
type schemaBody struct {
	Version int             `json:"version"`
	Schema  jsonRawDocument `json:"schema"`
}

// jsonRawDocument is a stored schema, sent as the JSON it is.
type jsonRawDocument []byte

func (d jsonRawDocument) MarshalJSON() ([]byte, error) { return d, nil }

// topicSchema reads a topic's schema back: the latest version, or the one
// ?version names. A topic this node does not list is looked up through
// the node first (it may have been created through another node a moment
// ago), which also answers 404 for a topic that does not exist.
func (h *apiHandler) topicSchema(r *http.Request) Response {
	name, failed := pathTopic(r)
	if failed == nil {
		var version int
		version, failed = schemaVersionParam(r)
		if failed == nil {
			return h.schemaVersion(r.Context(), name, version)
		}
	}
	return failed.Response
}

func (h *apiHandler) schemaVersion(ctx context.Context, name string, version int) Response {
	versions := h.backend.TopicSchemas(name)
	if len(versions) == 0 {
		reply := h.backend.Do(ctx, msg.GetTopic{Name: name, Partition: 0})
		if reply.Err != nil {
			return errorResponse(reply.Err)
		}
		versions = h.backend.TopicSchemas(name)
	}
	if len(versions) == 0 {
		return errorResponse(msg.NotFound("topic %s has no schema", name))
	}
	chosen := versions[len(versions)-1]
	if version != 0 {
		found := false
		for _, kept := range versions {
			if kept.Version == version {
				chosen, found = kept, true
			}
		}
		if !found {
			return errorResponse(msg.NotFound("topic %s has no schema version %d (kept: %d to %d)",
				name, version, versions[0].Version, versions[len(versions)-1].Version))
		}
	}
	return jsonResponse(http.StatusOK, schemaBody{Version: chosen.Version, Schema: jsonRawDocument(chosen.Document)})
}

// schemaVersionParam reads the optional ?version=N (N from 1 to
// math.MaxInt; 0 when absent: the latest).
func schemaVersionParam(r *http.Request) (int, *ErrorResponse) {
	query, failed := parseQuery(r)
	if failed != nil {
		return 0, failed
	}
	if !query.Has("version") {
		return 0, nil
	}
	version, err := strconv.Atoi(query.Get("version"))
	if err != nil || version < 1 {
		return 0, invalidf("%s", outOfRange("version "+quoteClipped(query.Get("version")), 1, math.MaxInt))
	}
	return version, nil
}
