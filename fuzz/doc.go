// Package fuzz holds the Go native fuzz targets of Narad's decoders and of
// partition log recovery. It contains only tests: `go test ./fuzz` runs
// every target over its seed corpus (f.Add) as a plain test, and
// `go test ./fuzz -fuzz=FuzzRecovery` explores further.
//
// Targets and the property each checks:
//
//   - FuzzDecodeFrame: any bytes and limit; never panics, and a frame that
//     decodes is canonical (re-encodes to the same bytes) and within limit.
//   - FuzzDecodeRecord: any bytes; never panics, and an envelope that
//     decodes re-encodes to exactly the input (the decoder is strict).
//   - FuzzRecovery: a log of a few records on the in-memory file system,
//     damaged by flips and truncations at fuzzed positions of its segment
//     and hwm files, then reopened. Recovery must not panic; every record
//     it serves is the one appended at that offset; every offset it cannot
//     serve is one it reported corrupt; and a second recovery agrees with
//     the first.
//   - FuzzDecodeEnvelope: any bytes; the peer codec never panics, and an
//     envelope that decodes re-encodes to bytes that decode to the same
//     value.
//   - FuzzReadFrame: any byte stream, read whole and in short reads; frames
//     over the bound are refused before anything is allocated.
//   - FuzzReceiptHandle: any key, topic and fields; a minted handle begins
//     with "partition:offset:", parses and verifies back to its fields,
//     and verifies to no reservation under another topic or key; any text
//     parses without panicking, has one spelling when it parses, and
//     verifies only if it was minted with the key and topic.
//   - FuzzCreateTopicSchema: any bytes as the JSON Schema of a topic
//     created through the real HTTP handler and node (one node per fuzzing
//     process, on loopback). The answer is 201 or 400 (413 over the size
//     bound), never a crash or a 5xx; a created topic reads its schema
//     back as the same JSON value and is deleted again.
//   - FuzzServeRequests: any bytes as what a client sends on one
//     connection to the HTTP connection server (httpserve), in one read or
//     in short reads. It never panics; what it writes back is a sequence
//     of whole HTTP/1.1 replies, the handler's own (which echo the request
//     they saw) followed by at most one refusal (4xx/5xx, Connection:
//     close) as the last.
//
// The package imports the core and is never imported by it.
package fuzz
