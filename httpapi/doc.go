// Package httpapi translates between HTTP and the node's requests and
// replies: it owns the /v1 routes of API.md, their query and body syntax,
// the JSON shapes of replies, the one table from node error codes to HTTP
// statuses, the HTTP server middleware and the HTTP metrics.
//
// It is split so that the simulator can use the translation without a
// server:
//
//   - Codec.Decode turns an *http.Request into a node.Request (or an
//     ErrorResponse). It checks syntax and bounds only: JSON is strict
//     (unknown fields and trailing values are rejected), bodies are capped,
//     query parameters are parsed and range-checked. Semantics (does the
//     topic exist, is the partition in range, is a topic limit acceptable)
//     belong to the node.
//   - Encode turns a node.Request and its node.Reply into a Response
//     (status, headers, body). It never fails: a reply that breaks the
//     contract of node/reply.go is a bug and panics through assert.
//   - NewHandler is the production server: metrics middleware, then panic
//     recovery, then Decode, Backend.Do, Encode and Write.
//
// Invariants:
//   - Every error body is {"error":"<message>"} followed by a newline with
//     Content-Type application/json, and its status comes from
//     errorRegistry, except the answers http.ServeMux writes itself
//     (404 page not found, 405, path-cleaning redirects), which are kept
//     byte for byte.
//   - Every list in a reply body is a JSON array, never null.
//   - Decoding reads at most the configured body caps plus one byte.
//
// Inputs: HTTP requests, node replies, the Backend (the node driver).
// Outputs: node requests, HTTP responses, Prometheus series
// narad_http_* (API.md §8).
package httpapi
