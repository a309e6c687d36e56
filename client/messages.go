package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const (
	// batchRecordsMax and batchPayloadBytesMax are the server's caps on one
	// batch produce (docs/api.md#batch-produce): records, and their payload
	// bytes (as stored, before any base64); batchBodyBytesMax is its
	// default cap on the raw NDJSON body (docs/operations.md#limits), which
	// base64 payloads reach at 4/3 their size. The client refuses larger
	// batches up front.
	batchRecordsMax      = 1000
	batchPayloadBytesMax = 8 << 20
	batchBodyBytesMax    = 16 << 20
	// consumeBatchMax is the largest max of a batch consume
	// (docs/api.md#batch-consume).
	consumeBatchMax = 100
	// ackBatchHandlesMax is the server's cap on the handles of one batch
	// ack (docs/api.md#batch-ack: 413 above it, and nothing is acked).
	ackBatchHandlesMax = 1_000
)

// Sentinel errors for requests the client refuses to send.
var (
	ErrBatchEmpty    = errors.New("batch has no records")
	ErrBatchTooLarge = errors.New("batch exceeds the server's limits")
	ErrConsumeMax    = errors.New("consume max out of range")
)

// ProduceOptions are the optional query parameters of a produce.
type ProduceOptions struct {
	// Key is hashed to choose the partition; "" produces a keyless record.
	Key string
	// Partition pins the record to a partition when non-nil.
	Partition *int
}

// Produce sends one record (POST /v1/topics/{t}/produce, 202). The
// placement is {-1, -1} when the server's 202 body is empty (the reference
// server answers so).
func (c *Client) Produce(ctx context.Context, topic string, body []byte, options ProduceOptions) (Placement, error) {
	query := url.Values{}
	if options.Key != "" {
		query.Set("key", options.Key)
	}
	if options.Partition != nil {
		query.Set("partition", strconv.Itoa(*options.Partition))
	}
	req := request{method: http.MethodPost, path: topicPath(topic, "/produce"), query: query,
		body: body, contentType: "application/octet-stream"}
	_, reply, err := c.send(ctx, req, http.StatusAccepted)
	if err != nil {
		return Placement{}, err
	}
	placement := Placement{Partition: -1, Offset: -1}
	if len(bytes.TrimSpace(reply)) == 0 {
		return placement, nil
	}
	return placement, decodeReply(reply, &placement)
}

// BatchRecord is one line of a batch produce (docs/api.md#batch-produce).
// Exactly one of Payload and PayloadBase64 is set; NewBatchRecord picks the
// right one.
type BatchRecord struct {
	Key       string `json:"key,omitempty"`
	Partition *int   `json:"partition,omitempty"`
	// Payload is a JSON value stored as the record.
	Payload json.RawMessage `json:"payload,omitempty"`
	// PayloadBase64 is the record's bytes; encoding/json writes them as
	// base64.
	PayloadBase64 []byte `json:"payload_base64,omitempty"`
}

// NewBatchRecord wraps body for a batch produce so that the stored record is
// byte-for-byte body: a compact JSON object or array travels as "payload",
// anything else (text, JSON with spacing, scalars) as "payload_base64".
func NewBatchRecord(body []byte, options ProduceOptions) BatchRecord {
	record := BatchRecord{Key: options.Key, Partition: options.Partition}
	if isCompactContainer(body) {
		record.Payload = json.RawMessage(body)
	} else {
		record.PayloadBase64 = body
	}
	return record
}

func isCompactContainer(body []byte) bool {
	if len(body) == 0 || (body[0] != '{' && body[0] != '[') || !json.Valid(body) {
		return false
	}
	var compacted bytes.Buffer
	return json.Compact(&compacted, body) == nil && bytes.Equal(compacted.Bytes(), body)
}

// ProduceBatch sends records as one NDJSON batch (docs/api.md#batch-produce);
// the server answers 202 only when every record is durable.
func (c *Client) ProduceBatch(ctx context.Context, topic string, records []BatchRecord) (BatchResult, error) {
	body, err := encodeBatch(records)
	if err != nil {
		return BatchResult{}, err
	}
	req := request{method: http.MethodPost, path: topicPath(topic, "/produce"), body: body,
		contentType: "application/x-ndjson"}
	_, reply, err := c.send(ctx, req, http.StatusAccepted)
	if err != nil {
		return BatchResult{}, err
	}
	var result BatchResult
	return result, decodeReply(reply, &result)
}

func encodeBatch(records []BatchRecord) ([]byte, error) {
	if len(records) == 0 {
		return nil, ErrBatchEmpty
	}
	if len(records) > batchRecordsMax {
		return nil, fmt.Errorf("%w: %d records (max %d)", ErrBatchTooLarge, len(records), batchRecordsMax)
	}
	var body bytes.Buffer
	encoder := json.NewEncoder(&body) // Encode ends each value with '\n'.
	encoder.SetEscapeHTML(false)
	payloadBytes := 0
	for index, record := range records {
		if (len(record.Payload) == 0) == (len(record.PayloadBase64) == 0) {
			return nil, fmt.Errorf("batch record %d: set exactly one of payload and payload_base64", index)
		}
		payloadBytes += len(record.Payload) + len(record.PayloadBase64)
		if err := encoder.Encode(record); err != nil {
			return nil, fmt.Errorf("batch record %d: %w", index, err)
		}
	}
	if payloadBytes > batchPayloadBytesMax {
		return nil, fmt.Errorf("%w: %d payload bytes (max %d)", ErrBatchTooLarge, payloadBytes, batchPayloadBytesMax)
	}
	if body.Len() > batchBodyBytesMax {
		return nil, fmt.Errorf("%w: %d bytes of body (max %d)", ErrBatchTooLarge, body.Len(), batchBodyBytesMax)
	}
	return body.Bytes(), nil
}

// ConsumeOptions are the query parameters of a queue-mode consume.
type ConsumeOptions struct {
	// Wait is the long-poll wait; the server clamps it to its maximum.
	Wait time.Duration
	// Partition pins the consume to one partition when non-nil.
	Partition *int
}

func (o ConsumeOptions) query() url.Values {
	query := url.Values{}
	query.Set("wait", o.Wait.String())
	if o.Partition != nil {
		query.Set("partition", strconv.Itoa(*o.Partition))
	}
	return query
}

// Consume reserves one message in queue mode (GET /v1/topics/{t}/consume).
// It returns nil, nil when nothing arrived within the wait (204).
func (c *Client) Consume(ctx context.Context, topic string, options ConsumeOptions) (*Message, error) {
	req := request{method: http.MethodGet, path: topicPath(topic, "/consume"), query: options.query(),
		extraWait: options.Wait}
	return c.receiveOne(ctx, req)
}

// ConsumeBatch reserves up to max messages (1..100) in queue mode
// (docs/api.md#batch-consume). An empty slice means nothing arrived within
// the wait.
func (c *Client) ConsumeBatch(ctx context.Context, topic string, max int, options ConsumeOptions) ([]Message, error) {
	if max < 1 || max > consumeBatchMax {
		return nil, fmt.Errorf("%w: %d (want 1..%d)", ErrConsumeMax, max, consumeBatchMax)
	}
	query := options.query()
	query.Set("max", strconv.Itoa(max))
	req := request{method: http.MethodGet, path: topicPath(topic, "/consume"), query: query,
		extraWait: options.Wait}
	_, reply, err := c.send(ctx, req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var batch struct {
		Messages []Message `json:"messages"`
	}
	return batch.Messages, decodeReply(reply, &batch)
}

// Replay reads the record at partition/offset without reserving it. It
// returns nil, nil past the high watermark (204) and an *Error with status
// 410 when the offset aged out of retention or is unreadable.
func (c *Client) Replay(ctx context.Context, topic string, partition int, offset int64) (*Message, error) {
	query := url.Values{}
	query.Set("partition", strconv.Itoa(partition))
	query.Set("offset", strconv.FormatInt(offset, 10))
	req := request{method: http.MethodGet, path: topicPath(topic, "/consume"), query: query}
	return c.receiveOne(ctx, req)
}

func (c *Client) receiveOne(ctx context.Context, req request) (*Message, error) {
	status, reply, err := c.send(ctx, req, http.StatusOK, http.StatusNoContent)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	var message Message
	if err := decodeReply(reply, &message); err != nil {
		return nil, err
	}
	return &message, nil
}

// Ack commits a message (POST /v1/topics/{t}/ack, 204), in one attempt.
// A 410 means the lease lapsed and the message may be delivered again; a
// 204 also answers an ack of a message already acknowledged. AckRetrying
// retries lost and retryable answers.
func (c *Client) Ack(ctx context.Context, topic, receiptHandle string) error {
	return c.ackQuery(ctx, topic, receiptHandle, "")
}

// Extend renews a message's lease for the topic's full visibility timeout.
func (c *Client) Extend(ctx context.Context, topic, receiptHandle string) error {
	return c.ackQuery(ctx, topic, receiptHandle, string(AckModeExtend))
}

// Nack releases a message for redelivery at once.
func (c *Client) Nack(ctx context.Context, topic, receiptHandle string) error {
	return c.ackQuery(ctx, topic, receiptHandle, string(AckModeRelease))
}

func (c *Client) ackQuery(ctx context.Context, topic, receiptHandle, extend string) error {
	query := url.Values{}
	query.Set("receipt_handle", receiptHandle)
	if extend != "" {
		query.Set("extend", extend)
	}
	req := request{method: http.MethodPost, path: topicPath(topic, "/ack"), query: query}
	_, _, err := c.send(ctx, req, http.StatusNoContent)
	return err
}

// AckMode is what a batch ack does to each handle: the "extend" value of
// docs/api.md#batch-ack.
type AckMode string

// The three ack modes.
const (
	AckModeCommit  AckMode = ""     // ack: commit the message
	AckModeExtend  AckMode = "true" // renew the lease
	AckModeRelease AckMode = "0"    // nack: release for redelivery
)

// AckBatch applies mode to every handle in one request (docs/api.md#batch-ack)
// and returns the per-handle results in the server's order.
func (c *Client) AckBatch(ctx context.Context, topic string, receiptHandles []string, mode AckMode) ([]AckResult, error) {
	if len(receiptHandles) == 0 || len(receiptHandles) > ackBatchHandlesMax {
		return nil, fmt.Errorf("%w: %d receipt handles (want 1..%d)", ErrBatchTooLarge, len(receiptHandles), ackBatchHandlesMax)
	}
	body := struct {
		ReceiptHandles []string `json:"receipt_handles"`
		Extend         string   `json:"extend,omitempty"`
	}{receiptHandles, string(mode)}
	var reply struct {
		Results []AckResult `json:"results"`
	}
	err := c.sendJSON(ctx, http.MethodPost, topicPath(topic, "/ack"), body, &reply, http.StatusOK)
	return reply.Results, err
}
