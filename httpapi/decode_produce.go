package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"narad/node"
)

// mediaTypeNDJSON selects a batch produce (API.md item 9).
const mediaTypeNDJSON = "application/x-ndjson"

func decodeProduce(c *Codec, r *http.Request) (node.Request, *ErrorResponse) {
	topic, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	query, failed := parseQuery(r)
	if failed != nil {
		return nil, failed
	}
	if hasMediaType(r, mediaTypeNDJSON) {
		records, failed := c.decodeProduceBatch(r, query)
		if failed != nil {
			return nil, failed
		}
		return node.Produce{Topic: topic, Records: records, Batch: true}, nil
	}
	record, failed := c.decodeProduceSingle(r, query)
	if failed != nil {
		return nil, failed
	}
	return node.Produce{Topic: topic, Records: []node.ProduceRecord{record}}, nil
}

// decodeProduceSingle decodes a raw-body produce (API.md §1.11): the body
// is the payload, key and partition come from the query.
func (c *Codec) decodeProduceSingle(r *http.Request, query url.Values) (node.ProduceRecord, *ErrorResponse) {
	if failed := rejectDuplicates(query, "key", "partition"); failed != nil {
		return node.ProduceRecord{}, failed
	}
	partition, failed := optionalPartition(query)
	if failed != nil {
		return node.ProduceRecord{}, failed
	}
	body, failed := readBody(r, c.config.MessageBodyBytesMax)
	if failed != nil {
		return node.ProduceRecord{}, failed
	}
	if len(body) == 0 {
		return node.ProduceRecord{}, failure(ErrEmptyMessage)
	}
	return node.ProduceRecord{Key: keyBytes(query.Get("key")), Partition: partition, Payload: body}, nil
}

// keyBytes maps the empty key to no key (API.md item 2).
func keyBytes(key string) []byte {
	if key == "" {
		return nil
	}
	return []byte(key)
}

// decodeProduceBatch decodes an NDJSON batch: one record per non-blank
// line, within the record, per-record and total payload bounds.
func (c *Codec) decodeProduceBatch(r *http.Request, query url.Values) ([]node.ProduceRecord, *ErrorResponse) {
	if query.Has("key") || query.Has("partition") {
		return nil, invalidf("key and partition go in the records of a batch produce, not in the query")
	}
	body, failed := readBody(r, c.config.BatchBodyBytesMax)
	if failed != nil {
		return nil, failed
	}
	batch := batchBuilder{messageBytesMax: c.config.MessageBodyBytesMax}
	for index, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if failed := batch.addLine(line, index+1); failed != nil {
			return nil, failed
		}
	}
	if len(batch.records) == 0 {
		return nil, failure(ErrEmptyBatch)
	}
	return batch.records, nil
}

// batchBuilder collects the records of a batch produce.
type batchBuilder struct {
	// records decoded so far; never more than node.ProduceBatchRecordsMax.
	records []node.ProduceRecord
	// payloadBytes is the sum of the payload sizes of records; never more
	// than node.ProduceBatchBytesMax.
	payloadBytes int
	// messageBytesMax caps each payload; set at construction.
	messageBytesMax int64
}

// addLine decodes line number lineNumber (1-based) and adds its record.
func (b *batchBuilder) addLine(line []byte, lineNumber int) *ErrorResponse {
	if len(b.records) == node.ProduceBatchRecordsMax {
		return failure(node.TooLarge("batch produce has more than %d records", node.ProduceBatchRecordsMax))
	}
	record, err := decodeBatchLine(line)
	if err != nil {
		return invalidf("invalid ndjson line %d: %v", lineNumber, err)
	}
	if int64(len(record.Payload)) > b.messageBytesMax {
		return failure(node.TooLarge("ndjson line %d: payload of %d bytes is over %d bytes",
			lineNumber, len(record.Payload), b.messageBytesMax))
	}
	if b.payloadBytes+len(record.Payload) > node.ProduceBatchBytesMax {
		return failure(node.TooLarge("batch produce payloads are over %d bytes", node.ProduceBatchBytesMax))
	}
	b.payloadBytes += len(record.Payload)
	b.records = append(b.records, record)
	return nil
}

// batchLine is one line of a batch produce.
type batchLine struct {
	Key           string          `json:"key"`
	Partition     *int            `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	PayloadBase64 *string         `json:"payload_base64"`
}

// Errors of one batch line; the caller adds the line number.
var (
	errPayloadChoice    = errors.New("want exactly one of payload and payload_base64")
	errPayloadEmpty     = errors.New("payload is empty")
	errPartitionInvalid = errors.New("partition must be >= 0")
)

// decodeBatchLine decodes one NDJSON line into a record. A JSON payload is
// stored as its raw JSON bytes, exactly as they appear in the line.
func decodeBatchLine(text []byte) (node.ProduceRecord, error) {
	var line batchLine
	if err := decodeStrictJSON(text, &line); err != nil {
		return node.ProduceRecord{}, err
	}
	payload, err := linePayload(line)
	if err != nil {
		return node.ProduceRecord{}, err
	}
	partition := node.PartitionNone
	if line.Partition != nil {
		if *line.Partition < 0 {
			return node.ProduceRecord{}, errPartitionInvalid
		}
		partition = *line.Partition
	}
	return node.ProduceRecord{Key: keyBytes(line.Key), Partition: partition, Payload: payload}, nil
}

// linePayload returns the payload bytes of a line: the raw JSON of
// payload, or the decoded payload_base64.
func linePayload(line batchLine) ([]byte, error) {
	if (line.Payload != nil) == (line.PayloadBase64 != nil) {
		return nil, errPayloadChoice
	}
	payload := []byte(line.Payload)
	if line.PayloadBase64 != nil {
		decoded, err := base64.StdEncoding.DecodeString(*line.PayloadBase64)
		if err != nil {
			return nil, errors.New("invalid payload_base64: " + err.Error())
		}
		payload = decoded
	}
	if len(payload) == 0 {
		return nil, errPayloadEmpty
	}
	return payload, nil
}
