package httpapi

import (
	"bytes"
	"net/http"
	"net/url"
	"unicode/utf8"

	"narad/msg"
)

// mediaTypeNDJSON selects a batch produce (docs/api.md#batch-produce).
const mediaTypeNDJSON = "application/x-ndjson"

// decodeProduce decodes a single or batch produce; for a batch it also
// returns each record's NDJSON line, which schema violations name.
func decodeProduce(c *Codec, r *http.Request) (msg.Request, []int, *ErrorResponse) {
	topic, failed := pathTopic(r)
	if failed != nil {
		return nil, nil, failed
	}
	query, failed := parseQuery(r)
	if failed != nil {
		return nil, nil, failed
	}
	if hasMediaType(r, mediaTypeNDJSON) {
		records, lines, failed := c.decodeProduceBatch(r, query)
		if failed != nil {
			return nil, nil, failed
		}
		return msg.Produce{Topic: topic, Records: records, Batch: true}, lines, nil
	}
	record, failed := c.decodeProduceSingle(r, query)
	if failed != nil {
		return nil, nil, failed
	}
	return msg.Produce{Topic: topic, Records: []msg.ProduceRecord{record}}, nil, nil
}

// decodeProduceSingle decodes a raw-body produce (docs/api.md#produce): the
// body is the payload, key and partition come from the query.
func (c *Codec) decodeProduceSingle(r *http.Request, query url.Values) (msg.ProduceRecord, *ErrorResponse) {
	if failed := rejectDuplicates(query, "key", "partition"); failed != nil {
		return msg.ProduceRecord{}, failed
	}
	if !utf8.ValidString(query.Get("key")) {
		// A key comes back as JSON text: bytes that are not UTF-8 would
		// come back changed (U+FFFD), two keys looking the same.
		return msg.ProduceRecord{}, invalidf("key is not UTF-8 text (a key comes back as JSON text; percent-encode the UTF-8 bytes of a text key)")
	}
	partition, failed := optionalPartition(query)
	if failed != nil {
		return msg.ProduceRecord{}, failed
	}
	body, failed := readBody(r, c.config.MessageBodyBytesMax)
	if failed != nil {
		return msg.ProduceRecord{}, failed
	}
	if len(body) == 0 {
		return msg.ProduceRecord{}, failure(ErrEmptyMessage)
	}
	return msg.ProduceRecord{Key: keyBytes(query.Get("key")), Partition: partition, Payload: body}, nil
}

// keyBytes maps the empty key to no key (docs/api.md#produce).
func keyBytes(key string) []byte {
	if key == "" {
		return nil
	}
	return []byte(key)
}

// newline separates the lines of a batch produce.
var newline = []byte("\n")

// decodeProduceBatch decodes an NDJSON batch: one record per non-blank
// line, within the record, per-record and total payload bounds. The keys
// and JSON payloads of the records may be slices of the request body,
// which is theirs from then on.
func (c *Codec) decodeProduceBatch(r *http.Request, query url.Values) ([]msg.ProduceRecord, []int, *ErrorResponse) {
	if query.Has("key") || query.Has("partition") {
		return nil, nil, invalidf("key and partition go in the records of a batch produce, not in the query")
	}
	body, failed := readBody(r, c.config.BatchBodyBytesMax)
	if failed != nil {
		return nil, nil, failed
	}
	capacity := min(bytes.Count(body, newline)+1, msg.ProduceBatchRecordsMax)
	batch := batchBuilder{
		records:         make([]msg.ProduceRecord, 0, capacity),
		lines:           make([]int, 0, capacity),
		messageBytesMax: c.config.MessageBodyBytesMax,
	}
	if failed := batch.addLines(body); failed != nil {
		return nil, nil, failed
	}
	if len(batch.records) == 0 {
		return nil, nil, failure(ErrEmptyBatch)
	}
	return batch.records, batch.lines, nil
}

// batchBuilder collects the records of a batch produce.
type batchBuilder struct {
	// records decoded so far; never more than msg.ProduceBatchRecordsMax.
	records []msg.ProduceRecord
	// lines[i] is the line (from 1) of records[i].
	lines []int
	// payloadBytes is the sum of the payload sizes of records; never more
	// than msg.ProduceBatchBytesMax.
	payloadBytes int
	// messageBytesMax caps each payload; set at construction.
	messageBytesMax int64
}

// addLines adds the record of every non-blank line of body; lines are
// numbered from 1, blank ones included.
func (b *batchBuilder) addLines(body []byte) *ErrorResponse {
	rest := body
	for lineNumber := 1; ; lineNumber++ {
		line, after, found := bytes.Cut(rest, newline)
		if len(bytes.TrimSpace(line)) > 0 {
			if failed := b.addLine(line, lineNumber); failed != nil {
				return failed
			}
		}
		if !found {
			return nil
		}
		rest = after
	}
}

// addLine decodes line number lineNumber (1-based) and adds its record.
func (b *batchBuilder) addLine(line []byte, lineNumber int) *ErrorResponse {
	if len(b.records) == msg.ProduceBatchRecordsMax {
		return failure(msg.TooLarge("batch produce has more than %d records", msg.ProduceBatchRecordsMax))
	}
	record, err := decodeBatchLine(line)
	if err != nil && nestsTooDeep(line, err) {
		return invalidf("invalid ndjson line %d: %s", lineNumber, tooDeepMessage("the line"))
	}
	if err != nil {
		return invalidf("invalid ndjson line %d: %v", lineNumber, err)
	}
	if int64(len(record.Payload)) > b.messageBytesMax {
		return failure(msg.TooLarge("ndjson line %d: payload of %d bytes is over %d bytes",
			lineNumber, len(record.Payload), b.messageBytesMax))
	}
	if b.payloadBytes+len(record.Payload) > msg.ProduceBatchBytesMax {
		return failure(msg.TooLarge("batch produce payloads are over %d bytes", msg.ProduceBatchBytesMax))
	}
	b.payloadBytes += len(record.Payload)
	b.records = append(b.records, record)
	b.lines = append(b.lines, lineNumber)
	return nil
}
