// Package httpapi translates between HTTP and the node's requests and
// replies: it owns the /v1 routes (docs/api.md#routes), their query and body
// syntax, the JSON shapes of replies, the one table from node error codes to
// HTTP statuses, the HTTP server middleware and the HTTP metrics.
//
// It is split so that the simulator can use the translation without a
// server:
//
//   - Codec.Decode turns an *http.Request into a msg.Request (or an
//     ErrorResponse). It checks syntax and bounds only: JSON is strict
//     (unknown fields and trailing values are rejected), bodies are capped,
//     query parameters are parsed and range-checked. Semantics (does the
//     topic exist, is the partition in range, is a topic limit acceptable)
//     belong to the node.
//   - Encode turns a msg.Request and its msg.Reply into a Response
//     (status, headers, body). It never fails: a reply that breaks the
//     contract of msg.Reply is a bug and panics through assert.
//   - NewHandler is the production server: the HTTP metrics, then the
//     budget of request body bytes in flight (bodybudget.go), then panic
//     recovery, all three in one pass that matches the route once and
//     tracks a request in one allocation (front.go), then authentication (WithSecurity: HTTP Basic checked by
//     package auth; /healthz, /readyz and /metrics exempt), then Decode,
//     authorization by route at this node (grants, topic owner, admin),
//     Backend.Do, Encode and Write. Consume, replay and schema replies
//     hold their bytes from the reply budget (replybudget.go: a bound of
//     the encoding is taken before it runs), and /metrics renders at most
//     scrapesMax scrapes at once, each whole into a buffer held from the
//     reply budget while it is written (scrapelimit.go). The users routes are served by the
//     handler itself: it validates, hashes passwords with bcrypt and hands
//     user changes to a UserChanger; answers and audit lines
//     (component=audit) never carry a password or a hash.
//
// JSON Schemas of topics (docs/api.md#topic-schemas) are the one piece of
// semantics here, because compiling must stay off the node loop. The
// handler compiles the schema of a create or an alter before the node
// sees it (jsonschema/v6, bounded: SchemaCompileTimeout per compile,
// schemaCompilesMax at once, a loader that refuses every URL and file).
// For a produce it asks the Backend for the topic's latest applied
// version, validates every record with the compiled version (cached by
// its id, at most schemaCacheEntriesMax, until the host tells it the
// topic was dropped (ForgetTopic); the work of validating a
// request's records is bounded first, schemawork.go), and submits the request naming
// that version (msg.Produce.SchemaID); if the node answers
// msg.ErrSchemaChanged, a newer version applied meanwhile, and the
// records are validated again with it (at most schemaRevalidationsMax
// times, then 503). GET /v1/topics/{topic}/schema is answered from the
// same published versions.
//
// Invariants:
//   - Every error body is {"error":"<message>"} followed by a newline with
//     Content-Type application/json, and its status comes from
//     errorRegistry, except the answers http.ServeMux writes itself
//     (404 page not found, 405, path-cleaning redirects), which are kept
//     byte for byte.
//   - Every 503 carries Retry-After (RetryAfterSeconds): the client may
//     retry, and for an ack it should, with the same receipt handle. An
//     ack of a record already acknowledged answers 204 again (the node
//     decides; see the ack table in the repository's README), so a retry
//     tells the client whether its first attempt landed.
//   - Every list in a reply body is a JSON array, never null.
//   - Decoding reads at most the configured body caps plus one byte, into
//     a buffer that grows with the bytes that arrived (at most twice
//     them, or readStartBytes, 4 KiB, before the first arrived): an
//     announced Content-Length reserves nothing more. The bytes read
//     count against CodecConfig.BodyBytesInFlightMax until the answer; a
//     read past it answers 503.
//   - An encoded consume or replay reply counts against
//     CodecConfig.ReplyBytesInFlightMax from its encoding until it is
//     written; past it the request answers 503 and a consume's records go
//     back to the node (Backend.HandBack). A reply larger than the cap is
//     sent when no other is held.
//   - A rendered /metrics scrape counts against the same cap while it is
//     written, the scrapes together within half of it (one alone whatever
//     its size), at most scrapesPerClientMax under way per client address;
//     past any of these, or scrapesMax rendering, it answers 503. Its
//     slot is held while rendering only: a client that does not read
//     holds bytes of the budget, never a slot.
//   - Strict input: a JSON body with a key given twice in one object, or a
//     query parameter given twice, is 400 on every route; an error body
//     names no file on disk and no socket address.
//
// Inputs: HTTP requests, node replies, the Backend (the node driver).
// Outputs: node requests, HTTP responses, Prometheus series narad_http_*
// (docs/operations.md#metrics), narad_produce_rejections_total{topic,reason}
// and narad_schema_* (compiles by result, compiles running, cache entries).
package httpapi
