package httpserve

import "time"

// The bounds of one connection, in one place.
const (
	// headerBytesMax bounds a request's line plus its header fields, and
	// so the input buffer of a connection; past it the request is answered
	// 431.
	headerBytesMax = 64 << 10
	// headerFieldsMax bounds the field lines of one request; past it the
	// request is answered 431.
	headerFieldsMax = 512
	// headerFieldsKeptMax is how many fields' worth of header map and
	// value slice an idle connection keeps; a larger request's are
	// dropped when it ends.
	headerFieldsKeptMax = 64
	// inputBufferBytes is a connection's first input buffer; it grows up
	// to headerBytesMax only for a large header.
	inputBufferBytes = 4 << 10
	// responseBufferBytesMax is the largest reply body kept whole and sent
	// in one write with a Content-Length; a larger one streams.
	responseBufferBytesMax = 32 << 10
	// outputBufferKeptBytes is how much reply body buffer and output
	// buffer an idle connection keeps each; larger ones, grown by a large
	// reply, are dropped when it ends.
	outputBufferKeptBytes = responseBufferBytesMax / 2
	// chunkLineBytesMax bounds a chunk-size line and each trailer line of
	// a chunked request body; trailerBytesMax bounds the trailer in all.
	chunkLineBytesMax = 4 << 10
	trailerBytesMax   = 16 << 10
	// chunkFramingPerChunk and chunkFramingPerDataByte are the framing a
	// chunk of a chunked request body carries for free: its size line
	// with any extension and the line ends around its data, each line
	// counted with a CR LF. chunkOverheadMax bounds the framing beyond
	// that, summed over the chunks and never below zero (a chunk's data
	// pays for framing read before it, never for framing to come); past
	// it the body's read fails (ReasonChunkOverhead). Without it a client
	// could send one byte per chunk with chunkLineBytesMax of extension
	// and make the server parse gigabytes for a body whose data is under
	// every cap. net/http (its fix for CVE-2023-39326) charges a chunk its
	// size line and 2 bytes, less 16 and 2 per data byte, and refuses past
	// 16 KiB; this charges 2 bytes more (both line ends) against 32, so
	// every body net/http accepts passes. 32 bytes pass a size line of 8
	// hex digits with a short extension (";name=value") and its 4 bytes of
	// line ends; a client streaming one byte per chunk spends 5. Reading a
	// body so costs at most 35 bytes per data byte, plus chunkOverheadMax
	// and one line.
	chunkFramingPerChunk    = 32
	chunkFramingPerDataByte = 2
	chunkOverheadMax        = 16 << 10
	// unreadBodyDrainMax is how much of a body the handler did not read
	// the server reads and discards to keep the connection, counted as it
	// arrives: a chunked body's framing counts with its data. Past it
	// the connection is closed after the reply.
	unreadBodyDrainMax = 256 << 10
	// acceptRetryFirst and acceptRetryMax are the pauses after a failed
	// Accept (descriptors exhausted), doubling from the first to the max.
	acceptRetryFirst = 5 * time.Millisecond
	acceptRetryMax   = time.Second
	// refusalWriteTimeout bounds the write of a refusal when no write
	// timeout is configured.
	refusalWriteTimeout = time.Second
	// lingerTimeout and lingerBytesMax bound how long, and how much input,
	// a connection closing with input unread discards after its FIN.
	lingerTimeout  = 500 * time.Millisecond
	lingerBytesMax = 1 << 20
	// shutdownPollInterval is how often Shutdown looks for connections
	// that became idle and whether all have ended.
	shutdownPollInterval = 10 * time.Millisecond
)

// aLongTimeAgo is a deadline in the past: it wakes a blocked read at once.
var aLongTimeAgo = time.Unix(1, 0)
