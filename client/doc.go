// Package client is a Go client for the broker's /v1 HTTP API (docs/api.md,
// with the batch and schema extensions of docs/api.md#extensions; TopicSchema
// reads a topic's JSON Schema back).
//
// It owns the wire encoding of requests and the decoding of replies, nothing
// else: no background work, no state beyond its configuration, and no
// retries except where the caller asks for them (AckRetrying, which sends
// an ack again with the same receipt handle after a 503 or a broken
// connection; acks are idempotent, so a retry of one that landed answers
// 204).
// A Client is safe for concurrent use by several goroutines because it only
// reads its configuration after New returns.
//
// Inputs: a base URL (a missing scheme means http://), optional Basic auth
// credentials, an *http.Client and a per-request timeout (default 60 s; a
// long-poll consume gets its wait added on top).
//
// Outputs: typed values that mirror the JSON of docs/api.md field for field,
// and errors. A reply with a status the route does not expect becomes *Error
// carrying the status and the server's message from {"error": "..."} (a
// text/plain body is tolerated). Transport failures are returned wrapped, as
// they come from net/http. A 204 from consume or replay is not an error: the
// message is nil.
//
// Invariants: every method sends exactly one HTTP request, except AllTopics,
// which follows keyset pagination and stops with an error if the server's page
// token does not advance, and AckRetrying, which sends at most its policy's
// Attempts; every reply body read is bounded by replyBytesMax.
package client
